package upgradecheck

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/concordproject/concord/apiextensions"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrNotSafe means that a server of the target release could not decode everything
// the cluster has persisted (Report.Err).
var ErrNotSafe = errors.New("not safe")

// Release is what a server of one release, with given compatibility versions, reads
// and writes.
type Release struct {
	// Binary, Emulation and MinCompatibility are its KEP-4330 versions (major.minor).
	Binary, Emulation, MinCompatibility string
	// Resources are the resources it serves (in at least one version).
	Resources map[schema.GroupResource]Served
}

// Served is one resource as a server has it.
type Served struct {
	// Kind is the resource's kind (storage version hashes include it).
	Kind string
	// Versions are every version the server decodes, served or not, newest first.
	Versions []string
	// StorageVersion is the version it writes objects in.
	StorageVersion string
}

// Known is what the full API catalog knows of one built-in resource.
type Known struct {
	Kind string
	// Versions are every version the catalog ever had for it, newest first.
	Versions []string
}

// State is a StorageState's status.
type State struct {
	// Persisted are the version hashes of status.persistedStorageVersionHashes
	// (migrationapi.Unknown: any), without their encryption keys.
	Persisted []string
	// PersistedKeys are the encryption keys of status.persistedStorageVersionHashes
	// (wire.Plaintext for a hash without one; migrationapi.Unknown: any).
	PersistedKeys []string
	// Current is status.currentStorageVersionHash's version hash (Unknown while
	// servers disagree).
	Current string
	// Heartbeat is status.lastHeartbeatTime.
	Heartbeat time.Time
}

// Encodings are a StorageVersion object's encoding versions ("group/version").
type Encodings struct {
	// Common is status.commonEncodingVersion, "" when the servers disagree.
	Common string
	// Servers maps each API server ID to the encodingVersion of its entry.
	Servers map[string]string
	// Keys are the encryption keys servers report (wire.AnnotationEncryptionKeys).
	Keys map[string]wire.EncryptionKeys
}

// CRD is what a CustomResourceDefinition says of the versions of its resource.
type CRD struct {
	Kind string
	// Versions are spec.versions' names; StorageVersion is the one with storage: true.
	Versions       []string
	StorageVersion string
	// StoredVersions is status.storedVersions.
	StoredVersions []string
}

// Migration is the latest StorageVersionMigration of a resource.
type Migration struct {
	// Name, Phase (Pending, Running, Succeeded, Failed) and the reason of its ending.
	Name, Phase, Reason string

	created time.Time
}

// Input is everything Check decides from.
type Input struct {
	// Target is the release to check; Steps are other releases (above it), each with
	// --min-compatibility-version set to Target's binary, that a server can run as:
	// the intermediate releases Check may suggest.
	Target Release
	Steps  []Release
	// Catalog is the full API catalog's built-in resources.
	Catalog map[schema.GroupResource]Known
	// States, StorageVersions and CRDs are what the cluster holds, by resource;
	// Migrations its latest StorageVersionMigration of each resource.
	States          map[schema.GroupResource]State
	StorageVersions map[schema.GroupResource]Encodings
	CRDs            map[schema.GroupResource]CRD
	Migrations      map[schema.GroupResource]Migration
	// Now and Staleness: a StorageState whose heartbeat is older than Staleness (when
	// positive) counts as Unknown, as the migration trigger resets it so.
	Now       time.Time
	Staleness time.Duration
	// Fleet is what the running servers say of their releases; FieldUses the fields
	// the target does not know that persisted objects use, by resource (ScanFields).
	Fleet     Fleet
	FieldUses map[schema.GroupResource][]FieldUse
	// JudgedAs is the catalog's newest release when Target is newer than it: Target
	// is then that release, named as Target ("" else).
	JudgedAs string
	// Discovered is what the cluster's discovery says of the resources it serves: their
	// kinds and versions resolve the hashes of resources the catalog does not know.
	Discovered map[schema.GroupResource]Discovered
}

// Discovered is one resource as the cluster's discovery lists it.
type Discovered struct {
	Kind string
	// Versions are the versions the cluster serves it in.
	Versions []string
}

// Verdict is the answer for one resource.
type Verdict struct {
	Resource schema.GroupResource
	// CRD is true for a custom resource (judged by its definition's storedVersions).
	CRD bool
	// Persisted are the versions objects may be encoded in: resolved hashes and the
	// versions servers write now; "Unknown" when any may be present, "hash <h>" for a
	// hash no known version has.
	Persisted []string
	// Served is false when the target release does not serve the resource; Decodes are
	// the versions it decodes otherwise.
	Served  bool
	Decodes []string
	// Blocked is true when the target could not decode some object; Reasons say why.
	Blocked bool
	Reasons []string
	// Unblock is the short remedy (the table's column); Advice the steps in full.
	Unblock string
	Advice  []string
	// Migrate is true when a StorageVersionMigration of the resource unblocks it.
	Migrate bool
	// Unverified is true for a resource this build's API catalog does not know (a
	// built-in of kube-apiserver that Concord does not serve): what the target decodes
	// of it is not known here. It does not block.
	Unverified bool
}

// Name is the resource's name as StorageStates and migrations name it.
func (v *Verdict) Name() string { return migrationapi.StorageStateName(v.Resource) }

// Report is Check's answer.
type Report struct {
	Target Release
	Fleet  Fleet
	// FleetBlocked says why the target blocks whatever is persisted (it is below the
	// fleet's minimum compatibility version); nil when it does not.
	FleetBlocked []string
	// JudgedAs is Input.JudgedAs: what is new in Target is unverified.
	JudgedAs string
	Verdicts []Verdict
}

