package registry

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	objectschema "github.com/concordproject/concord/schema"
	"github.com/concordproject/concord/wire"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/common"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Resource describes one persisted resource: everything the server needs to store,
// convert, validate and serve it. A Resource is immutable once put into a Registry:
// to change one (a CRD's storage version flips, say), build a new Resource and Put it.
//
// Built-in resources and custom resources are both Resources; they differ only in
// where the definition comes from (the API catalog or a CRD) and in Hooks.
type Resource struct {
	// Group is the API group; "" is the legacy core group.
	Group string
	// Names are the plural (the resource), singular, kind, list kind, short names and
	// categories, as in a CRD.
	Names apiextensionsv1.CustomResourceDefinitionNames
	// Namespaced is true for namespace-scoped resources.
	Namespaced bool
	// Versions are every version of the resource this server knows, served or not.
	// Every known version is decodable.
	Versions []Version
	// StorageVersion names the version objects are encoded in when written. It must
	// be one of Versions.
	StorageVersion string
	// Converter converts objects between versions. Nil means the None strategy
	// (only apiVersion changes).
	Converter Converter
	// Hooks add behaviour for the few resources that need it. Nil means none.
	Hooks *Hooks
	// TypeConverter, if set, gives server-side apply the resource's types, as kube's
	// generated OpenAPI definitions describe them (list-map keys, atomic structs), in
	// place of those built from its schemas.
	TypeConverter func() (managedfields.TypeConverter, error)
	// GoDefinitions, if set, describe the resource's kinds as Go types (kube's generated
	// OpenAPI definitions, for built-in resources): the published OpenAPI documents give
	// a version whose kind they define (and its list kind, if they define it) those
	// definitions, with their descriptions, defaults and extensions, in place of models
	// derived from its schema. Resources share one GoDefinitions per origin: what is
	// derived from it is cached per GoDefinitions.
	GoDefinitions *GoDefinitions
	// Semantics, if set, are the resource's defaults, preparation and validation as
	// Kubernetes' own packages define them (built-in resources, package
	// kubesemantics), in place of its schema's defaults and validation and of
	// metadata validation. Nil: the schema and the hooks.
	Semantics *Semantics
	// TTL, if positive, makes every write of an object set it to expire that long
	// after (etcd removes it; watchers see a deletion), as Kubernetes does for Events
	// (--event-ttl). Storage-migration rewrites keep an object's expiry.
	TTL time.Duration
	// Owner, if set, is the object that defines the resource (a CRD); it is reported
	// as owner of the resource's StorageVersion object.
	Owner *OwnerRef
	// Shared, if set, says the resource's objects are another resource's, kept in
	// that resource's storage (events.k8s.io Events are core Events).
	Shared *SharedStorage
	// UnconditionalUpdate lets an update that carries no metadata.resourceVersion
	// overwrite whatever is stored, as Kubernetes allows for most built-in resources
	// (ConfigMaps, Namespaces, Deployments...). Without it, such an update is refused as
	// invalid, as Kubernetes refuses it for custom resources, Leases and admission
	// policies.
	UnconditionalUpdate bool
	// StatusAnnotations are annotations that belong to the status: a status update
	// writes them (as the object sent has them) and an update of the main resource
	// keeps them as stored. A StorageVersion's encryption keys are reported so, each
	// server's next to its entry, in one write.
	StatusAnnotations []string
	// NoRatcheting validates updates against the schema as creates are, without
	// validation ratcheting (schema.Schema.ValidateUpdateWithoutRatcheting): custom
	// resources while the CRDValidationRatcheting feature gate is off.
	NoRatcheting bool
	// Verbs are the verbs the resource serves and SubresourceVerbs those of each of
	// its subresources, as Kubernetes' discovery names them (for built-in resources,
	// the API catalog's recording of kube-apiserver's). Nil Verbs are every verb of a
	// persisted resource, create alone for a review; a subresource SubresourceVerbs
	// does not name serves get, patch and update (status, scale), update (a
	// namespace's finalize) or create (an action). See ServedVerbs.
	Verbs            []string
	SubresourceVerbs map[string][]string
	// ReturnDeletedObject answers a deletion that removed the object with the object
	// as it was, rather than with a Status naming it, as Kubernetes' registries of a
	// few resources do (Pods, Services, Namespaces, StorageClasses, the
	// resource.k8s.io kinds, ...: package builtin names them).
	ReturnDeletedObject bool
	// GarbageCollection is what deleting an object does with its dependents (the
	// objects that name it in their ownerReferences) when the request says nothing
	// (no propagationPolicy, no orphanDependents). The zero value is Kubernetes' usual
	// default: background.
	GarbageCollection GarbageCollectionPolicy

	prepared *prepared
}

