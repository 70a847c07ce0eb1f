package storageversion

import (
	"context"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/apiserverinternal"
	apiserverinternalvalidation "k8s.io/kubernetes/pkg/apis/apiserverinternal/validation"
	"k8s.io/utils/ptr"

	_ "k8s.io/kubernetes/pkg/apis/apiserverinternal/install" // conversions to the internal version
)

func entry(id, enc string, dec, served []string) apiserverinternalv1alpha1.ServerStorageVersion {
	return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: enc, DecodableVersions: dec, ServedVersions: served}
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

	// What SetEntries writes passes Kubernetes' validation.
	internal := &apiserverinternal.StorageVersion{}
	if err := legacyscheme.Scheme.Convert(sv, internal, nil); err != nil {
		t.Fatal(err)
	}
	internal.Name = "g.widgets"
	if errs := apiserverinternalvalidation.ValidateStorageVersion(internal); len(errs) != 0 {
		t.Fatalf("SetEntries wrote an invalid status: %v", errs)
	}
}
