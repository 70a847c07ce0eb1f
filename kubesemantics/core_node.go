package kubesemantics

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/features"
)

// coreNodeKinds is the strategy of Nodes. Unlike most resources, a Node may be
// created with its status: kubelets register their Nodes so.
func coreNodeKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Resource: "nodes"}: kind[*core.Node]{
			prepareCreate: func(_ context.Context, n *core.Node) { dropDisabledNodeFields(n, nil) },
			validate:      func(_ context.Context, n *core.Node) field.ErrorList { return corevalidation.ValidateNode(n) },
			warnCreate:    func(_ context.Context, n *core.Node) []string { return nodeWarnings(n) },
			prepareUpdate: func(_ context.Context, n, old *core.Node) {
				n.Status = old.Status
				dropDisabledNodeFields(n, old)
			},
			validateUpdate: func(_ context.Context, n, old *core.Node) field.ErrorList {
				return append(corevalidation.ValidateNode(n), corevalidation.ValidateNodeUpdate(n, old)...)
			},
			warnUpdate:    func(_ context.Context, n, _ *core.Node) []string { return nodeWarnings(n) },
			prepareStatus: prepareNodeStatus,
			validateStatus: func(_ context.Context, n, old *core.Node) field.ErrorList {
				return corevalidation.ValidateNodeUpdate(n, old)
			},
			declarative: func(context.Context, *core.Node, *core.Node) rest.DeclarativeValidationConfig {
				return declarativeOptions(features.InPlacePodVerticalScalingSchedulerPreemption)
			},
		}.erase(),
	}
}

// declarativeOptions are the options of declarative validation that are these
// feature gates, each as this server has it.
func declarativeOptions(gates ...featuregate.Feature) rest.DeclarativeValidationConfig {
	opts := make(map[string]bool, len(gates))
	for _, g := range gates {
		opts[string(g)] = utilfeature.DefaultFeatureGate.Enabled(g)
	}
	return rest.DeclarativeValidationConfig{Options: opts}
}

// dropDisabledNodeFields clears what a Node (an update of old; old nil on creation)
// may not set: the removed dynamic kubelet configuration, unless an update's old Node
// has it, and the fields of feature gates that are off, unless the old Node uses them.
func dropDisabledNodeFields(n, old *core.Node) {
	gate := utilfeature.DefaultFeatureGate.Enabled
	//nolint:staticcheck // the removed field is what this drops
	switch {
	case old == nil:
		n.Spec.ConfigSource, n.Status.Config = nil, nil
	case old.Spec.ConfigSource == nil:
		n.Spec.ConfigSource = nil
	}
	if !gate(features.RecursiveReadOnlyMounts) && !gate(features.UserNamespacesSupport) {
		n.Status.RuntimeHandlers = nil
	}
	if !gate(features.SupplementalGroupsPolicy) && (old == nil || old.Status.Features == nil) {
		n.Status.Features = nil
	}
	if !gate(features.NodeDeclaredFeatures) && (old == nil || old.Status.DeclaredFeatures == nil) {
		n.Status.DeclaredFeatures = nil
	}
	if !gate(features.InPlacePodVerticalScalingSchedulerPreemption) && (old == nil || old.Spec.PodPreemptionPolicy == nil) {
		n.Spec.PodPreemptionPolicy = nil
	}
}

// prepareNodeStatus keeps the spec of a status update, drops the removed kubelet
// configuration status unless the Node has it, and the user-namespace report while
// its gate is off, unless the Node has it.
func prepareNodeStatus(_ context.Context, n, old *core.Node) {
	n.Spec = old.Spec
	if old.Status.Config == nil {
		n.Status.Config = nil
	}
	if !utilfeature.DefaultFeatureGate.Enabled(features.KubeletInUserNamespace) && old.Status.NodeInfo.RunningInUserNamespace == nil {
		n.Status.NodeInfo.RunningInUserNamespace = nil
	}
}

// nodeWarnings warns of a Node's removed or unused fields and of pod CIDRs written in
// a form Kubernetes discourages.
func nodeWarnings(n *core.Node) []string {
	var out []string
	if n.Spec.ConfigSource != nil { //nolint:staticcheck // the removed field is what this warns of
		out = append(out, "spec.configSource: the feature is removed")
	}
	if n.Spec.DoNotUseExternalID != "" {
		out = append(out, "spec.externalID: this field is deprecated, and is unused by Kubernetes")
	}
	path := field.NewPath("spec", "podCIDRs")
	for i, cidr := range n.Spec.PodCIDRs {
		out = append(out, utilvalidation.GetWarningsForCIDR(path.Index(i), cidr)...)
	}
	return out
}
