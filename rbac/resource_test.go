package rbac

import (
	"errors"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/registry"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// catalogResource returns the catalog's definition of gr, configured by configure and
// prepared.
func catalogResource(t *testing.T, gr schema.GroupResource, configure func(*registry.Resource) error) *registry.Resource {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := compatibility.Resources(cat, compatibility.Default(cat.BinaryVersion()))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.GroupResource() != gr {
			continue
		}
		if err := configure(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Prepare(t.Context()); err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Fatalf("the catalog has no %s", gr)
	return nil
}

func object(kind, name string, fields map[string]interface{}) *unstructured.Unstructured {
	obj := map[string]interface{}{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
		"metadata": map[string]interface{}{"name": name, "namespace": "ns", "resourceVersion": "1"},
	}
	if strings.HasPrefix(kind, "Cluster") {
		unstructured.RemoveNestedField(obj, "metadata", "namespace")
	}
	for k, v := range fields {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestConfigureWrongResource(t *testing.T) {
	res := &registry.Resource{Group: "rbac.authorization.k8s.io"}
	res.Names.Plural = "clusterroles"
	if err := ConfigureRoles(res); !errors.Is(err, ErrWrongResource) {
		t.Errorf("ConfigureRoles(clusterroles) = %v, want ErrWrongResource", err)
	}
}

func TestResourceValidation(t *testing.T) {
	roles := catalogResource(t, RolesGR, ConfigureRoles)
	clusterRoles := catalogResource(t, ClusterRolesGR, ConfigureClusterRoles)
	bindings := catalogResource(t, RoleBindingsGR, ConfigureRoleBindings)
	noVerbs := []interface{}{map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"pods"}}}
	ref := func(kind, name string) map[string]interface{} {
		return map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}
	}
	for _, tc := range []struct {
		name     string
		res      *registry.Resource
		obj, old *unstructured.Unstructured
		want     string // the Invalid error's message; "" for valid
	}{
		{name: "valid name with colons", res: roles, obj: object("Role", "system:reader", nil)},
		{name: "name with a slash", res: roles, obj: object("Role", "a/b", nil),
			want: `Role.rbac.authorization.k8s.io "a/b" is invalid: metadata.name: Invalid value: "a/b": may not contain '/'`},
		{name: "rule without verbs", res: roles, obj: object("Role", "r", map[string]interface{}{"rules": noVerbs}),
			want: `Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value`},
		{name: "cluster role with a namespace-less name", res: clusterRoles, obj: object("ClusterRole", "system:view", map[string]interface{}{
			"rules": []interface{}{map[string]interface{}{"verbs": []interface{}{"get"}, "nonResourceURLs": []interface{}{"/healthz"}}}})},
		{name: "undecodable", res: roles, obj: object("Role", "r", map[string]interface{}{"rules": []interface{}{map[string]interface{}{"verbs": "get"}}}),
			want: `Role.rbac.authorization.k8s.io "r" is invalid: [rules[0].verbs: Invalid value: "string": rules[0].verbs in body must be of type array: "string", rules: Invalid value: null: cannot decode the object as its rbac.authorization.k8s.io/v1 kind`},
		{name: "binding update changing roleRef", res: bindings,
			obj:  object("RoleBinding", "b", map[string]interface{}{"roleRef": ref("ClusterRole", "edit")}),
			old:  object("RoleBinding", "b", map[string]interface{}{"roleRef": ref("ClusterRole", "view")}),
			want: `RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: field is immutable`},
		{name: "binding update of subjects", res: bindings,
			obj: object("RoleBinding", "b", map[string]interface{}{"roleRef": ref("ClusterRole", "edit"),
				"subjects": []interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": "robot"}}}),
			old: object("RoleBinding", "b", map[string]interface{}{"roleRef": ref("ClusterRole", "edit")})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.old == nil {
				err = tc.res.ValidateCreate(t.Context(), "v1", tc.obj)
			} else {
				err = tc.res.ValidateUpdate(t.Context(), "v1", "", tc.obj, tc.old)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (!apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("error %v, want Invalid: %s", err, tc.want)
			}
		})
	}
}

func TestBindingDefaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		obj, want map[string]interface{}
	}{
		{
			name: "roleRef and subjects",
			obj: map[string]interface{}{"roleRef": map[string]interface{}{"kind": "Role", "name": "r"}, "subjects": []interface{}{
				map[string]interface{}{"kind": "User", "name": "u"},
				map[string]interface{}{"kind": "Group", "name": "g", "apiGroup": nil},
				map[string]interface{}{"kind": "ServiceAccount", "name": "sa"},
				map[string]interface{}{"kind": "User", "name": "v", "apiGroup": "example.com"},
			}},
			want: map[string]interface{}{"roleRef": map[string]interface{}{"kind": "Role", "name": "r", "apiGroup": "rbac.authorization.k8s.io"}, "subjects": []interface{}{
				map[string]interface{}{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
				map[string]interface{}{"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"},
				map[string]interface{}{"kind": "ServiceAccount", "name": "sa"},
				map[string]interface{}{"kind": "User", "name": "v", "apiGroup": "example.com"},
			}},
		},
		{
			name: "no roleRef",
			obj:  map[string]interface{}{},
			want: map[string]interface{}{"roleRef": map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setBindingDefaults(tc.obj)
			if diff := cmp.Diff(tc.want, tc.obj); diff != "" {
				t.Errorf("defaulted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindingHooks(t *testing.T) {
	for _, tc := range []struct {
		gr        schema.GroupResource
		configure func(*registry.Resource) error
	}{{RoleBindingsGR, ConfigureRoleBindings}, {ClusterRoleBindingsGR, ConfigureClusterRoleBindings}} {
		t.Run(tc.gr.Resource, func(t *testing.T) {
			res := catalogResource(t, tc.gr, tc.configure)
			obj := object("RoleBinding", "b", map[string]interface{}{
				"roleRef": map[string]interface{}{"kind": "ClusterRole", "name": "view"},
				"subjects": []interface{}{
					map[string]interface{}{"kind": "User", "name": "alice"},
					map[string]interface{}{"kind": "User", "name": "bob"},
					map[string]interface{}{"kind": "Group", "name": "dev"},
					map[string]interface{}{"kind": "ServiceAccount", "name": "robot", "namespace": "ns"},
				},
			})
			res.Hooks.PrepareForCreate(t.Context(), obj)
			if g, _, _ := unstructured.NestedString(obj.Object, "roleRef", "apiGroup"); g != "rbac.authorization.k8s.io" {
				t.Errorf("roleRef.apiGroup %q after PrepareForCreate", g)
			}
			if res.Hooks.TableCells == nil {
				t.Fatal("no TableCells hook for the catalog's columns")
			}
			cells := res.Hooks.TableCells(obj)
			want := []interface{}{"ClusterRole/view", "<unknown>", "alice, bob", "dev", "ns/robot"}
			if diff := cmp.Diff(want, cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
		})
	}
}
