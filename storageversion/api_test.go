package storageversion

import (
	"context"
	"github.com/concordproject/concord/wire"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"core.configmaps", nil},
		{"stable.example.com.crontabs", nil},
		{"widgets", []string{"name must be in the form of <group>.<resource>"}},
		{"Apps.deployments", []string{"the group segment a lowercase RFC 1123 subdomain"}},
		{"apps.1deployments", []string{"the resource segment a DNS-1035 label"}},
	} {
		got := validateName(tc.name, false)
		if len(got) != len(tc.want) {
			t.Errorf("%q: %q, want %d messages like %q", tc.name, got, len(tc.want), tc.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) {
				t.Errorf("%q: message %q, want it to start with %q", tc.name, got[i], tc.want[i])
			}
		}
	}
}

func entry(id, enc string, dec, served []string) apiserverinternalv1alpha1.ServerStorageVersion {
	return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: enc, DecodableVersions: dec, ServedVersions: served}
}

// The messages are Kubernetes' own, as clients see them in 422 answers.
func TestValidateStatus(t *testing.T) {
	v1 := []string{"example.com/v1"}
	cond := func(typ, status, reason, msg string) apiserverinternalv1alpha1.StorageVersionCondition {
		return apiserverinternalv1alpha1.StorageVersionCondition{Type: apiserverinternalv1alpha1.StorageVersionConditionType(typ),
			Status: apiserverinternalv1alpha1.ConditionStatus(status), Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name   string
		status apiserverinternalv1alpha1.StorageVersionStatus
		want   []string
	}{
		{"valid", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "example.com/v1", v1, v1)},
			CommonEncodingVersion: ptr.To("example.com/v1"),
			Conditions:            []apiserverinternalv1alpha1.StorageVersionCondition{cond("AllEncodingVersionsEqual", "True", "CommonEncodingVersionSet", "Common encoding version set")},
		}, nil},
		{"encoding not decodable", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "example.com/v1", []string{"example.com/v2"}, nil)},
			CommonEncodingVersion: ptr.To("example.com/v1"),
		}, []string{`status.storageVersions[0].decodableVersions: Invalid value: ["example.com/v2"]: decodableVersions must include encodingVersion example.com/v1`}},
		{"served not decodable", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "example.com/v1", v1, []string{"example.com/v2"})},
			CommonEncodingVersion: ptr.To("example.com/v1"),
		}, []string{`status.storageVersions[0].servedVersions[0]: Invalid value: "example.com/v2": individual served version : example.com/v2 must be included in decodableVersions : [example.com/v1]`}},
		{"duplicate server", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "example.com/v1", v1, v1), entry("a", "example.com/v1", v1, v1)},
			CommonEncodingVersion: ptr.To("example.com/v1"),
		}, []string{`status.storageVersions[1].apiServerID: Duplicate value: "a"`}},
		{"wrong common version", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "example.com/v1", v1, v1)},
			CommonEncodingVersion: ptr.To("example.com/v2"),
		}, []string{`status.commonEncodingVersion: Invalid value: "example.com/v2": the actual common encoding version is example.com/v1`}},
		{"missing common version", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "example.com/v1", v1, v1)},
		}, []string{`status.commonEncodingVersion: Invalid value: null: the common encoding version is example.com/v1`}},
		{"common version without agreement", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{
				entry("a", "example.com/v1", v1, v1), entry("b", "example.com/v2", []string{"example.com/v2"}, nil)},
			CommonEncodingVersion: ptr.To("example.com/v1"),
		}, []string{`status.commonEncodingVersion: Invalid value: "example.com/v1": should be nil if servers do not agree on the same encoding version, or if there is no server reporting the supported versions yet`}},
		{"conditions", apiserverinternalv1alpha1.StorageVersionStatus{Conditions: []apiserverinternalv1alpha1.StorageVersionCondition{
			cond("Foo", "True", "", "m"), cond("Foo", "True", "r", ""),
		}}, []string{
			"status.conditions[0].reason: Required value: reason cannot be empty",
			"status.conditions[1].type: Invalid value: \"Foo\": the type of the condition is not unique, it also appears in conditions[0]",
			"status.conditions[1].message: Required value: message cannot be empty",
		}},
		{"bad versions", apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "a/b/c", []string{"a/b/c", "/v1"}, nil)},
			CommonEncodingVersion: ptr.To("a/b/c"),
		}, []string{
			`status.storageVersions[0].encodingVersion: Invalid value: "a/b/c": an apiVersion is a DNS-1035 label`,
			`status.storageVersions[0].decodableVersions[0]: Invalid value: "a/b/c": an apiVersion is a DNS-1035 label`,
			`status.storageVersions[0].decodableVersions[1]: Invalid value: "/v1": group part: must be non-empty`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateStatus(&tc.status, field.NewPath("status"))
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d: %q", len(errs), errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}

func TestValidateUpdateNeedsResourceVersion(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "internal.apiserver.k8s.io/v1alpha1", "kind": "StorageVersion"}}
	obj.SetName("core.configmaps")
	errs := validateUpdate(context.Background(), obj, obj)
	if len(errs) != 1 || errs[0].Error() != "metadata.resourceVersion: Invalid value: 0: must be specified for an update" {
		t.Fatalf("errors %v, want the missing resourceVersion", errs)
	}
	obj.SetResourceVersion("7")
	if errs := validateUpdate(context.Background(), obj, obj); len(errs) != 0 {
		t.Fatalf("errors %v with a resourceVersion", errs)
	}
}

