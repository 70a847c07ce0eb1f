package wire

import (
	"slices"
	"time"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The condition every writer of a StorageVersion's status maintains (KEP-2339), with
// Kubernetes' reasons and messages: Concord's servers and the aggregated servers that
// publish through its API compute it alike.
const (
	ReasonCommonEncodingVersionSet    = "CommonEncodingVersionSet"
	ReasonCommonEncodingVersionUnset  = "CommonEncodingVersionUnset"
	MessageCommonEncodingVersionSet   = "Common encoding version set"
	MessageCommonEncodingVersionUnset = "Common encoding version unset"
)

// CommonEncodingVersion returns the encoding version every entry reports, or nil when
// there is no entry or they differ.
func CommonEncodingVersion(entries []apiserverinternalv1alpha1.ServerStorageVersion) *string {
	if len(entries) == 0 {
		return nil
	}
	v := entries[0].EncodingVersion
	for _, e := range entries[1:] {
		if e.EncodingVersion != v {
			return nil
		}
	}
	return &v
}

// SetStorageVersionEntries replaces the entries of sv's status with entries and recomputes what
// follows from them (KEP-2339): commonEncodingVersion and the AllEncodingVersionsEqual
// condition, whose observedGeneration is sv's generation and whose lastTransitionTime
// changes, to now, only when its status flips or the common version changes value.
// Other conditions are kept.
//
// The encryption keys reported (AnnotationEncryptionKeys) keep only the members
// of servers with an entry.
func SetStorageVersionEntries(sv *apiserverinternalv1alpha1.StorageVersion, entries []apiserverinternalv1alpha1.ServerStorageVersion, now time.Time) {
	old := sv.Status.CommonEncodingVersion
	sv.Status.StorageVersions = entries
	if keys, err := ParseEncryptionKeys(sv.Annotations[AnnotationEncryptionKeys]); err == nil {
		for id := range keys {
			if !slices.ContainsFunc(entries, func(e apiserverinternalv1alpha1.ServerStorageVersion) bool { return e.APIServerID == id }) {
				delete(keys, id)
			}
		}
		SetEncryptionKeys(sv, keys)
	} else {
		SetEncryptionKeys(sv, nil) // unreadable: every server writes its member again
	}
	common := CommonEncodingVersion(entries)
	sv.Status.CommonEncodingVersion = common
	want := apiserverinternalv1alpha1.StorageVersionCondition{
		Type:               apiserverinternalv1alpha1.AllEncodingVersionsEqual,
		Status:             apiserverinternalv1alpha1.ConditionFalse,
		ObservedGeneration: sv.Generation,
		Reason:             ReasonCommonEncodingVersionUnset,
		Message:            MessageCommonEncodingVersionUnset,
	}
	if common != nil {
		want.Status, want.Reason, want.Message = apiserverinternalv1alpha1.ConditionTrue, ReasonCommonEncodingVersionSet, MessageCommonEncodingVersionSet
	}
	for i := range sv.Status.Conditions {
		c := &sv.Status.Conditions[i]
		if c.Type != want.Type {
			continue
		}
		moved := c.Status != want.Status || (old != nil && common != nil && *old != *common)
		want.LastTransitionTime = c.LastTransitionTime
		if moved || c.LastTransitionTime.IsZero() {
			want.LastTransitionTime = metav1.NewTime(now)
		}
		*c = want
		return
	}
	want.LastTransitionTime = metav1.NewTime(now)
	sv.Status.Conditions = append(sv.Status.Conditions, want)
}

// SetEncryptionKeys stores keys in sv's annotation (removed when empty).
func SetEncryptionKeys(sv *apiserverinternalv1alpha1.StorageVersion, keys map[string]EncryptionKeys) {
	v := FormatEncryptionKeys(keys)
	switch {
	case v != "":
		if sv.Annotations == nil {
			sv.Annotations = map[string]string{}
		}
		sv.Annotations[AnnotationEncryptionKeys] = v
	case sv.Annotations != nil:
		delete(sv.Annotations, AnnotationEncryptionKeys)
	}
}
