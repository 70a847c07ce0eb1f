package api

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// svmObject is a StorageVersionMigration of group/resource with the given status
// (nil: none), as the registry hands it to hooks.
func svmObject(group, resource string, status map[string]interface{}) map[string]interface{} {
	obj := map[string]interface{}{
		"apiVersion": "storagemigration.k8s.io/v1",
		"kind":       "StorageVersionMigration",
		"metadata":   map[string]interface{}{"name": "m"},
		"spec": map[string]interface{}{
			"resource": map[string]interface{}{"group": group, "resource": resource},
		},
	}
	if status != nil {
		obj["status"] = status
	}
	return obj
}

// status builds a status with resourceVersion rv ("" for none) and conditions.
func status(rv string, conds ...map[string]interface{}) map[string]interface{} {
	st := map[string]interface{}{}
	if rv != "" {
		st["resourceVersion"] = rv
	}
	if len(conds) > 0 {
		list := make([]interface{}, len(conds))
		for i, c := range conds {
			list[i] = c
		}
		st["conditions"] = list
	}
	return st
}

// cond is a valid condition of type t with status s.
func cond(t, s string) map[string]interface{} {
	return map[string]interface{}{
		"type": t, "status": s, "reason": "Because", "message": "",
		"lastTransitionTime": "2026-01-02T03:04:05Z",
	}
}

// wantErr is one expected field error: its path, type and a part of its detail.
type wantErr struct {
	field  string
	typ    field.ErrorType
	detail string
}

func checkErrors(t *testing.T, got field.ErrorList, want []wantErr) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Field != w.field || g.Type != w.typ || !strings.Contains(g.Detail, w.detail) {
			t.Errorf("error %d is %q (%s), want %s %s containing %q", i, g.Error(), g.Type, w.field, w.typ, w.detail)
		}
	}
}

