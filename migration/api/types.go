package api

import (
	"encoding/json"
	"fmt"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resources the controllers read and write.
var (
	// StorageStates is migration.k8s.io/v1alpha1 storagestates (a CRD, see crds).
	StorageStates = schema.GroupVersionResource{Group: "migration.k8s.io", Version: "v1alpha1", Resource: "storagestates"}
	// StorageVersionMigrations is storagemigration.k8s.io/v1 storageversionmigrations:
	// built into Concord and Kubernetes 1.37+, a CRD elsewhere (see crds).
	StorageVersionMigrations = storagemigrationv1.SchemeGroupVersion.WithResource("storageversionmigrations")
	// StorageVersions is internal.apiserver.k8s.io/v1alpha1 storageversions, which the
	// API servers maintain when the StorageVersionAPI feature is on.
	StorageVersions = schema.GroupVersionResource{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Resource: "storageversions"}
	// APIServices is apiregistration.k8s.io/v1 apiservices: a group an APIService
	// registers to a backend is an aggregated API, which the trigger migrates only if
	// its servers publish StorageVersions (KEP-2339).
	APIServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	// CustomResourceDefinitions is apiextensions.k8s.io/v1 customresourcedefinitions.
	CustomResourceDefinitions = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// FieldManager is the field manager of the migration controllers' writes, and the
// reporting controller of their Events.
const FieldManager = "concord-storage-migrator"

// Unknown is the storage version hash that stands for "any version may be present":
// a StorageState starts with it, and returns to it when its heartbeat goes stale.
// CurrentStorageVersionHash is Unknown while the API servers disagree.
const Unknown = "Unknown"

// The conditions of a StorageVersionMigration (k8s.io/api/storagemigration/v1) and the
// reasons Concord gives them.
const (
	ConditionRunning   = string(storagemigrationv1.MigrationRunning)
	ConditionSucceeded = string(storagemigrationv1.MigrationSucceeded)
	ConditionFailed    = string(storagemigrationv1.MigrationFailed)

	// ReasonMigrationRunning: the migrator is rewriting objects.
	ReasonMigrationRunning = "MigrationRunning"
	// ReasonMigrationCompleted: every object was rewritten or was already current.
	ReasonMigrationCompleted = "MigrationCompleted"
	// ReasonObjectsFailed: the migration went through every object, but some could not
	// be rewritten (status.progress.failures says which and why); they may still be
	// encoded in an older version.
	ReasonObjectsFailed = "ObjectsFailed"
	// ReasonMigrationError: the migration stopped, e.g. the resource cannot be listed.
	ReasonMigrationError = "MigrationError"
	// ReasonStorageVersionsDisagree: the trigger aborted the migration because the API
	// servers no longer agree on an encoding version (a rolling upgrade or rollback is
	// in progress).
	ReasonStorageVersionsDisagree = "StorageVersionsDisagree"
	// ReasonStorageVersionChanged: the trigger aborted the migration because the
	// resource's StorageVersion, or its storage version hash, changed after the
	// migration was started; a new migration replaces it.
	ReasonStorageVersionChanged = "StorageVersionChanged"
)

// The condition of a StorageState and its reasons.
const (
	// ConditionTracked is True while the trigger keeps the state: the resource is
	// served, persisted and migratable, and its storage versions are followed. False
	// says, by its reason, why the state is idle; the trigger tracks it as soon as the
	// reason passes.
	ConditionTracked = "Tracked"

	// ReasonResourceTracked: the trigger follows the resource's storage versions.
	ReasonResourceTracked = "ResourceTracked"
	// ReasonResourceNotServed: no API server serves the resource.
	ReasonResourceNotServed = "ResourceNotServed"
	// ReasonResourceNotMigratable: the resource is served but cannot be listed and
	// updated.
	ReasonResourceNotMigratable = "ResourceNotMigratable"
	// ReasonResourceNotPersisted: the resource has no storage version (it is not
	// stored, as reviews are).
	ReasonResourceNotPersisted = "ResourceNotPersisted"
	// ReasonAggregatedWithoutStorageVersions: the resource is an aggregated API whose
	// servers publish no StorageVersion: what they encode in cannot be known.
	ReasonAggregatedWithoutStorageVersions = "AggregatedWithoutStorageVersions"
	// ReasonResourceIgnored: the trigger is configured to leave the resource alone.
	ReasonResourceIgnored = "ResourceIgnored"
)

// Labels the trigger puts on the StorageStates it creates.
const (
	// LabelManagedBy, with the value FieldManager, marks a StorageState the trigger
	// created: the trigger deletes it once its resource is no longer served. A state
	// without it (created by someone else) is kept, idle, with a Tracked condition
	// that says why.
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// AnnotationProgress holds a migration's progress (Progress as JSON: counts, total,
// path, the first failures and the checkpoint) where the API keeps no status.progress:
// Kubernetes' built-in StorageVersionMigration keeps only status.conditions and
// status.resourceVersion, and drops (with an "unknown field" warning) anything else
// written there. Annotations it keeps. The migration controller writes it; the trigger
// and `concord migrations` read it (ProgressOf).
const AnnotationProgress = "migration.concord.io/progress"

// ProgressOf returns a migration's progress: status (its status.progress, nil where the
// API drops it), else the AnnotationProgress annotation of annotations; nil if neither
// has one (or the annotation does not decode).
func ProgressOf(status *Progress, annotations map[string]string) *Progress {
	if status != nil {
		return status
	}
	raw, ok := annotations[AnnotationProgress]
	if !ok {
		return nil
	}
	p := &Progress{}
	if json.Unmarshal([]byte(raw), p) != nil {
		return nil
	}
	return p
}

// Annotations the trigger puts on the migrations it creates or adopts.
const (
	// AnnotationStorageVersionHash is the storage version hash the migration was
	// started for.
	AnnotationStorageVersionHash = "migration.concord.io/storage-version-hash"
	// AnnotationStorageVersionResourceVersion is the resourceVersion of the resource's
	// StorageVersion object when the trigger started the migration (absent when the
	// trigger polls discovery): the migration's guard. The controller moves it forward
	// when every revision of the object since had the servers agree on the migration's
	// version (package guard); a migration that ends while the object is at another
	// resourceVersion does not count as complete.
	AnnotationStorageVersionResourceVersion = "migration.concord.io/storage-version-resource-version"
	// AnnotationEncodingVersion is the common encoding version of the servers when the
	// migration was started ("apps/v1"), for people; absent when polling discovery.
	AnnotationEncodingVersion = "migration.concord.io/encoding-version"
	// AnnotationSequence is the trigger's number of a migration it adopted (one it did
	// not create, whose name does not end in its number): the trigger orders the
	// migrations of a resource by these numbers.
	AnnotationSequence = "migration.concord.io/sequence"
)

// The values of Progress.Path.
const (
	// PathServer: the API server rewrote pages itself (Concord's fast path).
	PathServer = "server"
	// PathClient: the migrator read every object and wrote it back.
	PathClient = "client"
)

// StorageState is migration.k8s.io/v1alpha1 StorageState.
type StorageState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              StorageStateSpec   `json:"spec,omitempty"`
	Status            StorageStateStatus `json:"status,omitempty"`
}

// StorageStateSpec names the resource.
type StorageStateSpec struct {
	Resource metav1.GroupResource `json:"resource"`
}

// StorageStateStatus is what the trigger knows of the resource's encodings.
type StorageStateStatus struct {
	// PersistedStorageVersionHashes are the hashes objects may be encoded in; Unknown
	// means any.
	PersistedStorageVersionHashes []string `json:"persistedStorageVersionHashes,omitempty"`
	// CurrentStorageVersionHash is the hash objects are written in now; Unknown while
	// the servers disagree.
	CurrentStorageVersionHash string `json:"currentStorageVersionHash,omitempty"`
	// LastHeartbeatTime is when the trigger last confirmed the state: it renews it
	// when it changes the state, and while it follows the resource at least every
	// quarter of its staleness window.
	LastHeartbeatTime metav1.Time `json:"lastHeartbeatTime,omitempty"`
	// Conditions holds ConditionTracked.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StorageVersionMigration is storagemigration.k8s.io/v1 StorageVersionMigration with
// Concord's status.progress.
type StorageVersionMigration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              storagemigrationv1.StorageVersionMigrationSpec `json:"spec,omitempty"`
	Status            MigrationStatus                                `json:"status,omitempty"`
}

// MigrationStatus is storagemigrationv1.StorageVersionMigrationStatus plus Progress.
type MigrationStatus struct {
	Conditions      []metav1.Condition `json:"conditions,omitempty"`
	ResourceVersion string             `json:"resourceVersion,omitempty"`
	Progress        *Progress          `json:"progress,omitempty"`
}

// Progress is Concord's progress report of a migration, and its checkpoint.
type Progress struct {
	Path               string          `json:"path,omitempty"`
	StorageVersionHash string          `json:"storageVersionHash,omitempty"`
	Total              *int64          `json:"total,omitempty"`
	Migrated           int64           `json:"migrated"`
	Skipped            int64           `json:"skipped"`
	Failed             int64           `json:"failed"`
	Failures           []ObjectFailure `json:"failures,omitempty"`
	Continue           string          `json:"continue,omitempty"`
	StartTime          *metav1.Time    `json:"startTime,omitempty"`
	CompletionTime     *metav1.Time    `json:"completionTime,omitempty"`
}

// ObjectFailure is one object a migration could not rewrite.
type ObjectFailure struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
}

// StorageStateName returns the name of the StorageState of gr: "<resource>.<group>",
// or "<resource>" for the legacy core group (the name the KEP gives it).
func StorageStateName(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// Phase summarises the conditions of a migration: "Pending" (no condition yet),
// "Running", "Succeeded" or "Failed".
func (m *StorageVersionMigration) Phase() string {
	switch {
	case ConditionTrue(m.Status.Conditions, ConditionSucceeded):
		return ConditionSucceeded
	case ConditionTrue(m.Status.Conditions, ConditionFailed):
		return ConditionFailed
	case ConditionTrue(m.Status.Conditions, ConditionRunning):
		return ConditionRunning
	}
	return "Pending"
}

// Terminal reports whether the migration has ended (Succeeded or Failed).
func (m *StorageVersionMigration) Terminal() bool {
	p := m.Phase()
	return p == ConditionSucceeded || p == ConditionFailed
}

// ConditionTrue reports whether conds has a condition of type t with status True.
func ConditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// FindCondition returns the condition of type t in conds, or nil.
func FindCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// FromUnstructured decodes u into out (a *StorageState or *StorageVersionMigration).
func FromUnstructured(u *unstructured.Unstructured, out interface{}) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// ToUnstructured encodes in (a *StorageState or *StorageVersionMigration).
func ToUnstructured(in interface{}) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// MigrationFrom decodes an unstructured StorageVersionMigration.
func MigrationFrom(u *unstructured.Unstructured) (*StorageVersionMigration, error) {
	m := &StorageVersionMigration{}
	return m, FromUnstructured(u, m)
}

// StateFrom decodes an unstructured StorageState.
func StateFrom(u *unstructured.Unstructured) (*StorageState, error) {
	s := &StorageState{}
	return s, FromUnstructured(u, s)
}

// MetaGroupResource returns gr in the form the APIs' specs hold it.
func MetaGroupResource(gr schema.GroupResource) metav1.GroupResource {
	return metav1.GroupResource{Group: gr.Group, Resource: gr.Resource}
}
