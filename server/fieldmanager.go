package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdtyped "sigs.k8s.io/structured-merge-diff/v6/typed"
)

// resetFieldsFor says which fields a write through subresource may not set: those
// the resource's semantics declare for it or, where they declare none, with a status
// subresource the main resource does not own status, and /status owns only it.
func resetFieldsFor(res *registry.Resource, version, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	apiVersion := fieldpath.APIVersion(res.GroupVersion(version).String())
	if res.Semantics != nil && res.Semantics.ResetFields != nil {
		if reset := res.Semantics.ResetFields[subresource]; reset != nil {
			return map[fieldpath.APIVersion]fieldpath.Filter{apiVersion: fieldpath.NewExcludeSetFilter(reset)}
		}
	}
	v := res.Version(version)
	if v == nil || v.Subresources == nil || v.Subresources.Status == nil {
		return nil
	}
	if subresource == "status" {
		return map[fieldpath.APIVersion]fieldpath.Filter{apiVersion: fieldpath.NewExcludeSetFilter(fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata")))}
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{apiVersion: fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))}
}

// typeConverter returns the structured-merge-diff type converter of res, built from
// its OpenAPI models (so list-type markers make lists granular). A resource whose
// models cannot be built falls back to the deduced converter (maps granular, lists
// atomic), as Kubernetes does for schemaless custom resources. Either walks maps in
// key order (openapi.Ordered), which keeps the managed fields of a create or update
// with a map of many keys from costing time quadratic in their number. (A
// server-side apply still is: structured-merge-diff merges the applied object into
// a value of its own before it compares, as kube-apiserver's does.)
func typeConverter(res *registry.Resource, _ string) managedfields.TypeConverter {
	tc, err := openapi.TypeConverter(res)
	if err != nil {
		return deducedTypeConverter
	}
	return openapi.Ordered(tc)
}

var deducedTypeConverter = openapi.Ordered(managedfields.NewDeducedTypeConverter())

// objectConvertor adapts a Resource's conversion, defaulting and object creation to
// the runtime interfaces the field manager expects. The hub version (__internal) is
// the object as it is.
type objectConvertor struct{ res *registry.Resource }

var (
	_ runtime.ObjectConvertor = (*objectConvertor)(nil)
	_ runtime.ObjectDefaulter = (*objectConvertor)(nil)
	_ runtime.ObjectCreater   = (*objectConvertor)(nil)
)

func (c *objectConvertor) Convert(in, out, _ interface{}) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	dst.Object = runtime.DeepCopyJSON(src.Object)
	return nil
}

func (c *objectConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		// Managed fields of another group: written through the other group of an
		// object served in two (core and events.k8s.io Events). Not registered, so
		// the field manager drops them, as kube-apiserver's does.
		return nil, runtime.NewNotRegisteredGVKErrForTarget("concord", u.GroupVersionKind(), target)
	}
	if gvk.Version == hubVersion || gvk.GroupVersion().String() == u.GetAPIVersion() {
		// Nothing to convert: the field manager only reads what it converts (and
		// defaults only objects it built itself), so the object itself will do.
		return u, nil
	}
	out := u.DeepCopy()
	// runtime.ObjectConvertor has no context; a conversion webhook bounds its own calls.
	if err := c.res.Convert(context.TODO(), []*unstructured.Unstructured{out}, gvk.Version); err != nil { //nolint:forbidigo // see above
		return nil, err
	}
	return out, nil
}

func (c *objectConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (c *objectConvertor) Default(in runtime.Object) {
	if u, ok := in.(*unstructured.Unstructured); ok {
		if gv, err := schema.ParseGroupVersion(u.GetAPIVersion()); err == nil {
			_ = c.res.Default(gv.Version, u) // validation refuses what defaulting could not take
		}
	}
}

func (c *objectConvertor) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	return emptyObject(c.res, gvk)
}

