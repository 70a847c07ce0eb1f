package main

import (
	"fmt"

	_ "k8s.io/apiextensions-apiserver/pkg/features" // registers the apiextensions gates
	"k8s.io/apimachinery/pkg/util/version"
	_ "k8s.io/apiserver/pkg/features" // registers the generic apiserver gates
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// concordGates are the feature gates Concord itself honours, with Concord's own
// history. They are not upstream's: upstream's StorageVersionAPI, for one, never left
// alpha. What Concord implements completely is beta or GA here, and on by default.
var concordGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	// APIServerIdentity: each server keeps an identity lease in kube-system.
	"APIServerIdentity": {
		{Version: version.MajorMinor(1, 20), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MajorMinor(1, 26), Default: true, PreRelease: featuregate.Beta},
	},
	// StorageVersionAPI: servers publish the encoding versions they use, and writes
	// wait until every server agrees.
	"StorageVersionAPI": {
		{Version: version.MajorMinor(1, 20), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MajorMinor(1, 33), Default: true, PreRelease: featuregate.Beta},
	},
}

// upstreamGates are real kube-apiserver feature gates, their histories read from
// k8s.io/apiserver and k8s.io/apiextensions-apiserver when the catalog is generated.
// Concord lists a gate only if switching it changes what it names (package
// compatibility's constants say what each switches); Kubernetes gates of features
// Concord does not have (CoordinatedLeaderElection, KMSv1, SeparateCacheWatchRPC, ...)
// are not listed.
var upstreamGates = []featuregate.Feature{
	"CBORServingAndStorage",   // alpha: application/cbor accepted and served
	"CRDValidationRatcheting", // alpha, beta, then GA locked to true
	"MutatingAdmissionPolicy", // alpha, beta, then GA on and unlocked (guards the API)
	"WatchList",               // the beta default flips on, off and on again
}

// featureGates returns Concord's gates and the chosen upstream ones.
func featureGates() (map[featuregate.Feature]featuregate.VersionedSpecs, error) {
	out := make(map[featuregate.Feature]featuregate.VersionedSpecs, len(concordGates)+len(upstreamGates))
	for name, specs := range concordGates {
		out[name] = specs
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAllVersioned()
	for _, name := range upstreamGates {
		specs, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("feature gate %s is gone from upstream: drop it from the generator's table", name)
		}
		if _, ok := out[name]; ok {
			return nil, fmt.Errorf("feature gate %s is both Concord's and upstream's", name)
		}
		out[name] = specs
	}
	return out, nil
}
