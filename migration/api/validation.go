package api

import (
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The validation of the built-in storagemigration.k8s.io StorageVersionMigration, the
// rules of Kubernetes' pkg/apis/storagemigration/validation (1.35 and later) with
// their field paths and messages, over the unstructured objects of the registry.
//
// Which rules run where: the registry already does what Kubernetes' strategies do to
// status and spec (a create drops the status; an update of the main resource keeps
// the stored status, an update of /status keeps everything but the status). So an
// update whose spec differs from the stored one is a change of the spec, and one
// whose status differs is a change of the status. The spec rules run on every
// create and on updates that change the spec; the status rules on updates that
// change the status. An update that leaves a part as stored is not checked again
// on that part, so objects stored before a rule existed stay updatable.
//
// One deviation: Kubernetes refuses a status update whose status.resourceVersion is
// not a well-formed resource version, the empty string included. An empty
// status.resourceVersion means "not set yet" (the field is optional, set when a
// migrator first observes the migration), and migrators write conditions before
// they know it (Concord's writes Running before its first page; Kubernetes' own
// marks a migration Failed without it when the resource is not served), so here only
// a non-empty one must be well formed.

// maxConditionMessage is the longest message metav1.Condition validation accepts.
const maxConditionMessage = 32 * 1024

// ValidateMigration checks a new StorageVersionMigration beyond its schema:
// spec.resource.resource is required and a DNS-1035 label, spec.resource.group a
// DNS-1123 subdomain when set.
func ValidateMigration(obj map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "resource")
	if r := nestedString(obj, "spec", "resource", "resource"); r == "" {
		errs = append(errs, field.Required(p.Child("resource"), "resource is required to be set"))
	} else if msgs := utilvalidation.IsDNS1035Label(r); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("resource"), r, strings.Join(msgs, ",")))
	}
	if g := nestedString(obj, "spec", "resource", "group"); g != "" {
		if msgs := utilvalidation.IsDNS1123Subdomain(g); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("group"), g, strings.Join(msgs, ",")))
		}
	}
	return errs
}

// ValidateMigrationUpdate checks an update of old to obj beyond their schema: a
// changed spec is refused (spec is immutable) and checked as on create; a changed
// status must obey validateMigrationStatus.
func ValidateMigrationUpdate(obj, old map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	if spec, oldSpec := obj["spec"], old["spec"]; !equality.Semantic.DeepEqual(spec, oldSpec) {
		errs = append(errs, ValidateMigration(obj)...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec, oldSpec, field.NewPath("spec"))...)
	}
	if !equality.Semantic.DeepEqual(obj["status"], old["status"]) {
		errs = append(errs, validateMigrationStatus(obj, old)...)
	}
	return errs
}

// validateMigrationStatus checks the status of obj, replacing that of old:
//   - status.resourceVersion, when set, is a well-formed resource version (a positive
//     integer without leading zeros) and, once set, never changes;
//   - every condition is a valid metav1.Condition (type, status, reason,
//     lastTransitionTime, message length, observedGeneration); unique types are the
//     schema's (x-kubernetes-list-type map), and so are fields of the wrong type;
//   - Succeeded and Failed are not both True, and Running is not True with either;
//   - a Succeeded or Failed condition that was True stays True.
func validateMigrationStatus(obj, old map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("status")
	rv, oldRV := nestedString(obj, "status", "resourceVersion"), nestedString(old, "status", "resourceVersion")
	if rv != "" {
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			errs = append(errs, field.Invalid(p.Child("resourceVersion"), rv, err.Error()))
		}
	}
	conds, _ := nestedSlice(obj, "status", "conditions")
	for i, item := range conds {
		m, ok := item.(map[string]interface{})
		if !ok {
			continue // the schema says what is wrong with it
		}
		var c metav1.Condition
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			continue // a field of the wrong type or format: the schema's error
		}
		errs = append(errs, metav1validation.ValidateCondition(c, p.Child("conditions").Index(i))...)
	}
	if oldRV != "" && rv != oldRV {
		errs = append(errs, field.Invalid(p.Child("resourceVersion"), rv, apimachineryvalidation.FieldImmutableErrorMsg))
	}
	succeeded, failed, running := conditionIsTrue(obj, ConditionSucceeded), conditionIsTrue(obj, ConditionFailed), conditionIsTrue(obj, ConditionRunning)
	bad := func(msg string) {
		errs = append(errs, field.Invalid(p.Child("conditions"), conds, msg))
	}
	if succeeded && failed {
		bad("Both success and failed conditions cannot be true at the same time")
	}
	if succeeded && running {
		bad("Running condition cannot be true when success condition is true")
	}
	if failed && running {
		bad("Running condition cannot be true when failed condition is true")
	}
	if conditionIsTrue(old, ConditionSucceeded) && !succeeded {
		bad("Success condition cannot be set to false once it is true")
	}
	if conditionIsTrue(old, ConditionFailed) && !failed {
		bad("Failed condition cannot be set to false once it is true")
	}
	return errs
}

// WellFormedResourceVersion reports whether rv is a resource version Kubernetes can
// compare: a positive integer without leading zeros.
func WellFormedResourceVersion(rv string) bool {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err == nil
}

// conditionIsTrue reports whether the first status.conditions entry of type t has
// status True, as meta.FindStatusCondition would find it.
func conditionIsTrue(obj map[string]interface{}, t string) bool {
	conds, _ := nestedSlice(obj, "status", "conditions")
	for _, item := range conds {
		m, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		if typ, _ := m["type"].(string); typ == t {
			s, _ := m["status"].(string)
			return s == string(metav1.ConditionTrue)
		}
	}
	return false
}

// nestedString returns the string at fields, "" if it is missing or not a string
// (the schema reports the latter).
func nestedString(obj map[string]interface{}, fields ...string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	s, _ := v.(string)
	return s
}

// nestedSlice returns the list at fields, nil if it is missing or not a list.
func nestedSlice(obj map[string]interface{}, fields ...string) ([]interface{}, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	s, isSlice := v.([]interface{})
	return s, ok && isSlice
}

// ConditionMessage bounds a condition message to what Kubernetes accepts, cutting it
// at a character boundary and marking the cut.
func ConditionMessage(msg string) string {
	if len(msg) <= maxConditionMessage {
		return msg
	}
	const mark = " [truncated]"
	cut := maxConditionMessage - len(mark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + mark
}