// GarbageCollectionPolicy is the garbage collection behaviour of a resource's
// deletions, as Kubernetes' registries define it per resource (their
// DefaultGarbageCollectionPolicy).
type GarbageCollectionPolicy struct {
	// Unsupported deletions never wait for the garbage collector: they neither add
	// nor keep the orphan and foregroundDeletion finalizers, whatever the request
	// asks (Kubernetes' Events).
	Unsupported bool
	// OrphanByDefault are the versions whose deletions orphan the dependents unless
	// the request asks otherwise (Kubernetes' legacy defaults, kept for the old
	// clients of those versions).
	OrphanByDefault []string
}

// GoDefinitions are the generated OpenAPI definitions of Go types (openapi-gen's
// GetOpenAPIDefinitions) and the scheme that names their models after the Go types
// (k8s.io/apiserver's definition namer) and gives their group-version-kinds.
type GoDefinitions struct {
	Definitions common.GetOpenAPIDefinitions
	Scheme      *runtime.Scheme
}

// OwnerRef names the object that defines a resource.
type OwnerRef struct {
	APIVersion, Kind, Name, UID string
}

// Version is one version of a Resource.
type Version struct {
	// Name is the version, e.g. "v1beta2".
	Name string
	// Served is true if the version is served over the REST API.
	Served bool
	// Deprecated versions are served with a Warning header.
	Deprecated         bool
	DeprecationWarning *string
	// Schema is the structural OpenAPI v3 schema of the whole object. Nil accepts any
	// object (every unknown field is preserved).
	Schema *apiextensionsv1.JSONSchemaProps
	// Compiled, if set, returns Schema compiled (schema.Compile): Prepare does not
	// compile Schema, and the version's first use calls Compiled instead. Whoever sets
	// it vouches that it returns Schema's, and without error (a version used whose
	// Compiled fails panics: the catalog's tests compile every one); the catalog
	// shares one compilation between the servers of a process that agree on it, made
	// when one of them first needs it.
	Compiled func() (*objectschema.Schema, error)
	// Subresources enables /status and /scale.
	Subresources *apiextensionsv1.CustomResourceSubresources
	// PrinterColumns are the extra Table columns (NAME is always first, AGE added if
	// not listed).
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition
	// SelectableFields are the extra fields usable in field selectors, besides
	// metadata.name and metadata.namespace.
	SelectableFields []apiextensionsv1.SelectableField
	// NewFields are fields of Schema the server decodes and serves but takes no new
	// data in (KEP-4330: a release its data must stay readable by lacks them, and
	// would lose them). A write that sets one, or changes its value, is refused with
	// its Reason; a value an update leaves as it was is kept.
	NewFields []NewField
}