// Check decides, for every resource the cluster has persisted (a StorageState, a
// StorageVersion or a CustomResourceDefinition names it), whether a server of
// in.Target decodes every version its objects may be in, and what unblocks it if not.
// Verdicts are sorted by name.
func Check(in Input) Report {
	grs := map[schema.GroupResource]bool{}
	for gr := range in.States {
		grs[gr] = true
	}
	for gr := range in.StorageVersions {
		grs[gr] = true
	}
	for gr := range in.CRDs {
		grs[gr] = true
	}
	r := Report{Target: in.Target, Fleet: in.Fleet, FleetBlocked: in.Fleet.belowFleet(in.Target), JudgedAs: in.JudgedAs}
	for gr := range grs {
		if crd, ok := in.CRDs[gr]; ok {
			r.Verdicts = append(r.Verdicts, checkCRD(&in, gr, crd))
			continue
		}
		r.Verdicts = append(r.Verdicts, checkBuiltin(&in, gr))
	}
	slices.SortFunc(r.Verdicts, func(a, b Verdict) int { return strings.Compare(a.Name(), b.Name()) })
	return r
}

// Blocked returns the blocked verdicts.
func (r *Report) Blocked() []Verdict {
	var out []Verdict
	for _, v := range r.Verdicts {
		if v.Blocked {
			out = append(out, v)
		}
	}
	return out
}

// Err is nil when every resource is safe and the target is not below the fleet's
// minimum compatibility version, and otherwise one line wrapping ErrNotSafe that says
// why: the fleet's minimum compatibility version, the resources that block.
func (r *Report) Err() error {
	var why []string
	if len(r.FleetBlocked) > 0 {
		why = append(why, fmt.Sprintf("the servers' minimum compatibility version is %s", r.Fleet.MinCompatibility))
	}
	if blocked := r.Blocked(); len(blocked) > 0 {
		names := make([]string, len(blocked))
		for i, v := range blocked {
			names[i] = v.Name()
		}
		why = append(why, fmt.Sprintf("%d resources block: %s", len(blocked), strings.Join(names, ", ")))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%s is %w: %s", r.Fleet.move(r.Target), ErrNotSafe, strings.Join(why, "; "))
}

// checkCRD judges a custom resource: its versions do not depend on the release, so
// it is safe unless status.storedVersions lists a version spec.versions lacks.
func checkCRD(in *Input, gr schema.GroupResource, crd CRD) Verdict {
	v := Verdict{Resource: gr, CRD: true, Persisted: crd.StoredVersions, Served: true, Decodes: crd.Versions, Unblock: "-"}
	var gone []string
	for _, s := range crd.StoredVersions {
		if !slices.Contains(crd.Versions, s) {
			gone = append(gone, s)
		}
	}
	if len(gone) == 0 {
		return v
	}
	v.Blocked, v.Migrate = true, true
	v.Reasons = []string{fmt.Sprintf("the definition's status.storedVersions lists %s, which spec.versions no longer has: no release can decode objects still in %s",
		strings.Join(gone, ", "), pronoun(gone))}
	v.Unblock = fmt.Sprintf("migrate to %s, then trim storedVersions", crd.StorageVersion)
	v.Advice = append(v.Advice,
		fmt.Sprintf("Migrate %s to %s: when the migration succeeds the controller trims status.storedVersions to %s.", v.Name(), crd.StorageVersion, crd.StorageVersion),
		"Objects it cannot read are reported as failed: serve their version again in the definition, or delete them.")
	v.Advice = append(v.Advice, migrationAdvice(in, gr)...)
	return v
}

func pronoun(vs []string) string {
	if len(vs) == 1 {
		return "it"
	}
	return "them"
}

// hashes maps the storage version hash of every version of gr anything knows (the
// catalog, the target and step releases, a CRD) to the version.
func hashes(in *Input, gr schema.GroupResource) map[string]string {
	out := map[string]string{}
	add := func(kind string, versions []string) {
		for _, v := range versions {
			out[wire.StorageVersionHash(gr.Group, v, kind)] = v
		}
	}
	if k, ok := in.Catalog[gr]; ok {
		add(k.Kind, k.Versions)
	}
	for _, rel := range append([]Release{in.Target}, in.Steps...) {
		if s, ok := rel.Resources[gr]; ok {
			add(s.Kind, s.Versions)
		}
	}
	if crd, ok := in.CRDs[gr]; ok {
		add(crd.Kind, append(slices.Clone(crd.Versions), crd.StoredVersions...))
	}
	if gr == apiextensions.GroupResource {
		// Every version Kubernetes has had of them: kube-apiserver stores v1beta1.
		add("CustomResourceDefinition", apiextensions.KnownVersions)
	}
	if d, ok := in.Discovered[gr]; ok {
		// A resource may be stored in a version it is not served in (an alpha storage
		// version behind a beta API): try the usual version names too.
		add(d.Kind, appendMissing(slices.Clone(d.Versions), usualVersions...))
	}
	return out
}

// usualVersions are the version names Kubernetes APIs have used, tried against the
// hashes of a resource the catalog does not know (a hash names its version exactly).
var usualVersions = []string{"v1", "v2", "v1beta1", "v1beta2", "v1beta3", "v2beta1", "v2beta2", "v1alpha1", "v1alpha2", "v1alpha3", "v2alpha1"}

// encodingVersion returns the version of an encoding version "group/version" of gr,
// or the whole string when its group is not gr's.
func encodingVersion(gr schema.GroupResource, ev string) string {
	gv, err := schema.ParseGroupVersion(ev)
	if err != nil || gv.Group != gr.Group {
		return ev
	}
	return gv.Version
}

func appendMissing(list []string, items ...string) []string {
	for _, s := range items {
		if s != "" && !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

func without(list, drop []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}