func TestValidateMigration(t *testing.T) {
	tests := []struct {
		name            string
		group, resource string
		obj             map[string]interface{} // overrides group and resource
		want            []wantErr
	}{
		{name: "core resource", resource: "pods"},
		{name: "group resource", group: "apps.example.com", resource: "widgets"},
		{name: "no resource", group: "apps", want: []wantErr{{"spec.resource.resource", field.ErrorTypeRequired, "resource is required to be set"}}},
		{name: "no spec", obj: map[string]interface{}{"metadata": map[string]interface{}{"name": "m"}},
			want: []wantErr{{"spec.resource.resource", field.ErrorTypeRequired, "resource is required to be set"}}},
		{name: "resource not a DNS-1035 label", resource: "Widgets.v1",
			want: []wantErr{{"spec.resource.resource", field.ErrorTypeInvalid, "a DNS-1035 label"}}},
		{name: "resource starting with a digit", resource: "1widgets",
			want: []wantErr{{"spec.resource.resource", field.ErrorTypeInvalid, "a DNS-1035 label"}}},
		{name: "group not a DNS-1123 subdomain", group: "Example_com", resource: "widgets",
			want: []wantErr{{"spec.resource.group", field.ErrorTypeInvalid, "a lowercase RFC 1123 subdomain"}}},
		{name: "both wrong", group: "-x", want: []wantErr{
			{"spec.resource.resource", field.ErrorTypeRequired, "resource is required to be set"},
			{"spec.resource.group", field.ErrorTypeInvalid, "RFC 1123"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj
			if obj == nil {
				obj = svmObject(tc.group, tc.resource, nil)
			}
			checkErrors(t, ValidateMigration(obj), tc.want)
		})
	}
}

func TestValidateMigrationUpdate(t *testing.T) {
	const (
		running   = ConditionRunning
		succeeded = ConditionSucceeded
		failed    = ConditionFailed
		yes, no   = "True", "False"
	)
	immutable := wantErr{"status.resourceVersion", field.ErrorTypeInvalid, "field is immutable"}
	conditions := func(detail string) wantErr { return wantErr{"status.conditions", field.ErrorTypeInvalid, detail} }
	tests := []struct {
		name     string
		old, obj map[string]interface{}
		want     []wantErr
	}{
		// spec
		{name: "labels only", old: svmObject("", "pods", nil), obj: func() map[string]interface{} {
			o := svmObject("", "pods", nil)
			o["metadata"] = map[string]interface{}{"name": "m", "labels": map[string]interface{}{"a": "b"}}
			return o
		}()},
		{name: "resource changed", old: svmObject("", "pods", nil), obj: svmObject("", "secrets", nil),
			want: []wantErr{{"spec", field.ErrorTypeInvalid, "field is immutable"}}},
		{name: "group changed", old: svmObject("", "pods", nil), obj: svmObject("apps", "pods", nil),
			want: []wantErr{{"spec", field.ErrorTypeInvalid, "field is immutable"}}},
		{name: "resource emptied", old: svmObject("", "pods", nil), obj: svmObject("", "", nil), want: []wantErr{
			{"spec.resource.resource", field.ErrorTypeRequired, "resource is required to be set"},
			{"spec", field.ErrorTypeInvalid, "field is immutable"},
		}},
		{name: "spec removed", old: svmObject("", "pods", nil), obj: func() map[string]interface{} {
			o := svmObject("", "pods", nil)
			delete(o, "spec")
			return o
		}(), want: []wantErr{
			{"spec.resource.resource", field.ErrorTypeRequired, "resource is required to be set"},
			{"spec", field.ErrorTypeInvalid, "field is immutable"},
		}},
		{name: "an invalid stored spec is not checked again while it stays", old: svmObject("", "", status("")),
			obj: svmObject("", "", status("", cond(running, yes)))},

		// status.resourceVersion
		{name: "resourceVersion set", old: svmObject("", "pods", status("", cond(running, yes))),
			obj: svmObject("", "pods", status("42", cond(running, yes)))},
		{name: "resourceVersion kept", old: svmObject("", "pods", status("42", cond(running, yes))),
			obj: svmObject("", "pods", status("42", cond(running, no), cond(succeeded, yes)))},
		{name: "resourceVersion changed", old: svmObject("", "pods", status("42")), obj: svmObject("", "pods", status("43")),
			want: []wantErr{immutable}},
		{name: "resourceVersion removed", old: svmObject("", "pods", status("42")), obj: svmObject("", "pods", status("", cond(running, yes))),
			want: []wantErr{immutable}},
		{name: "resourceVersion not a number", old: svmObject("", "pods", nil), obj: svmObject("", "pods", status("abc")),
			want: []wantErr{{"status.resourceVersion", field.ErrorTypeInvalid, "resource version is not well formed: abc"}}},
		{name: "resourceVersion zero", old: svmObject("", "pods", nil), obj: svmObject("", "pods", status("0")),
			want: []wantErr{{"status.resourceVersion", field.ErrorTypeInvalid, "not well formed"}}},
		{name: "resourceVersion with a leading zero", old: svmObject("", "pods", nil), obj: svmObject("", "pods", status("042")),
			want: []wantErr{{"status.resourceVersion", field.ErrorTypeInvalid, "not well formed"}}},
		{name: "resourceVersion changed to garbage", old: svmObject("", "pods", status("42")), obj: svmObject("", "pods", status("-1")),
			want: []wantErr{{"status.resourceVersion", field.ErrorTypeInvalid, "not well formed"}, immutable}},

		// conditions, one at a time
		{name: "condition without reason", old: svmObject("", "pods", nil), obj: func() map[string]interface{} {
			c := cond(running, yes)
			delete(c, "reason")
			return svmObject("", "pods", status("", c))
		}(), want: []wantErr{{"status.conditions[0].reason", field.ErrorTypeRequired, ""}}},
		{name: "condition without lastTransitionTime", old: svmObject("", "pods", nil), obj: func() map[string]interface{} {
			c := cond(running, yes)
			delete(c, "lastTransitionTime")
			return svmObject("", "pods", status("", c))
		}(), want: []wantErr{{"status.conditions[0].lastTransitionTime", field.ErrorTypeRequired, ""}}},
		{name: "condition with an unknown status", old: svmObject("", "pods", nil), obj: svmObject("", "pods", status("", cond(running, "Maybe"))),
			want: []wantErr{{"status.conditions[0].status", field.ErrorTypeNotSupported, ""}}},
		{name: "condition with a bad reason", old: svmObject("", "pods", nil), obj: func() map[string]interface{} {
			c := cond(running, yes)
			c["reason"] = "not a reason"
			return svmObject("", "pods", status("", cond(succeeded, no), c))
		}(), want: []wantErr{{"status.conditions[1].reason", field.ErrorTypeInvalid, "a condition reason must start with alphabetic character"}}},
		{name: "condition message too long", old: svmObject("", "pods", nil), obj: func() map[string]interface{} {
			c := cond(failed, yes)
			c["message"] = strings.Repeat("x", maxConditionMessage+1)
			return svmObject("", "pods", status("", c))
		}(), want: []wantErr{{"status.conditions[0].message", field.ErrorTypeTooLong, ""}}},

		// conditions together
		{name: "running", old: svmObject("", "pods", nil), obj: svmObject("", "pods", status("", cond(running, yes)))},
		{name: "running to succeeded", old: svmObject("", "pods", status("7", cond(running, yes))),
			obj: svmObject("", "pods", status("7", cond(running, no), cond(succeeded, yes)))},
		{name: "running to failed without a resourceVersion", old: svmObject("", "pods", status("", cond(running, yes))),
			obj: svmObject("", "pods", status("", cond(running, no), cond(failed, yes)))},
		{name: "pending to failed", old: svmObject("", "pods", nil), obj: svmObject("", "pods", status("", cond(failed, yes)))},
		{name: "succeeded while running", old: svmObject("", "pods", status("7", cond(running, yes))),
			obj:  svmObject("", "pods", status("7", cond(running, yes), cond(succeeded, yes))),
			want: []wantErr{conditions("Running condition cannot be true when success condition is true")}},
		{name: "failed while running", old: svmObject("", "pods", status("7", cond(running, yes))),
			obj:  svmObject("", "pods", status("7", cond(running, yes), cond(failed, yes))),
			want: []wantErr{conditions("Running condition cannot be true when failed condition is true")}},
		{name: "succeeded and failed", old: svmObject("", "pods", nil),
			obj:  svmObject("", "pods", status("", cond(succeeded, yes), cond(failed, yes))),
			want: []wantErr{conditions("Both success and failed conditions cannot be true at the same time")}},
		{name: "all three", old: svmObject("", "pods", nil),
			obj: svmObject("", "pods", status("", cond(running, yes), cond(succeeded, yes), cond(failed, yes))),
			want: []wantErr{
				conditions("Both success and failed conditions cannot be true at the same time"),
				conditions("Running condition cannot be true when success condition is true"),
				conditions("Running condition cannot be true when failed condition is true"),
			}},
		{name: "succeeded set back to false", old: svmObject("", "pods", status("7", cond(succeeded, yes))),
			obj:  svmObject("", "pods", status("7", cond(succeeded, no))),
			want: []wantErr{conditions("Success condition cannot be set to false once it is true")}},
		{name: "succeeded removed", old: svmObject("", "pods", status("7", cond(running, no), cond(succeeded, yes))),
			obj:  svmObject("", "pods", status("7", cond(running, no))),
			want: []wantErr{conditions("Success condition cannot be set to false once it is true")}},
		{name: "succeeded to unknown and running again", old: svmObject("", "pods", status("7", cond(running, no), cond(succeeded, yes))),
			obj:  svmObject("", "pods", status("7", cond(running, yes), cond(succeeded, "Unknown"))),
			want: []wantErr{conditions("Success condition cannot be set to false once it is true")}},
		{name: "failed set back to false", old: svmObject("", "pods", status("", cond(failed, yes))),
			obj:  svmObject("", "pods", status("", cond(failed, no))),
			want: []wantErr{conditions("Failed condition cannot be set to false once it is true")}},
		{name: "failed turned into succeeded", old: svmObject("", "pods", status("", cond(failed, yes))),
			obj:  svmObject("", "pods", status("", cond(succeeded, yes))),
			want: []wantErr{conditions("Failed condition cannot be set to false once it is true")}},
		{name: "status dropped after success", old: svmObject("", "pods", status("7", cond(succeeded, yes))),
			obj:  svmObject("", "pods", nil),
			want: []wantErr{immutable, conditions("Success condition cannot be set to false once it is true")}},
		{name: "the first condition of a type counts", old: svmObject("", "pods", nil),
			obj: svmObject("", "pods", status("", cond(running, no), cond(succeeded, yes), cond(running, yes)))},
		{name: "a succeeded migration's other fields may change", old: svmObject("", "pods", status("7", cond(running, no), cond(succeeded, yes))),
			obj: func() map[string]interface{} {
				st := status("7", cond(running, no), cond(succeeded, yes))
				st["progress"] = map[string]interface{}{"migrated": int64(3)}
				return svmObject("", "pods", st)
			}()},
		{name: "an invalid stored status is not checked again while it stays",
			old: svmObject("", "pods", status("x", cond(running, yes), cond(succeeded, yes))),
			obj: func() map[string]interface{} {
				o := svmObject("", "pods", status("x", cond(running, yes), cond(succeeded, yes)))
				o["metadata"] = map[string]interface{}{"name": "m", "finalizers": []interface{}{}}
				return o
			}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateMigrationUpdate(tc.obj, tc.old), tc.want)
		})
	}
}

func TestConditionMessage(t *testing.T) {
	for _, n := range []int{0, 10, maxConditionMessage, maxConditionMessage + 1, 3 * maxConditionMessage} {
		for _, unit := range []string{"x", "é", "日本"} {
			t.Run(fmt.Sprintf("%d×%q", n, unit), func(t *testing.T) {
				msg := strings.Repeat(unit, n/len(unit))
				got := ConditionMessage(msg)
				if len(got) > maxConditionMessage || !utf8.ValidString(got) {
					t.Fatalf("length %d, valid UTF-8 %v", len(got), utf8.ValidString(got))
				}
				if len(msg) <= maxConditionMessage && got != msg {
					t.Fatal("a message short enough was changed")
				}
				if len(msg) > maxConditionMessage && !strings.HasSuffix(got, " [truncated]") {
					t.Fatal("a cut message is not marked")
				}
			})
		}
	}
}
