package kubesemantics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
)

// The helpers of the tests of the control plane's own groups (rbac, coordination,
// certificates, admissionregistration, flowcontrol, internal.apiserver): a resource
// configured with Semantics at 1.37, objects run through its create and update.

// cpSemantics are the semantics of a server at 1.37 (minimum compatibility 1.36).
func cpSemantics(t *testing.T) *Semantics { return cpSemanticsAt(t, "1.37", "1.36") }

// cpSemanticsAt are the semantics of a server at emulation and minCompatibility.
func cpSemanticsAt(t *testing.T, emulation, minCompatibility string) *Semantics {
	t.Helper()
	gates, err := NewGates(version.MustParse(emulation), version.MustParse(minCompatibility), nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(gates)
}

// cpResource returns the catalog's group/plural, every version of it, configured.
func cpResource(t *testing.T, group, plural string) *registry.Resource {
	t.Helper()
	r := cpResourceUnconfigured(t, group, plural)
	cpConfigure(t, r)
	return r
}

// cpResourceUnconfigured returns the catalog's group/plural.
func cpResourceUnconfigured(t *testing.T, group, plural string) *registry.Resource {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cr := c.Resource(group, plural)
	if cr == nil {
		t.Fatalf("the catalog has no %s.%s", plural, group)
	}
	r, err := cr.RegistryResource(catalog.Selection{StorageVersion: cr.Versions[0].Name})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cpHandResource returns a resource the catalog lacks, built by hand, configured.
func cpHandResource(t *testing.T, group, plural, kind string, namespaced, status bool, versions ...string) *registry.Resource {
	t.Helper()
	r := &registry.Resource{Group: group, Namespaced: namespaced, StorageVersion: versions[0],
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"}}
	for _, v := range versions {
		rv := registry.Version{Name: v, Served: true}
		if status {
			rv.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
		}
		r.Versions = append(r.Versions, rv)
	}
	cpConfigure(t, r)
	return r
}

func cpConfigure(t *testing.T, r *registry.Resource) {
	t.Helper()
	if !cpSemantics(t).Configure(r) {
		t.Fatalf("Configure(%s) = false, want a strategy for every version", r.GroupResource())
	}
}

// cpObject returns obj, of kind in group version v, as an unstructured object.
func cpObject(t *testing.T, r *registry.Resource, v string, obj runtime.Object) *registry.Object {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(r.GroupVersion(v).String())
	u.SetKind(r.Names.Kind)
	return u
}

// cpCreate defaults obj, as the server decodes it, and creates it: it returns the
// object prepared and the errors found.
func cpCreate(ctx context.Context, t *testing.T, r *registry.Resource, v string, obj runtime.Object) (*registry.Object, field.ErrorList) {
	t.Helper()
	u := cpObject(t, r, v, obj)
	if err := r.Semantics.Default(v, u); err != nil {
		t.Fatal(err)
	}
	errs, err := r.Semantics.Create(ctx, v, u)
	if err != nil {
		t.Fatal(err)
	}
	return u, errs
}

// cpUpdate defaults obj and updates old (an object cpCreate returned) to it, or
// old's subresource.
func cpUpdate(ctx context.Context, t *testing.T, r *registry.Resource, v, subresource string, obj runtime.Object, old *registry.Object) (*registry.Object, field.ErrorList) {
	t.Helper()
	u := cpObject(t, r, v, obj)
	if err := r.Semantics.Default(v, u); err != nil {
		t.Fatal(err)
	}
	errs, err := r.Semantics.Update(ctx, v, subresource, u, old)
	if err != nil {
		t.Fatal(err)
	}
	return u, errs
}

// cpInto converts u into out, a typed object.
func cpInto(t *testing.T, u *registry.Object, out runtime.Object) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
}

// cpWant checks that errs are exactly want, each "path: type" with the type as
// field.ErrorType prints it ("Required value"), in any order.
func cpWant(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s: %s", e.Field, e.Type))
	}
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Errorf("%s: errors %q, want %q\n%v", what, got, w, errs.ToAggregate())
	}
}

// cpDetail checks that errs has an error at path whose text has want.
func cpDetail(t *testing.T, what string, errs field.ErrorList, path, want string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == path && strings.Contains(e.Error(), want) {
			return
		}
	}
	t.Errorf("%s: no error at %s saying %q in %v", what, path, want, errs.ToAggregate())
}