// Semantics are a resource's defaults, preparation and validation when another
// implementation than its schema gives them (see Resource.Semantics).
type Semantics struct {
	// Default applies defaults to obj, an object of version as decoded from a request.
	Default func(version string, obj *Object) error
	// Create prepares a new object of version in place (what it may not set reset,
	// its generation) and validates it. A non-nil error is not the object's fault.
	Create func(ctx context.Context, version string, obj *Object) (field.ErrorList, error)
	// Update prepares and validates obj, an update of old ("" subresource) or of its
	// status ("status") or another of Subresources and Writes, in place, as Create
	// does.
	Update func(ctx context.Context, version, subresource string, obj, old *Object) (field.ErrorList, error)
	// Subresources are the subresources Update writes besides status, each
	// served with get, patch and update of the whole object (a
	// CertificateSigningRequest's "approval", a Pod's "ephemeralcontainers" and
	// "resize"): the store keeps nothing of the stored
	// object for them but its system metadata; Update decides the rest.
	Subresources []string
	// Writes are subresources whose updates Update decides as those of
	// Subresources, but which the server serves otherwise (a Pod's binding, an
	// action that writes the Pod): not as endpoints of the object.
	Writes []string
	// New, if set, returns the empty object of version as the resource's types write
	// it (what server-side apply compares a creation with).
	New func(version string) (*Object, error)
	// ResetFields, if set, are the fields a write through each subresource ("" for
	// the resource itself) may not set and so never owns in managed fields, the same
	// in every version: those the preparation of the write resets. For a subresource
	// it does not name, a resource with a status subresource does not own status and
	// its status owns neither spec nor metadata.
	ResetFields map[string]*fieldpath.Set
	// Invalid, if set, names the kind and name the resource's Invalid errors about
	// obj name (by default its own kind and obj's name).
	Invalid func(obj *Object) (schema.GroupKind, string)
	// Table, if set, prints objs (of version) as Table rows: the columns, and each
	// object's cells. It replaces the version's printer columns.
	Table func(ctx context.Context, version string, objs []Object) ([]metav1.TableColumnDefinition, [][]interface{}, error)
}

// NewField is a field a server takes no new data in (Version.NewFields).
type NewField struct {
	// Path locates the field: property names, "[]" for every item of a list, "{}" for
	// every value of a map.
	Path []string
	// Reason is the detail of the Forbidden error a write that sets it gets.
	Reason string
}

