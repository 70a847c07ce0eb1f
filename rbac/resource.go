package rbac

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/concordproject/concord/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// ConfigureRoles gives res, the roles resource, Kubernetes' API-server behaviour:
// path-segment names and the validation of rules.
func ConfigureRoles(res *registry.Resource) error {
	return configure(res, RolesGR, "rules", roleErrors)
}

// ConfigureClusterRoles gives res, the clusterroles resource, Kubernetes' API-server
// behaviour: path-segment names and the validation of rules and aggregation rules.
func ConfigureClusterRoles(res *registry.Resource) error {
	return configure(res, ClusterRolesGR, "rules", clusterRoleErrors)
}

// ConfigureRoleBindings gives res, the rolebindings resource, Kubernetes' API-server
// behaviour: the defaults of roleRef.apiGroup and subjects' apiGroup, path-segment
// names, the validation of roleRef (immutable) and subjects, and kubectl's columns.
func ConfigureRoleBindings(res *registry.Resource) error {
	return configureBinding(res, RoleBindingsGR, func(b, old *rbacv1.RoleBinding) field.ErrorList {
		if old == nil {
			return bindingErrors(b.RoleRef, b.Subjects, true, nil)
		}
		return bindingErrors(b.RoleRef, b.Subjects, true, &bindingState{old.RoleRef, old.Subjects})
	})
}

// ConfigureClusterRoleBindings gives res, the clusterrolebindings resource, what
// ConfigureRoleBindings gives RoleBindings; only ClusterRoles may be bound, and
// service account subjects must name their namespace.
func ConfigureClusterRoleBindings(res *registry.Resource) error {
	return configureBinding(res, ClusterRoleBindingsGR, func(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
		if old == nil {
			return bindingErrors(b.RoleRef, b.Subjects, false, nil)
		}
		return bindingErrors(b.RoleRef, b.Subjects, false, &bindingState{old.RoleRef, old.Subjects})
	})
}

// configure sets the name and validation hooks of res, which must be gr: validate
// checks the object decoded as T (old nil on creation). An object that does not
// decode is reported at the field top.
func configure[T any](res *registry.Resource, gr schema.GroupResource, top string, validate func(obj, old *T) field.ErrorList) error {
	if res.GroupResource() != gr {
		return fmt.Errorf("%w: %s, want %s", ErrWrongResource, res.GroupResource(), gr)
	}
	if res.Hooks == nil {
		res.Hooks = &registry.Hooks{}
	}
	res.Hooks.ValidateName = ValidateName
	res.Hooks.Validate = func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
		o, err := fromUnstructured[T](obj.Object)
		if err != nil {
			return field.ErrorList{field.Invalid(field.NewPath(top), nil, err.Error())}
		}
		return validate(o, nil)
	}
	res.Hooks.ValidateUpdate = func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
		o, err := fromUnstructured[T](obj.Object)
		if err != nil {
			return field.ErrorList{field.Invalid(field.NewPath(top), nil, err.Error())}
		}
		prev, err := fromUnstructured[T](old.Object)
		if err != nil {
			prev = nil // what is stored does not decode: check the update as new
		}
		return validate(o, prev)
	}
	return nil
}

// configureBinding adds to configure the defaults and columns of bindings.
func configureBinding[T any](res *registry.Resource, gr schema.GroupResource, validate func(obj, old *T) field.ErrorList) error {
	if err := configure(res, gr, "subjects", validate); err != nil {
		return err
	}
	res.Hooks.PrepareForCreate = func(_ context.Context, obj *unstructured.Unstructured) { setBindingDefaults(obj.Object) }
	res.Hooks.PrepareForUpdate = func(_ context.Context, obj, _ *unstructured.Unstructured) { setBindingDefaults(obj.Object) }
	if res.HasPrinterColumns(bindingColumns) {
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

// setBindingDefaults sets the defaults Kubernetes gives a binding when it decodes one:
// roleRef.apiGroup, and the apiGroup of User and Group subjects, are
// rbac.authorization.k8s.io when unset.
func setBindingDefaults(obj map[string]interface{}) {
	if v, ok := obj["roleRef"]; !ok || v == nil {
		obj["roleRef"] = map[string]interface{}{}
	}
	if ref, ok := obj["roleRef"].(map[string]interface{}); ok && unset(ref, "apiGroup") {
		ref["apiGroup"] = rbacv1.GroupName
	}
	subjects, _ := obj["subjects"].([]interface{})
	for _, s := range subjects {
		m, ok := s.(map[string]interface{})
		if !ok || !unset(m, "apiGroup") {
			continue
		}
		if k := m["kind"]; k == rbacv1.UserKind || k == rbacv1.GroupKind {
			m["apiGroup"] = rbacv1.GroupName
		}
	}
}

// unset reports whether m has no key, or null or "" under it.
func unset(m map[string]interface{}, key string) bool {
	v, ok := m[key]
	return !ok || v == nil || v == ""
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