// emptyObject is the object of kind gvk before anything is set: as the resource's
// Semantics write it (a built-in kind's Go type has its struct fields, {} each, so a
// create owns the fields in them but not the structs themselves, as in Kubernetes),
// as its Go type writes it where the resource has kube's types without Semantics
// (CustomResourceDefinitions, APIServices), else with apiVersion and kind alone.
func emptyObject(res *registry.Resource, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	if sem := res.Semantics; sem != nil && sem.New != nil && gvk.Version != hubVersion {
		return sem.New(gvk.Version)
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if res.TypeConverter != nil && typedScheme.Recognizes(gvk) {
		// A kind of kube's Go types is created from their empty object, as
		// kube-apiserver compares a creation with it: its structs are there.
		typed, err := typedScheme.New(gvk)
		if err != nil {
			return nil, err
		}
		if u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(typed); err != nil {
			return nil, err
		}
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// hubVersion is the version managed fields are tracked in between conversions: like
// Kubernetes for custom resources, the unstructured object itself.
const hubVersion = runtime.APIVersionInternal

// fieldManager tracks managedFields for one resource version and subresource.
type fieldManager struct {
	fm  *managedfields.FieldManager
	res *registry.Resource

	// For trackCreate: the type converter, the kind and its empty object as a typed
	// value (nil if the converter refuses it), the fields the manager may not own
	// (resetFields), and the subresource.
	tc          managedfields.TypeConverter
	gvk         schema.GroupVersionKind
	emptyLive   *smdtyped.TypedValue
	reset       fieldpath.Filter
	subresource string
}

type fieldManagerKey struct{ version, subresource string }

// fieldManager returns the (cached) field manager of res at version for subresource.
func (s *Server) fieldManager(res *registry.Resource, version, subresource string) (*fieldManager, error) {
	v, err := res.Cached(fieldManagerKey{version, subresource}, func() (any, error) {
		gvk := res.GroupVersion(version).WithKind(res.Names.Kind)
		conv := &objectConvertor{res: res}
		resetFields := resetFieldsFor(res, version, subresource)
		tc := typeConverter(res, version)
		fm, err := managedfields.NewDefaultCRDFieldManager(tc, conv, conv, conv, gvk,
			schema.GroupVersion{Group: res.Group, Version: hubVersion}, subresource, resetFields)
		if err != nil {
			return nil, err
		}
		empty, err := emptyObject(res, gvk)
		if err != nil {
			return nil, err
		}
		emptyLive, err := tc.ObjectToTyped(empty, smdtyped.AllowDuplicates)
		if err != nil {
			emptyLive = nil // trackCreate then leaves creates to the field manager
		}
		return &fieldManager{fm: fm, res: res, tc: tc, gvk: gvk, emptyLive: emptyLive,
			reset: resetFields[fieldpath.APIVersion(gvk.GroupVersion().String())], subresource: subresource}, nil
	})
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("field manager for %s: %w", res.GroupResource(), err))
	}
	return v.(*fieldManager), nil
}

// track records in next's managedFields that manager set what changed since current
// (nil on create). Failures to track are not the client's fault and never fail the
// write (the Kubernetes behaviour): managedFields are then reset.
//
// An update that changes nothing a manager can own (a storage migration's rewrite, a
// controller writing back what it read) keeps current's entries without running the
// field manager, which would keep them too. The one thing skipped is the field
// manager's reconciliation of entries recorded under an older schema of the resource,
// which then happens at the next update that changes something.
func (f *fieldManager) track(current, next *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	if current != nil && ownershipUnchanged(current, next) {
		// Nothing a manager can own changed, and next brings no managedFields of its
		// own: the field manager would keep current's entries as they are.
		if mf, ok := nestedManagedFields(current); ok {
			_ = unstructured.SetNestedField(next.Object, runtime.DeepCopyJSONValue(mf), "metadata", "managedFields")
		} else {
			unstructured.RemoveNestedField(next.Object, "metadata", "managedFields")
		}
		return next
	}
	return f.trackWithFieldManager(current, next, manager)
}

// trackWithFieldManager is track done by apimachinery's field manager.
func (f *fieldManager) trackWithFieldManager(current, next *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	live := current
	if live == nil {
		live = &unstructured.Unstructured{Object: map[string]interface{}{}}
		live.SetGroupVersionKind(next.GroupVersionKind())
	}
	out, err := f.fm.Update(live, next, manager)
	if err == nil {
		if u, ok := out.(*unstructured.Unstructured); ok {
			return u
		}
		return next
	}
	// An object that does not fit its schema (a string where a number belongs) cannot
	// be tracked: it is the client's error, which validation answers with a 422, not
	// the server's. Anything else is logged as the field manager logs it.
	logger := klog.Background().WithValues("resource", f.res.GroupResource(), "object", klog.KObj(next))
	if _, typeErr := f.tc.ObjectToTyped(next, smdtyped.AllowDuplicates); typeErr != nil {
		logger.V(4).Info("Not tracking managedFields of an object that does not fit its schema", "err", typeErr)
	} else {
		logger.Error(err, "Failed to update managedFields; kept the live object's")
	}
	if mf, ok := nestedManagedFields(live); ok {
		_ = unstructured.SetNestedField(next.Object, runtime.DeepCopyJSONValue(mf), "metadata", "managedFields")
	} else {
		unstructured.RemoveNestedField(next.Object, "metadata", "managedFields")
	}
	return next
}

// maxUpdateManagers is the number of Update entries the field manager keeps before it
// merges the oldest (apimachinery's DefaultMaxUpdateManagers).
const maxUpdateManagers = 10

// ownershipUnchanged reports whether an update from current to next leaves the managed
// fields exactly as they are: every field a manager can own (all but the stripped
// metadata) is equal, next carries either no managedFields or current's, and current's
// entries are within the field manager's cap (which an update would otherwise apply).
func ownershipUnchanged(current, next *unstructured.Unstructured) bool {
	curMF, curHas := nestedManagedFields(current)
	nextMF, nextHas := nestedManagedFields(next)
	if nextHas && (!curHas || !equality.Semantic.DeepEqual(curMF, nextMF)) {
		return false
	}
	updates := 0
	for _, e := range curMF {
		if m, ok := e.(map[string]interface{}); ok && m["operation"] == string(metav1.ManagedFieldsOperationUpdate) {
			updates++
		}
	}
	if updates > maxUpdateManagers {
		return false
	}
	if len(current.Object) != len(next.Object) {
		return false
	}
	for k, v := range next.Object {
		cv, ok := current.Object[k]
		if !ok {
			return false
		}
		switch k {
		case "apiVersion", "kind":
			continue // stripped
		case "metadata":
			cm, ok1 := cv.(map[string]interface{})
			nm, ok2 := v.(map[string]interface{})
			if !ok1 || !ok2 || !equalExcept(cm, nm, strippedMetadata) {
				return false
			}
		default:
			if !equality.Semantic.DeepEqual(cv, v) {
				return false
			}
		}
	}
	return true
}

// strippedMetadataFields are the metadata fields no manager owns (with apiVersion,
// kind and metadata itself: apimachinery's stripMetaManager).
var strippedMetadataFields = []string{"name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
	"generation", "managedFields", "resourceVersion"}

// strippedMetadata is strippedMetadataFields as a set.
var strippedMetadata = sets.New(strippedMetadataFields...)

// equalExcept reports whether a and b are equal outside the keys in skip.
func equalExcept(a, b map[string]interface{}, skip sets.Set[string]) bool {
	for k, v := range a {
		if skip.Has(k) {
			continue
		}
		if w, ok := b[k]; !ok || !equality.Semantic.DeepEqual(v, w) {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !skip.Has(k) {
			return false
		}
	}
	return true
}

// nestedManagedFields returns obj's metadata.managedFields and whether it has the key.
func nestedManagedFields(obj *unstructured.Unstructured) ([]interface{}, bool) {
	meta, ok := obj.Object["metadata"].(map[string]interface{})
	if !ok {
		return nil, false
	}
	v, ok := meta["managedFields"]
	if !ok {
		return nil, false
	}
	l, _ := v.([]interface{})
	return l, true
}

// stripFromManaged are the fields no manager owns, as field paths.
var stripFromManaged = func() *fieldpath.Set {
	set := fieldpath.NewSet(fieldpath.MakePathOrDie("apiVersion"), fieldpath.MakePathOrDie("kind"), fieldpath.MakePathOrDie("metadata"))
	for _, f := range strippedMetadataFields {
		set.Insert(fieldpath.MakePathOrDie("metadata", f))
	}
	return set
}()

// trackCreate is track for a create (no current object): the one entry it records is
// computed directly, without the field manager's round trips through typed
// ManagedFieldsEntry values (most of a create's cost of tracking fields). It gives
// exactly track(nil, obj, manager)'s result (a test compares them), and falls back to
// track for what it does not cover: an object that brings its own managedFields, or
// one the type converter refuses.
func (f *fieldManager) trackCreate(obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	meta, ok := obj.Object["metadata"].(map[string]interface{})
	if !ok {
		return f.track(nil, obj, manager)
	}
	if _, has := meta["managedFields"]; has || f.emptyLive == nil || obj.GroupVersionKind() != f.gvk {
		return f.track(nil, obj, manager)
	}
	// What the field manager's updater does against the empty live object: the
	// manager owns what the comparison finds added (or changed).
	typed, err := f.tc.ObjectToTyped(obj, smdtyped.AllowDuplicates)
	if err != nil {
		return f.track(nil, obj, manager)
	}
	cmp, err := f.emptyLive.Compare(typed)
	if err != nil {
		return f.track(nil, obj, manager)
	}
	set := cmp.Added.Union(cmp.Modified)
	if f.reset != nil {
		set = f.reset.Filter(set)
	}
	set = set.Difference(stripFromManaged)
	if set.Empty() {
		return obj
	}
	fields, err := set.ToJSON()
	if err != nil {
		return f.track(nil, obj, manager)
	}
	fieldsV1, err := objectjson.UnmarshalObject(fields)
	if err != nil {
		return f.track(nil, obj, manager)
	}
	entry := map[string]interface{}{
		"manager":    manager,
		"operation":  string(metav1.ManagedFieldsOperationUpdate),
		"apiVersion": f.gvk.GroupVersion().String(),
		"time":       metav1.Now().UTC().Format(time.RFC3339),
		"fieldsType": "FieldsV1",
		"fieldsV1":   fieldsV1,
	}
	if f.subresource != "" {
		entry["subresource"] = f.subresource
	}
	meta["managedFields"] = []interface{}{entry}
	return obj
}

// apply performs a server-side apply of applied onto current (nil: create).
func (f *fieldManager) apply(current, applied *unstructured.Unstructured, manager string, force bool) (*unstructured.Unstructured, error) {
	live := current
	if live == nil {
		live = &unstructured.Unstructured{Object: map[string]interface{}{}}
		live.SetGroupVersionKind(applied.GroupVersionKind())
		live.SetName(applied.GetName())
		live.SetNamespace(applied.GetNamespace())
	}
	out, err := f.fm.Apply(live, applied, manager, force)
	if err != nil {
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("apply returned %T", out))
	}
	if current != nil {
		u.SetResourceVersion(current.GetResourceVersion())
	}
	return u, nil
}