// Hooks are the Go behaviour of resources that have some. Every field is optional.
type Hooks struct {
	// Validate checks a new object (in the storage version's shape, after defaulting)
	// beyond its schema.
	Validate func(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList
	// ValidateUpdate checks an update beyond its schema.
	ValidateUpdate func(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList
	// NoGeneration: the resource's objects carry no metadata.generation, as its
	// Kubernetes strategy sets none (APIServices).
	NoGeneration bool
	// Default, if set, applies the resource's defaults to an object of version as
	// it is decoded, after its schema's (a CustomResourceDefinition's, kube's
	// apiextensions-apiserver's): what server-side apply records sees them.
	Default func(version string, obj *unstructured.Unstructured)
	// PrepareForCreate may change a new object before validation (e.g. reset status).
	PrepareForCreate func(ctx context.Context, obj *unstructured.Unstructured)
	// PrepareForUpdate may change an updated object before validation, with the old
	// one at hand.
	PrepareForUpdate func(ctx context.Context, obj, old *unstructured.Unstructured)
	// ValidateName checks metadata.name (and generateName as a prefix). Nil means a
	// DNS-1123 subdomain, as for most Kubernetes resources.
	ValidateName apimachineryvalidation.ValidateNameFunc
	// PrepareForDelete may change an object whose deletion starts but must wait
	// (it has finalizers, or PendingDeletion says so), e.g. set a Terminating phase.
	PrepareForDelete func(ctx context.Context, obj *unstructured.Unstructured)
	// DeletionFinalizers are finalizers a deletion adds when it starts: work the
	// server itself finishes before the object goes (a CustomResourceDefinition's
	// custom resources are deleted first). Objects do not carry them before. Such a
	// deletion is written as kube's storage of that resource writes it: the
	// deletionTimestamp and the finalizers (and PrepareForDelete's changes), with no
	// grace period and no generation bump.
	DeletionFinalizers []string
	// PendingDeletion reports resource-specific reasons, beyond metadata.finalizers,
	// that keep a deleted object in storage (namespaces' spec.finalizers).
	PendingDeletion func(obj *unstructured.Unstructured) bool
	// GracePeriod makes the resource's deletion graceful, as Kubernetes deletes Pods
	// (the graceful-delete strategy of its registry): it returns how many seconds an
	// object stays once its deletion starts, given the seconds the request asks for
	// (nil: none asked; never negative). The store then keeps the object with
	// deletionTimestamp that far ahead and deletionGracePeriodSeconds, and deletes it
	// once a deletion's period is 0 (see store.Delete).
	GracePeriod func(obj *unstructured.Unstructured, requested *int64) int64
	// TableCells, if set, computes a Table row's cells after NAME, one per printer
	// column of the version, for columns a JSONPath cannot express.
	TableCells func(obj *unstructured.Unstructured) []interface{}
	// AllowCreateOnUpdate lets PUT create a missing object (leases do, as in
	// Kubernetes).
	AllowCreateOnUpdate bool
	// AdmitCreate may refuse a new object before it is validated and stored (e.g.
	// the custom resources of a definition being deleted); the error, a StatusError,
	// goes to the client as is.
	AdmitCreate func(ctx context.Context, obj *unstructured.Unstructured) error
	// Writable reports whether the caller may write this resource at all (beyond the
	// general authorizer); a non-nil error is answered 403 with its text.
	Writable func(ctx context.Context) error
	// Review makes the resource a review (TokenReview, SubjectAccessReview, ...): a
	// creation is answered, never stored. Review gets the request's object in the
	// resource's storage version, validated against its schema, and returns the
	// answer in that version (status filled in); an error, a StatusError, goes to
	// the client as is. A review serves no other verb, and is not persisted: it has
	// no StorageVersion entry, and the write barrier and migrations leave it alone.
	// A review may write other objects (a Binding binds its Pod), but not with
	// dryRun.
	Review func(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error)
	// Compute makes the resource computed: its objects are made on every read and
	// never stored (kube-apiserver's ComponentStatuses, probed). Compute returns the
	// object named name, or, for name "", every object; a missing object is the
	// hook's NotFound error, which goes to the client as is. A computed resource
	// serves get and list only, and is not persisted.
	Compute func(ctx context.Context, name string) ([]*unstructured.Unstructured, error)
	// Actions are subresources that answer a creation from their object (a
	// ServiceAccount's token; a Pod's binding, which writes the Pod), by subresource
	// name.
	Actions map[string]Action
	// Connects are subresources that connect a client to what their object leads
	// to (a Pod's log, exec, attach, portforward and proxy), by subresource name.
	Connects map[string]Connect
	// AdmitDelete may refuse the deletion of obj (as stored) before anything is
	// written (a system namespace, a system PriorityClass); the error, a StatusError,
	// goes to the client as is.
	AdmitDelete func(ctx context.Context, obj *unstructured.Unstructured) error
	// Allocate reserves what a new object (old nil) or an update holds beyond its own
	// key, a Service's cluster IPs and node ports, and fills it into obj. It runs after
	// PrepareForCreate or PrepareForUpdate and before validation (which sees what it
	// filled in, as in Kubernetes, whose registry allocates first), validating
	// admission and the write; the store then calls the Allocation's Commit once the
	// write succeeded, its Revert otherwise (each at most once). With dryRun it checks
	// and fills but reserves nothing. An error, a StatusError, goes to the client as is.
	Allocate func(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (Allocation, error)
	// Release frees what Allocate reserved for obj once obj is gone from storage.
	Release func(ctx context.Context, obj *unstructured.Unstructured)
}

// Allocation is what an Allocate hook reserved for one write: Commit keeps it (and
// frees what the write gave up), Revert frees it. Either may be nil.
type Allocation struct {
	Commit, Revert func(ctx context.Context)
}

// Finish ends the allocation: Commit if the write succeeded, else Revert.
func (a Allocation) Finish(ctx context.Context, written bool) {
	switch {
	case written && a.Commit != nil:
		a.Commit(ctx)
	case !written && a.Revert != nil:
		a.Revert(ctx)
	}
}

// Action is a subresource that answers a creation from its object: POST
// <object>/<name> with a body of Kind is answered 201 with what Do returns. Only
// create is served.
type Action struct {
	// Kind is the kind of the request's body and of the answer.
	Kind schema.GroupVersionKind
	// Versions are other versions of Kind's group a body may be in (kube's
	// Eviction: policy/v1beta1); a body of another kind or version is a 400.
	Versions []string
	// NameMismatch, if set, is the 400 answer to a body whose metadata.name is not
	// the object's (kube's named subresources: an Eviction must name its Pod);
	// otherwise the body is given the object's name.
	NameMismatch string
	// Do answers body (JSON) for obj, the object as stored, read for the request;
	// an error, a StatusError, goes to the client as is. With dryRun it writes
	// nothing.
	Do func(ctx context.Context, obj *unstructured.Unstructured, body []byte, dryRun bool) (runtime.Object, error)
}

// Connect is a subresource that connects a client to what its object leads to, as
// kube's connect handlers do: the request's options are its query, it has no body of
// the resource's, and Serve answers it, for the object the URL names, on the methods
// Methods (GET is verb get, POST create, PUT update, PATCH patch, DELETE delete).
type Connect struct {
	// Kind is the kind discovery names for it (its options' kind).
	Kind schema.GroupVersionKind
	// Methods are the HTTP methods it serves.
	Methods []string
	// Verb, if set, is a verb the caller must also be allowed on the subresource,
	// whatever the method (kube's exec, attach and portforward need create).
	Verb string
	// Subpath says whether it takes the URL's path beyond the subresource (kube's
	// proxies; request.Info.Subpath): any other subresource's URL ends with its name.
	Subpath bool
	// Serve answers r for the object name (as the URL spells it) in namespace; an
	// error, a StatusError, goes to the client as is, if Serve wrote nothing.
	Serve func(w http.ResponseWriter, r *http.Request, namespace, name string) error
}

// connectVerbs are the verbs of the HTTP methods a Connect serves.
var connectVerbs = map[string]string{http.MethodGet: "get", http.MethodPost: "create", http.MethodPut: "update",
	http.MethodPatch: "patch", http.MethodDelete: "delete"}

// Verbs returns the verbs of c's methods, sorted.
func (c Connect) Verbs() []string {
	var out []string
	for _, m := range c.Methods {
		if v, ok := connectVerbs[m]; ok {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// Connect returns the connect subresource named name, and false if r has none.
func (r *Resource) Connect(name string) (Connect, bool) {
	if r.Hooks == nil {
		return Connect{}, false
	}
	c, ok := r.Hooks.Connects[name]
	return c, ok
}

// AddAction gives r the action subresource named name (a Pod's binding, its
// eviction).
func (r *Resource) AddAction(name string, a Action) {
	if r.Hooks == nil {
		r.Hooks = &Hooks{}
	}
	if r.Hooks.Actions == nil {
		r.Hooks.Actions = map[string]Action{}
	}
	r.Hooks.Actions[name] = a
}

// Action returns the action subresource named name, and false if r has none.
func (r *Resource) Action(name string) (Action, bool) {
	if r.Hooks == nil {
		return Action{}, false
	}
	a, ok := r.Hooks.Actions[name]
	return a, ok
}

// Converter converts objects of one resource between its versions. Implementations:
// the None strategy (apiVersion only; NoneConverter) and CRD conversion webhooks.
type Converter interface {
	// Convert rewrites every object in objs into toVersion (a version name of the
	// resource, e.g. "v2"), in place. Objects already in toVersion are left alone. An
	// error names the failing object or converter; objs are then unspecified.
	Convert(ctx context.Context, objs []*unstructured.Unstructured, toVersion string) error
}

// HasPrinterColumns reports whether every version of r has exactly the printer
// columns names, in that order: a TableCells hook written for them may be set.
func (r *Resource) HasPrinterColumns(names []string) bool {
	for _, v := range r.Versions {
		if !slices.EqualFunc(v.PrinterColumns, names, func(c apiextensionsv1.CustomResourceColumnDefinition, name string) bool { return c.Name == name }) {
			return false
		}
	}
	return true
}

// Persisted reports whether the resource's objects are stored: every resource but
// the reviews (Hooks.Review) and the computed ones (Hooks.Compute).
func (r *Resource) Persisted() bool {
	return r.Hooks == nil || (r.Hooks.Review == nil && r.Hooks.Compute == nil)
}

// StoresOwn reports whether r's objects are stored under its own keys: persisted,
// and not another resource's (Shared). Such a resource has a StorageVersion entry and
// storage migrations of its own.
func (r *Resource) StoresOwn() bool { return r.Persisted() && r.Shared == nil }

// Computed reports whether r's objects are computed on read (Hooks.Compute).
func (r *Resource) Computed() bool { return r.Hooks != nil && r.Hooks.Compute != nil }

// persistedVerbs are the verbs of a resource kept in storage, when nothing says
// otherwise: all of them, as for custom resources.
var persistedVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// computedVerbs are the verbs of a computed resource.
var computedVerbs = []string{"get", "list"}

// ServedVerbs returns the verbs the resource (subresource "") or one of its
// subresources serves, sorted. The caller must not modify them.
func (r *Resource) ServedVerbs(subresource string) []string {
	switch {
	case subresource == "" && r.Verbs != nil:
		return r.Verbs
	case subresource == "" && r.Computed():
		return computedVerbs
	case subresource == "" && !r.Persisted():
		return []string{"create"}
	case subresource == "":
		return persistedVerbs
	}
	if v, ok := r.SubresourceVerbs[subresource]; ok {
		return v
	}
	if c, ok := r.Connect(subresource); ok {
		return c.Verbs()
	}
	switch _, action := r.Action(subresource); {
	case action:
		return []string{"create"}
	case subresource == "finalize":
		return []string{"update"}
	}
	return []string{"get", "patch", "update"}
}

// SemanticSubresource reports whether name is one of the subresources the resource's
// Semantics write (Semantics.Subresources and Writes).
func (r *Resource) SemanticSubresource(name string) bool {
	return r.Semantics != nil && (slices.Contains(r.Semantics.Subresources, name) || slices.Contains(r.Semantics.Writes, name))
}

// GroupResource returns the resource's group and plural.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Names.Plural}
}

// Serves reports whether resources, not registered yet, serve gr in version v (the
// first of them that is gr decides).
func Serves(resources []*Resource, gr schema.GroupResource, v string) bool {
	at := slices.IndexFunc(resources, func(r *Resource) bool { return r.GroupResource() == gr })
	return at >= 0 && resources[at].ServedVersion(v) != nil
}

// GroupVersion returns the group-version of version v of the resource.
func (r *Resource) GroupVersion(v string) schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: v}
}

// Version returns the named version, or nil if the resource has no such version.
func (r *Resource) Version(name string) *Version {
	for i := range r.Versions {
		if r.Versions[i].Name == name {
			return &r.Versions[i]
		}
	}
	return nil
}

// ServedVersion returns the named version if it is served, else nil.
func (r *Resource) ServedVersion(name string) *Version {
	if v := r.Version(name); v != nil && v.Served {
		return v
	}
	return nil
}

// DecodableVersions returns every version name the server can decode, newest first
// (Kubernetes-aware order).
func (r *Resource) DecodableVersions() []string {
	out := make([]string, 0, len(r.Versions))
	for _, v := range r.Versions {
		out = append(out, v.Name)
	}
	SortVersions(out)
	return out
}

// ServedVersions returns the served version names, newest first.
func (r *Resource) ServedVersions() []string {
	var out []string
	for _, v := range r.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	SortVersions(out)
	return out
}

// PreferredVersion returns the newest served version ("" if none is served).
func (r *Resource) PreferredVersion() string {
	if s := r.ServedVersions(); len(s) > 0 {
		return s[0]
	}
	return ""
}

// Validate checks that the definition is coherent: names set, versions unique, and
// the storage version one of them.
func (r *Resource) Validate() error {
	if r.Names.Plural == "" || r.Names.Kind == "" {
		return fmt.Errorf("resource %q in group %q: plural and kind are required", r.Names.Plural, r.Group)
	}
	seen := map[string]bool{}
	for _, v := range r.Versions {
		if seen[v.Name] {
			return fmt.Errorf("resource %s: duplicate version %q", r.GroupResource(), v.Name)
		}
		seen[v.Name] = true
	}
	if !seen[r.StorageVersion] {
		return fmt.Errorf("resource %s: storage version %q is not one of its versions", r.GroupResource(), r.StorageVersion)
	}
	return nil
}

// Key returns the etcd key (relative to the storage prefix) of the named object. The
// layout is <group or "core">/<plural>/[<namespace>/]<name>.
func (r *Resource) Key(namespace, name string) string {
	return r.Prefix(namespace) + name
}

// Prefix returns the key prefix holding the resource's objects, in one namespace or
// in all of them ("" namespace). It ends in "/".
func (r *Resource) Prefix(namespace string) string {
	g, plural := r.Group, r.Names.Plural
	if r.Shared != nil {
		g, plural = r.Shared.Owner.Group, r.Shared.Owner.Resource
	}
	if g == "" {
		g = "core"
	}
	p := g + "/" + plural + "/"
	if r.Namespaced && namespace != "" {
		p += namespace + "/"
	}
	return p
}

// GroupResourceOfKey returns the resource whose objects are stored at key (a Key or
// Prefix of any resource): the inverse of Prefix's first two segments. ok is false
// for a key no resource's prefix begins.
func GroupResourceOfKey(key string) (gr schema.GroupResource, ok bool) {
	group, rest, ok := strings.Cut(key, "/")
	if !ok {
		return gr, false
	}
	resource, _, ok := strings.Cut(rest, "/")
	if !ok || group == "" || resource == "" {
		return gr, false
	}
	if group == "core" {
		group = ""
	}
	return schema.GroupResource{Group: group, Resource: resource}, true
}

// NamesOf is the inverse of Key: the namespace and name of the object stored at key.
func (r *Resource) NamesOf(key string) (namespace, name string) {
	rest := strings.TrimPrefix(key, r.Prefix(""))
	if ns, n, ok := strings.Cut(rest, "/"); ok && r.Namespaced {
		return ns, n
	}
	return "", rest
}

// SortVersions sorts version names newest first in Kubernetes-aware order
// (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > other strings).
func SortVersions(vs []string) {
	slices.SortStableFunc(vs, func(a, b string) int {
		return -version.CompareKubeAwareVersionStrings(a, b)
	})
}

// APIVersion returns the apiVersion string of version v of the resource.
func (r *Resource) APIVersion(v string) string {
	return r.GroupVersion(v).String()
}

// versionOf returns the version name carried by an apiVersion string of this
// resource's group, or an error if the group differs.
func (r *Resource) versionOf(apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", err
	}
	if gv.Group != r.Group || gv.Version == "" || strings.Contains(gv.Version, "/") {
		return "", fmt.Errorf("apiVersion %q does not belong to group %q", apiVersion, r.Group)
	}
	return gv.Version, nil
}

// StorageVersionHash is the opaque hash of the storage version's group, version and
// kind that discovery publishes (the first 8 bytes of its SHA-256, base64). Clients
// compare hashes for equality only: a change means objects may need migration.
func (r *Resource) StorageVersionHash() string {
	if r.Shared != nil {
		return wire.StorageVersionHash(r.Shared.Stored.Group, r.Shared.Stored.Version, r.Shared.Stored.Kind)
	}
	return wire.StorageVersionHash(r.Group, r.StorageVersion, r.Names.Kind)
}
