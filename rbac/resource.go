package rbac

import (
	"errors"
	"fmt"
	"strings"

	"github.com/concordproject/concord/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The four RBAC resources.
var (
	RolesGR               = schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}
	ClusterRolesGR        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	RoleBindingsGR        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}
	ClusterRoleBindingsGR = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
)

var (
	// ErrUndecodable means an object is not a valid rbac.authorization.k8s.io/v1
	// object of its kind.
	ErrUndecodable = errors.New("cannot decode the object as its rbac.authorization.k8s.io/v1 kind")
	// ErrWrongResource means a Configure function was given another resource.
	ErrWrongResource = errors.New("not the resource this function configures")
)

// ConfigureRoleBindings gives res, the rolebindings resource, kubectl's columns.
// Its defaults and validation are Kubernetes' (package kubesemantics).
func ConfigureRoleBindings(res *registry.Resource) error {
	return configureBinding(res, RoleBindingsGR)
}

// ConfigureClusterRoleBindings gives res, the clusterrolebindings resource, what
// ConfigureRoleBindings gives RoleBindings.
func ConfigureClusterRoleBindings(res *registry.Resource) error {
	return configureBinding(res, ClusterRoleBindingsGR)
}

// configureBinding sets the table hook of res, which must be gr, if the catalog
// gives it kubectl's columns.
func configureBinding(res *registry.Resource, gr schema.GroupResource) error {
	if res.GroupResource() != gr {
		return fmt.Errorf("%w: %s, want %s", ErrWrongResource, res.GroupResource(), gr)
	}
	if res.HasPrinterColumns(bindingColumns) {
		if res.Hooks == nil {
			res.Hooks = &registry.Hooks{}
		}
		res.Hooks.TableCells = bindingCells
	}
	return nil
}

// fromUnstructured decodes obj as a T; an error wraps ErrUndecodable.
func fromUnstructured[T any](obj map[string]interface{}) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return out, nil
}

// bindingColumns are the printer columns bindingCells fills, the catalog's (kubectl's).
var bindingColumns = []string{"Role", "Age", "Users", "Groups", "ServiceAccounts"}

// bindingCells prints a binding as kubectl shows it: ROLE as Kind/name, its age, and
// its users, groups and service accounts (namespace/name).
func bindingCells(obj *unstructured.Unstructured) []interface{} {
	kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
	name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
	subjects, _ := obj.Object["subjects"].([]interface{})
	var users, groups, sas []string
	for _, s := range subjects {
		m, _ := s.(map[string]interface{})
		n, _ := m["name"].(string)
		switch m["kind"] {
		case rbacv1.UserKind:
			users = append(users, n)
		case rbacv1.GroupKind:
			groups = append(groups, n)
		case rbacv1.ServiceAccountKind:
			ns, _ := m["namespace"].(string)
			sas = append(sas, ns+"/"+n)
		}
	}
	return []interface{}{kind + "/" + name, metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp()),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
