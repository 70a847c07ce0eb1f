package storageversion

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
// 403), the servers' encryption keys written with their entries (a status
// annotation), and the Table columns NAME, COMMONENCODINGVERSION, STORAGEVERSIONS
// and AGE. Its validation is Kubernetes' (package kubesemantics). res must be the
// storageversions resource, not yet in a registry.
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
		Writable:    w.writable,
		AdmitCreate: w.admitCreate,
		TableCells:  tableCells,
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