func TestWritable(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		user auth.User
		ok   bool
	}{
		{auth.User{Name: auth.LoopbackUser, Groups: []string{auth.GroupMasters}}, true},
		{auth.User{Name: auth.AdminUser, Groups: []string{auth.GroupMasters}}, false},
		{auth.User{Name: "alice", Groups: []string{auth.GroupAuthenticated}}, false},
	} {
		err := writer{}.writable(auth.WithUser(ctx, tc.user))
		if (err == nil) != tc.ok {
			t.Errorf("user %s: writable error %v, want allowed=%v", tc.user.Name, err, tc.ok)
		}
	}
	if (writer{}).writable(ctx) == nil {
		t.Error("a request without a user may write")
	}
}

// The condition's lastTransitionTime moves when its status flips or the common version
// changes value, and only then.
func TestSetEntries(t *testing.T) {
	v1, v2 := []string{"g/v1"}, []string{"g/v2", "g/v1"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sv := &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	sv.Status.Conditions = []apiserverinternalv1alpha1.StorageVersionCondition{{Type: "Other", Status: "True", Reason: "R", Message: "M"}}
	check := func(step string, common *string, status apiserverinternalv1alpha1.ConditionStatus, reason, msg string, transition time.Time) {
		t.Helper()
		if (common == nil) != (sv.Status.CommonEncodingVersion == nil) || (common != nil && *common != *sv.Status.CommonEncodingVersion) {
			t.Fatalf("%s: commonEncodingVersion %v, want %v", step, sv.Status.CommonEncodingVersion, common)
		}
		if len(sv.Status.Conditions) != 2 || sv.Status.Conditions[0].Type != "Other" {
			t.Fatalf("%s: conditions %+v: want Other kept first", step, sv.Status.Conditions)
		}
		c := sv.Status.Conditions[1]
		if c.Type != apiserverinternalv1alpha1.AllEncodingVersionsEqual || c.Status != status || c.Reason != reason || c.Message != msg || c.ObservedGeneration != 3 || !c.LastTransitionTime.Time.Equal(transition) {
			t.Fatalf("%s: condition %+v, want %s %s %q at %s", step, c, status, reason, msg, transition)
		}
	}
	wire.SetStorageVersionEntries(sv, []Entry{entry("a", "g/v1", v1, v1)}, t0)
	check("one server", ptr.To("g/v1"), "True", wire.ReasonCommonEncodingVersionSet, wire.MessageCommonEncodingVersionSet, t0)
	wire.SetStorageVersionEntries(sv, []Entry{entry("a", "g/v1", v1, v1), entry("b", "g/v1", v2, v2)}, t0.Add(time.Minute))
	check("agreeing servers", ptr.To("g/v1"), "True", wire.ReasonCommonEncodingVersionSet, wire.MessageCommonEncodingVersionSet, t0)
	wire.SetStorageVersionEntries(sv, []Entry{entry("a", "g/v1", v1, v1), entry("b", "g/v2", v2, v2)}, t0.Add(2*time.Minute))
	check("disagreeing servers", nil, "False", wire.ReasonCommonEncodingVersionUnset, wire.MessageCommonEncodingVersionUnset, t0.Add(2*time.Minute))
	wire.SetStorageVersionEntries(sv, []Entry{entry("b", "g/v2", v2, v2)}, t0.Add(3*time.Minute))
	check("agreement again", ptr.To("g/v2"), "True", wire.ReasonCommonEncodingVersionSet, wire.MessageCommonEncodingVersionSet, t0.Add(3*time.Minute))
	wire.SetStorageVersionEntries(sv, []Entry{entry("b", "g/v1", v2, v2)}, t0.Add(4*time.Minute))
	check("common version changed", ptr.To("g/v1"), "True", wire.ReasonCommonEncodingVersionSet, wire.MessageCommonEncodingVersionSet, t0.Add(4*time.Minute))
	wire.SetStorageVersionEntries(sv, nil, t0.Add(5*time.Minute))
	check("no server", nil, "False", wire.ReasonCommonEncodingVersionUnset, wire.MessageCommonEncodingVersionUnset, t0.Add(5*time.Minute))

	// What SetEntries writes passes validation.
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sv)
	if err != nil {
		t.Fatal(err)
	}
	if errs := validateStatus(&unstructured.Unstructured{Object: u}); len(errs) != 0 {
		t.Fatalf("SetEntries wrote an invalid status: %v", errs)
	}
}
