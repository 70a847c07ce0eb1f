package rbac

import (
	"errors"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/registry"
	"github.com/google/go-cmp/cmp"
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
	if err := ConfigureRoleBindings(res); !errors.Is(err, ErrWrongResource) {
		t.Errorf("ConfigureRoleBindings(clusterroles) = %v, want ErrWrongResource", err)
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
			if res.Hooks == nil || res.Hooks.TableCells == nil {
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
