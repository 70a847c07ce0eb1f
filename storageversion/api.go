package storageversion

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/server/request"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// GroupResource is the StorageVersion resource.
var GroupResource = schema.GroupResource{Group: apiserverinternalv1alpha1.GroupName, Resource: "storageversions"}

// version is the version StorageVersions are read and written in by this package.
const version = "v1alpha1"

// ErrNotServer is the reason any user but an API server is refused writes to
// StorageVersions.
var ErrNotServer = errors.New("only the API servers write StorageVersions: each reports what it encodes objects in, under its own identity")

// Configure gives the storageversions resource its behaviour: only the servers' own
// loopback identity may write (everyone else, even members of system:masters, gets
// 403), Kubernetes' validation (names, entries, the common encoding version,
// conditions), updates only with a resourceVersion, and the Table columns NAME,
// COMMONENCODINGVERSION, STORAGEVERSIONS and AGE. res must be the storageversions
// resource, not yet in a registry.
func Configure(res *registry.Resource) error { return ConfigureWith(APIOptions{})(res) }

// Publishers returns the groups whose StorageVersions user may write as an aggregated
// API server registered behind this one (package aggregator), or none.
type Publishers func(user string) (groups []string)

// APIOptions say who besides the servers' own loopback identity writes StorageVersions.
type APIOptions struct {
	// Publishers names the aggregated servers' identities, which may write the
	// StorageVersions of their groups, and no other.
	Publishers Publishers
	// Unmaintained is set when this server does not maintain StorageVersions (the
	// StorageVersionAPI gate is off, the API served by --runtime-config): whoever the
	// authorizer allows may then delete them, so that an administrator can clear
	// those servers left behind; nobody may create or update them.
	Unmaintained bool
}

// ConfigureWith is Configure with opts.
func ConfigureWith(opts APIOptions) func(*registry.Resource) error {
	return func(res *registry.Resource) error { return configure(res, opts) }
}

func configure(res *registry.Resource, opts APIOptions) error {
	w := writer{publishers: opts.Publishers, unmaintained: opts.Unmaintained}
	res.Hooks = &registry.Hooks{
		Writable:         w.writable,
		AdmitCreate:      w.admitCreate,
		ValidateName:     validateName,
		Validate:         validateCreate,
		ValidateUpdate:   validateUpdate,
		PrepareForCreate: func(_ context.Context, obj *unstructured.Unstructured) { delete(obj.Object, "status") },
		TableCells:       tableCells,
	}
	for i := range res.Versions {
		res.Versions[i].PrinterColumns = printerColumns()
	}
	res.StatusAnnotations = []string{wire.AnnotationEncryptionKeys}
	return nil
}

// printerColumns are the columns kubectl shows; tableCells fills them.
func printerColumns() []apiextensionsv1.CustomResourceColumnDefinition {
	return []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "CommonEncodingVersion", Type: "string", JSONPath: ".status.commonEncodingVersion",
			Description: "The encoding version every API server uses, if they agree."},
		{Name: "StorageVersions", Type: "string", JSONPath: ".status.storageVersions",
			Description: "The encoding version each API server reports, as id=version (the first three, then how many more)."},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
	}
}

// writer decides who writes StorageVersions: the servers' loopback user, and the
// aggregated servers publishers names, each for its groups only.
type writer struct {
	publishers   Publishers
	unmaintained bool
}

// writable admits the loopback user, and an aggregated server's identity for the
// StorageVersion the URL names, if of its groups (a creation names it in its body:
// admitCreate decides).
func (w writer) writable(ctx context.Context) error {
	u, ok := auth.UserFrom(ctx)
	if ok && u.Name == auth.LoopbackUser {
		return nil
	}
	info, _ := request.InfoFrom(ctx)
	if w.unmaintained && info != nil && (info.Verb == "delete" || info.Verb == "deletecollection") {
		return nil // clearing what servers with the API on left behind
	}
	if !ok || w.publishers == nil {
		return ErrNotServer
	}
	groups := w.publishers(u.Name)
	if len(groups) == 0 {
		return ErrNotServer
	}
	if info == nil || info.Verb == "create" {
		return nil
	}
	return ownGroup(groups, info.Name)
}

// admitCreate lets an aggregated server create only the StorageVersions of its groups.
// Writes without a user are the servers' own, through the store (the manager's).
func (w writer) admitCreate(ctx context.Context, obj *unstructured.Unstructured) error {
	u, ok := auth.UserFrom(ctx)
	if !ok || u.Name == auth.LoopbackUser {
		return nil
	}
	var groups []string
	if w.publishers != nil {
		groups = w.publishers(u.Name)
	}
	if err := ownGroup(groups, obj.GetName()); err != nil {
		return apierrors.NewForbidden(GroupResource, obj.GetName(), err)
	}
	return nil
}

