package builtin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func catalogResources(t *testing.T) []*registry.Resource {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := compatibility.Resources(cat, compatibility.Default(cat.BinaryVersion()))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func find(rs []*registry.Resource, gr schema.GroupResource) *registry.Resource {
	for _, r := range rs {
		if r.GroupResource() == gr {
			return r
		}
	}
	return nil
}

// Every resource with behaviour gets it, through the one table; the others none.
func TestConfigure(t *testing.T) {
	rs, err := Configure(catalogResources(t), Options{EventTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for gr := range configurers(Options{}) {
		if r := find(rs, gr); r != nil && r.Hooks == nil && r.TTL == 0 && r.GarbageCollection.OrphanByDefault == nil {
			t.Errorf("%s has no behaviour", gr)
		}
	}
	if cj := find(rs, cronJobsGR); !slices.Equal(cj.GarbageCollection.OrphanByDefault, []string{"v1beta1"}) {
		t.Errorf("cronjobs: garbage collection %+v", cj.GarbageCollection)
	}
	for _, gr := range []schema.GroupResource{coreEventsGR, eventsGR} {
		if !find(rs, gr).GarbageCollection.Unsupported {
			t.Errorf("%s wait for the garbage collector", gr)
		}
	}
	if ev := find(rs, coreEventsGR); ev.TTL != time.Hour || ev.Hooks == nil || ev.Hooks.TableCells == nil || len(ev.Versions[0].SelectableFields) == 0 {
		t.Errorf("core events: TTL %v, hooks %+v", ev.TTL, ev.Hooks)
	}
	if l := find(rs, leasesGR); l.Hooks == nil || !l.Hooks.AllowCreateOnUpdate {
		t.Error("leases are not created by PUT")
	}
	if cm := find(rs, schema.GroupResource{Resource: "configmaps"}); cm.Hooks != nil {
		t.Error("configmaps got behaviour")
	}

	var withoutLeases []*registry.Resource
	for _, r := range catalogResources(t) {
		if r.GroupResource() != leasesGR {
			withoutLeases = append(withoutLeases, r)
		}
	}
	if _, err := Configure(withoutLeases, Options{}); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "leases") {
		t.Errorf("a catalog without leases: %v", err)
	}
}

// The StorageVersionMigration rules run after the hooks the resource had, keep its
// other hooks and leave the original Hooks value alone.
func TestStorageVersionMigrationHooks(t *testing.T) {
	baseErr := field.Forbidden(field.NewPath("metadata", "name"), "base hook")
	base := &registry.Hooks{
		AllowCreateOnUpdate: true,
		Validate: func(context.Context, *unstructured.Unstructured) field.ErrorList {
			return field.ErrorList{baseErr}
		},
	}
	res := &registry.Resource{
		Group:          storageVersionMigrationsGR.Group,
		Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: storageVersionMigrationsGR.Resource, Kind: "StorageVersionMigration"},
		Versions:       []registry.Version{{Name: "v1", Served: true}},
		StorageVersion: "v1",
		Hooks:          base,
	}
	if err := configureStorageVersionMigrations(res); err != nil {
		t.Fatal(err)
	}
	h := res.Hooks
	if h == base || !h.AllowCreateOnUpdate || base.ValidateUpdate != nil {
		t.Fatalf("hooks not merged into a copy: %+v (base %+v)", h, base)
	}
	obj := &unstructured.Unstructured{Object: svm("", "", nil)}
	if errs := h.Validate(t.Context(), obj); len(errs) != 2 || errs[0].Detail != "base hook" || errs[1].Field != "spec.resource.resource" {
		t.Errorf("create errors %v", errs)
	}
	if errs := base.Validate(t.Context(), obj); len(errs) != 1 {
		t.Errorf("the base hook changed: %v", errs)
	}
	succeeded := []interface{}{map[string]interface{}{"type": "Succeeded", "status": "True", "reason": "Done", "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z"}}
	old := &unstructured.Unstructured{Object: svm("", "pods", map[string]interface{}{"resourceVersion": "7", "conditions": succeeded})}
	upd := &unstructured.Unstructured{Object: svm("", "pods", map[string]interface{}{"resourceVersion": "8", "conditions": succeeded})}
	if errs := h.ValidateUpdate(t.Context(), upd, old); len(errs) != 1 || errs[0].Field != "status.resourceVersion" {
		t.Errorf("update errors %v", errs)
	}

	res.Hooks = nil
	if err := configureStorageVersionMigrations(res); err != nil {
		t.Fatal(err)
	}
	if res.Hooks == nil || res.Hooks.Validate == nil || res.Hooks.ValidateUpdate == nil {
		t.Fatalf("no validation hooks: %+v", res.Hooks)
	}
	if errs := res.Hooks.Validate(t.Context(), &unstructured.Unstructured{Object: svm("", "pods", nil)}); len(errs) > 0 {
		t.Errorf("a valid migration: %v", errs)
	}
}

func svm(group, resource string, status map[string]interface{}) map[string]interface{} {
	obj := map[string]interface{}{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]interface{}{"name": "m"},
		"spec":     map[string]interface{}{"resource": map[string]interface{}{"group": group, "resource": resource}},
	}
	if status != nil {
		obj["status"] = status
	}
	return obj
}

// Concord's StorageVersionMigration definition is the same whatever the release: the
// catalog's (whose versions and storage version follow the release) is replaced, and
// a catalog without it gets it too.
func TestOwnStorageVersionMigrations(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	var defs []string
	for _, binary := range []string{"1.34", "1.36", "1.37"} {
		c, err := (&compatibility.Options{Catalog: cat, BinaryVersion: binary}).Complete(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		rs, err := c.Resources()
		if err != nil {
			t.Fatal(err)
		}
		rs, err = Configure(rs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		var def string
		for _, r := range rs {
			if r.GroupResource() == storageVersionMigrationsGR {
				n++
				def = fmt.Sprintf("storage %s, versions", r.StorageVersion)
				for _, v := range r.Versions {
					def += fmt.Sprintf(" %s(served=%v)", v.Name, v.Served)
				}
				if r.Hooks == nil || r.Hooks.Validate == nil {
					t.Errorf("binary %s: no validation", binary)
				}
			}
		}
		if n != 1 {
			t.Fatalf("binary %s: %d StorageVersionMigration resources", binary, n)
		}
		defs = append(defs, def)
	}
	if defs[0] != defs[1] || defs[1] != defs[2] || defs[0] != "storage v1, versions v1(served=true) v1beta1(served=true)" {
		t.Errorf("definitions by release: %q", defs)
	}
}
