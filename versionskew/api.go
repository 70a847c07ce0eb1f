package versionskew

import (
	_ "embed" // the definition's manifest
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The API: compatibility.concord.io/v1alpha1 VersionSkew, one object named Name.
var (
	GroupVersion  = schema.GroupVersion{Group: "compatibility.concord.io", Version: "v1alpha1"}
	GroupResource = GroupVersion.WithResource("versionskews").GroupResource()
)

// Name is the one VersionSkew object.
const Name = "cluster"

// ConditionWithinAllowance is the condition the controller keeps, with its reasons.
const (
	ConditionWithinAllowance = "WithinAllowance"
	ReasonWithinAllowance    = "WithinAllowance"
	ReasonOutOfAllowance     = "OutOfAllowance"
)

// VersionSkew is the object.
type VersionSkew struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            Status `json:"status,omitempty"`
}

// Status is what the controller observed.
type Status struct {
	Components []ComponentStatus  `json:"components,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ComponentStatus is one component's versions and verdict.
type ComponentStatus struct {
	Name                    string `json:"name"`
	Kind                    string `json:"kind"`
	Role                    Role   `json:"role"`
	BinaryVersion           string `json:"binaryVersion,omitempty"`
	EmulationVersion        string `json:"emulationVersion"`
	MinCompatibilityVersion string `json:"minCompatibilityVersion,omitempty"`
	WithinAllowance         bool   `json:"withinAllowance"`
}

//go:embed versionskews.compatibility.concord.io.yaml
var manifest []byte

// CRD returns a new copy of the definition of the API (the manifest beside this file,
// the only definition of its schema). Every Concord server serves it as a built-in
// resource.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(manifest, crd); err != nil {
		panic(fmt.Sprintf("versionskew: the embedded definition does not decode: %v", err)) // a build defect; a test decodes it
	}
	return crd
}

// DeepCopyStatus returns a copy of v's status.
func (v *VersionSkew) DeepCopyStatus() Status {
	return Status{Components: slices.Clone(v.Status.Components), Conditions: slices.Clone(v.Status.Conditions)}
}