// ownGroup checks that StorageVersion name is of one of groups.
func ownGroup(groups []string, name string) error {
	gr, ok := wire.ParseStorageVersionName(name)
	if ok && slices.Contains(groups, gr.Group) {
		return nil
	}
	return fmt.Errorf("%w; an aggregated API server writes only those of the groups its APIServices register (%s)", ErrNotServer, strings.Join(groups, ", "))
}

// validateName checks "<group>.<resource>": the group a DNS-1123 subdomain, the
// resource a DNS-1035 label, in Kubernetes' words.
func validateName(name string, _ bool) []string {
	i := strings.LastIndex(name, ".")
	if i < 0 {
		return []string{"name must be in the form of <group>.<resource>"}
	}
	var msgs []string
	for _, m := range utilvalidation.IsDNS1123Subdomain(name[:i]) {
		msgs = append(msgs, "the group segment "+m)
	}
	for _, m := range utilvalidation.IsDNS1035Label(name[i+1:]) {
		msgs = append(msgs, "the resource segment "+m)
	}
	return msgs
}

func validateCreate(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
	return validateStatus(obj)
}

func validateUpdate(_ context.Context, obj, _ *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if obj.GetResourceVersion() == "" {
		// Kubernetes allows no unconditional update of StorageVersions: every writer
		// must have read what it replaces.
		errs = append(errs, field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update"))
	}
	return append(errs, validateStatus(obj)...)
}

// validateStatus checks the status of obj (already of the schema's shape).
func validateStatus(obj *unstructured.Unstructured) field.ErrorList {
	sv, err := fromUnstructured(obj)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("status"), "", err.Error())}
	}
	return ValidateStatus(&sv.Status, field.NewPath("status"))
}

// ValidateStatus checks a StorageVersion status as Kubernetes does: unique server IDs,
// each entry valid (DNS-subdomain ID, apiVersions, the encoding version among the
// decodable ones, every served version decodable), commonEncodingVersion equal to the
// value the entries imply, and conditions with unique types, a reason and a message.
func ValidateStatus(st *apiserverinternalv1alpha1.StorageVersionStatus, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	ids := sets.New[string]()
	for i := range st.StorageVersions {
		e := &st.StorageVersions[i]
		p := path.Child("storageVersions").Index(i)
		if ids.Has(e.APIServerID) {
			errs = append(errs, field.Duplicate(p.Child("apiServerID"), e.APIServerID))
		}
		ids.Insert(e.APIServerID)
		errs = append(errs, validateEntry(e, p)...)
	}
	errs = append(errs, validateCommonVersion(st, path.Child("commonEncodingVersion"))...)
	errs = append(errs, validateConditions(st.Conditions, path.Child("conditions"))...)
	return errs
}

func validateEntry(e *apiserverinternalv1alpha1.ServerStorageVersion, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, m := range apimachineryvalidation.NameIsDNSSubdomain(e.APIServerID, false) {
		errs = append(errs, field.Invalid(p.Child("apiServerID"), e.APIServerID, m))
	}
	if msgs := apiVersionErrors(e.EncodingVersion); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("encodingVersion"), e.EncodingVersion, strings.Join(msgs, ",")))
	}
	decodable := sets.New[string]()
	for i, v := range e.DecodableVersions {
		if msgs := apiVersionErrors(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("decodableVersions").Index(i), v, strings.Join(msgs, ",")))
		}
		decodable.Insert(v)
	}
	if !decodable.Has(e.EncodingVersion) {
		errs = append(errs, field.Invalid(p.Child("decodableVersions"), e.DecodableVersions,
			fmt.Sprintf("decodableVersions must include encodingVersion %s", e.EncodingVersion)))
	}
	for i, v := range e.ServedVersions {
		if msgs := apiVersionErrors(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("servedVersions").Index(i), v, strings.Join(msgs, ",")))
		}
		if !decodable.Has(v) {
			errs = append(errs, field.Invalid(p.Child("servedVersions").Index(i), v,
				fmt.Sprintf("individual served version : %s must be included in decodableVersions : %s", v, e.DecodableVersions)))
		}
	}
	return errs
}

