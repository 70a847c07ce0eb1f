package kubesemantics

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/apis/coordination"
	coordinationvalidation "k8s.io/kubernetes/pkg/apis/coordination/validation"
	"k8s.io/kubernetes/pkg/features"

	_ "k8s.io/kubernetes/pkg/apis/coordination/install" // coordination's types, defaults and conversions
)

func init() { groups = append(groups, coordinationKinds) }

// coordinationKinds are the strategies of group coordination.k8s.io. (That PUT may
// create a missing Lease is the store's: package builtin.)
func coordinationKinds() map[schema.GroupResource]strategy {
	const group = "coordination.k8s.io"
	return map[schema.GroupResource]strategy{
		{Group: group, Resource: "leases"}: kind[*coordination.Lease]{
			prepareCreate: func(_ context.Context, l *coordination.Lease) { dropCoordinatedElection(&l.Spec, nil) },
			validate: func(_ context.Context, l *coordination.Lease) field.ErrorList {
				return coordinationvalidation.ValidateLease(l)
			},
			prepareUpdate: func(_ context.Context, l, old *coordination.Lease) { dropCoordinatedElection(&l.Spec, &old.Spec) },
			validateUpdate: func(_ context.Context, l, old *coordination.Lease) field.ErrorList {
				return coordinationvalidation.ValidateLeaseUpdate(l, old)
			},
		}.erase(),
		{Group: group, Resource: "leasecandidates"}: kind[*coordination.LeaseCandidate]{
			validate: func(_ context.Context, c *coordination.LeaseCandidate) field.ErrorList {
				return coordinationvalidation.ValidateLeaseCandidate(c)
			},
			validateUpdate: func(_ context.Context, c, old *coordination.LeaseCandidate) field.ErrorList {
				return coordinationvalidation.ValidateLeaseCandidateUpdate(c, old)
			},
		}.erase(),
	}
}

// dropCoordinatedElection clears a Lease's strategy and preferred holder, the fields
// of coordinated leader election, while its feature gate is off, unless the stored
// Lease (old; nil on create) already has them.
func dropCoordinatedElection(spec, old *coordination.LeaseSpec) {
	if utilfeature.DefaultFeatureGate.Enabled(features.CoordinatedLeaderElection) {
		return
	}
	if old == nil || old.Strategy == nil {
		spec.Strategy = nil
	}
	if old == nil || old.PreferredHolder == nil {
		spec.PreferredHolder = nil
	}
}