// apiVersionErrors checks an apiVersion: a DNS-1035 version, optionally prefixed by a
// DNS-1123 subdomain group and "/".
func apiVersionErrors(apiVersion string) []string {
	parts := strings.Split(apiVersion, "/")
	if len(parts) > 2 {
		return []string{"an apiVersion is " + utilvalidation.RegexError(dns1035LabelErrMsg, dns1035LabelFmt, "my-name", "abc-123") +
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyVersion')"}
	}
	var msgs []string
	ver := parts[len(parts)-1]
	if len(parts) == 2 {
		if group := parts[0]; group == "" {
			msgs = append(msgs, "group part: "+utilvalidation.EmptyError())
		} else {
			for _, m := range utilvalidation.IsDNS1123Subdomain(group) {
				msgs = append(msgs, "group part: "+m)
			}
		}
	}
	if ver == "" {
		return append(msgs, "version part: "+utilvalidation.EmptyError())
	}
	for _, m := range utilvalidation.IsDNS1035Label(ver) {
		msgs = append(msgs, "version part: "+m)
	}
	return msgs
}

const (
	dns1035LabelFmt    = "[a-z]([-a-z0-9]*[a-z0-9])?"
	dns1035LabelErrMsg = "a DNS-1035 label, which must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
)

func validateCommonVersion(st *apiserverinternalv1alpha1.StorageVersionStatus, p *field.Path) field.ErrorList {
	actual := wire.CommonEncodingVersion(st.StorageVersions)
	switch {
	case actual == nil && st.CommonEncodingVersion == nil:
		return nil
	case actual == nil:
		return field.ErrorList{field.Invalid(p, *st.CommonEncodingVersion,
			"should be nil if servers do not agree on the same encoding version, or if there is no server reporting the supported versions yet")}
	case st.CommonEncodingVersion == nil:
		return field.ErrorList{field.Invalid(p, st.CommonEncodingVersion, fmt.Sprintf("the common encoding version is %s", *actual))}
	case *actual != *st.CommonEncodingVersion:
		return field.ErrorList{field.Invalid(p, *st.CommonEncodingVersion, fmt.Sprintf("the actual common encoding version is %s", *actual))}
	}
	return nil
}

func validateConditions(conds []apiserverinternalv1alpha1.StorageVersionCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[apiserverinternalv1alpha1.StorageVersionConditionType]int{}
	for i, c := range conds {
		cp := p.Index(i)
		if j, ok := seen[c.Type]; ok {
			errs = append(errs, field.Invalid(cp.Child("type"), string(c.Type),
				fmt.Sprintf("the type of the condition is not unique, it also appears in conditions[%d]", j)))
		}
		seen[c.Type] = i
		for _, m := range utilvalidation.IsQualifiedName(string(c.Type)) {
			errs = append(errs, field.Invalid(cp.Child("type"), string(c.Type), m))
		}
		for _, m := range utilvalidation.IsQualifiedName(string(c.Status)) {
			errs = append(errs, field.Invalid(cp.Child("status"), string(c.Status), m))
		}
		if c.Reason == "" {
			errs = append(errs, field.Required(cp.Child("reason"), "reason cannot be empty"))
		}
		if c.Message == "" {
			errs = append(errs, field.Required(cp.Child("message"), "message cannot be empty"))
		}
	}
	return errs
}

// fromUnstructured converts a stored StorageVersion to its Go type.
func fromUnstructured(obj *unstructured.Unstructured) (*apiserverinternalv1alpha1.StorageVersion, error) {
	sv := &apiserverinternalv1alpha1.StorageVersion{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, sv); err != nil {
		return nil, fmt.Errorf("StorageVersion %q: %w", obj.GetName(), err)
	}
	return sv, nil
}

// tableCells renders COMMONENCODINGVERSION (<unset> while servers disagree),
// STORAGEVERSIONS (id=encodingVersion for the first three entries, then "+ N more...")
// and AGE.
func tableCells(obj *unstructured.Unstructured) []interface{} {
	common, found, _ := unstructured.NestedString(obj.Object, "status", "commonEncodingVersion")
	if !found || common == "" {
		common = "<unset>"
	}
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "storageVersions")
	var parts []string
	for i, e := range entries {
		if i == 3 {
			break
		}
		m, _ := e.(map[string]interface{})
		id, _ := m["apiServerID"].(string)
		enc, _ := m["encodingVersion"].(string)
		parts = append(parts, id+"="+enc)
	}
	list := strings.Join(parts, ",")
	switch {
	case len(entries) == 0:
		list = "<unset>"
	case len(entries) > 3:
		list += fmt.Sprintf(" + %d more...", len(entries)-3)
	}
	return []interface{}{common, list, metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}
