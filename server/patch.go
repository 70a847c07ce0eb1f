package server

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The bounds of a JSON patch, kube-apiserver's: at most maxJSONPatchOperations
// operations (413 beyond), and copies that add at most maxJSONPatchCopyBytes to the
// document in all (422 beyond), so that a small patch that copies a value into
// itself again and again cannot grow the document without bound.
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 << 20
)

// The json-patch library keeps its copy bound in a package variable; it is set once,
// here, for every patch this process applies.
func init() { jsonpatch.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes }

// servePatch handles JSON patch, JSON merge patch, strategic merge patch (for the
// built-in kinds client-go knows, whose patch strategies come from their Go types) and
// server-side apply.
func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	p, err := s.readPatch(r, q)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if q.subresource == "scale" {
		s.patchScale(w, r, q, p.typ, p.body, p.dryRun)
		return
	}
	sub := q.subresource
	fm, err := s.fieldManager(q.res, q.version.Name, sub)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	var warnings []string
	// An apply creates a missing object; through a subresource it never does (it
	// would be a creation that skips the main resource's checks, and would bring
	// back an object deleted while a controller applied its status).
	apply := p.typ == types.ApplyYAMLPatchType
	ref := store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace, Name: q.info.Name}
	wo := s.writeOptions(q, sub, p.dryRun)
	wo.KeepManagedFields = apply
	result, created, err := s.cfg.Store.Update(r.Context(), ref, func(_ context.Context, current *unstructured.Unstructured) (next *unstructured.Unstructured, err error) {
		if apply {
			next, warnings, err = p.applied(r, q)
			if err != nil {
				return nil, err
			}
			return fm.apply(current, next, p.manager, p.force)
		}
		if current == nil {
			return nil, apierrors.NewNotFound(q.gr(), q.info.Name)
		}
		if next, warnings, err = p.patched(q, current); err != nil {
			return nil, err
		}
		return fm.track(current, next, p.manager), nil
	}, store.UpdateOptions{WriteOptions: wo, AllowCreate: apply && q.subresource == ""})
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeWritten(w, r, q, result, created, warnings)
}

// patch is a patch request as read.
type patch struct {
	typ        types.PatchType
	body       []byte
	dryRun     bool
	validation fieldValidation
	manager    string
	force      bool
	// smpStruct is the Go type strategic merge patches follow.
	smpStruct interface{}
}

// readPatch reads and checks the patch type, the body, the field manager and force.
func (s *Server) readPatch(r *http.Request, q *apiRequest) (*patch, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, unsupportedMediaType(r.Header.Get("Content-Type"))
	}
	p := &patch{typ: types.PatchType(mt)}
	switch p.typ {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
	default:
		return nil, unsupportedMediaType(mt)
	}
	wr, err := parseWrite(r, "patch", p.typ)
	if err != nil {
		return nil, err
	}
	p.dryRun, p.validation, p.body, p.manager, p.force = wr.dryRun, wr.validation, wr.body, wr.manager, wr.force
	if p.typ == types.ApplyCBORPatchType {
		// An apply configuration in CBOR is applied as its JSON (YAML's subset) is.
		if p.body, err = cborToJSON(p.body); err != nil {
			return nil, err
		}
		p.typ = types.ApplyYAMLPatchType
	}
	if p.typ == types.StrategicMergePatchType {
		gvk := q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind)
		if p.smpStruct, err = typedScheme.New(gvk); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", q.gr(), q.info.Name,
				fmt.Sprintf("strategic merge patch is not supported for %s: use a JSON merge patch, a JSON patch or server-side apply", gvk.GroupKind()), 0, false)
		}
	}
	return p, nil
}

// applied decodes the object of an apply patch, named by the URL. Fields the schema
// does not declare are refused under fieldValidation Strict, in the words of
// Kubernetes' structured-merge typed conversion, reported under Warn and dropped under
// Ignore (Kubernetes refuses them whatever the fieldValidation). Duplicate keys are
// found by decoding the YAML strictly, as Kubernetes does.
func (p *patch) applied(r *http.Request, q *apiRequest) (*unstructured.Unstructured, []string, error) {
	var warnings []string
	if p.validation != validationIgnore {
		if err := yaml.UnmarshalStrict(p.body, &map[string]interface{}{}); err != nil {
			if p.validation == validationStrict {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
			}
			warnings = append(warnings, err.Error())
		}
	}
	data, err := contentToJSON(string(p.typ), p.body)
	if err != nil {
		return nil, nil, err
	}
	obj, _, err := parseObject(data)
	if err != nil {
		return nil, nil, err
	}
	// An apply configuration says what it is: Kubernetes takes neither apiVersion nor
	// kind from the URL.
	if gvk := obj.GroupVersionKind(); gvk != q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", gvk))
	}
	d, err := admitWith(obj, nil, false, q.res, q.version.Name, !q.res.TypedDefaults())
	if err != nil {
		return nil, nil, err
	}
	applied := d.obj
	if len(d.unknown) > 0 {
		switch p.validation {
		case validationStrict:
			lines := make([]string, len(d.unknown))
			for i, f := range d.unknown {
				lines[i] = "." + f + ": field not declared in schema"
			}
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("failed to create typed patch object (%s): %s",
				applied.GroupVersionKind(), strings.Join(lines, "\n")))
		case validationWarn:
			for _, f := range d.unknown {
				warnings = append(warnings, fmt.Sprintf("unknown field %q", f))
			}
		}
	}
	if applied.GetName() != "" && applied.GetName() != q.info.Name {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the applied object (%s) does not match the name on the URL (%s)", applied.GetName(), q.info.Name))
	}
	applied.SetName(q.info.Name)
	if q.res.Namespaced && applied.GetNamespace() == "" {
		applied.SetNamespace(q.info.Namespace)
	}
	return applied, warnings, nil
}

// patched applies a JSON, merge or strategic merge patch to current.
func (p *patch) patched(q *apiRequest, current *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	base := current.Object
	if p.typ == types.JSONPatchType {
		base = typedForm(current)
	}
	currentJSON, err := json.Marshal(base)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	patched, err := applyPatch(p.typ, currentJSON, p.body, p.smpStruct)
	if err != nil {
		return nil, nil, err
	}
	if err := typedDecode(patched, q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind)); err != nil {
		// The patch made a value of the wrong type: Kubernetes names the patched
		// object under the field "patch".
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), string(patched), err.Error())})
	}
	return decodeObject(patched, q.res, q.version.Name, p.validation)
}

// applyPatch applies a JSON, merge or strategic merge patch to a JSON document.
func applyPatch(pt types.PatchType, current, patch []byte, smpStruct interface{}) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the JSON patch does not parse: %v", err))
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"the allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		err = missingRootValue(p)
		var out []byte
		if err == nil {
			out, err = p.Apply(current)
		}
		if err != nil {
			// kube-apiserver's answer: a 422 that keeps the reason to itself.
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return out, nil
	case types.MergePatchType:
		if err := json.Unmarshal(patch, &map[string]interface{}{}); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		out, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the merge patch does not apply: %v", err))
		}
		return out, nil
	case types.StrategicMergePatchType:
		out, err := strategicMergePatch(current, patch, smpStruct)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the strategic merge patch does not apply: %v", err))
		}
		return out, nil
	}
	return nil, unsupportedMediaType(string(pt))
}

// missingRootValue refuses a test or replace of the whole document ("path": "") that
// has no "value", as not applying: the json-patch library (v4.13.0) dereferences the
// missing value and panics, where with "value": null it answers that the operation
// does not apply.
func missingRootValue(p jsonpatch.Patch) error {
	for _, op := range p {
		switch kind := op.Kind(); kind {
		case "test", "replace":
			if path, err := op.Path(); err == nil && path == "" {
				if _, ok := op["value"]; !ok {
					return fmt.Errorf("%s operation on the whole document has no value", kind)
				}
			}
		}
	}
	return nil
}

// strategicMergePatch is strategicpatch.StrategicMergePatch, whose panics on a patch
// that does not fit the object's type are returned as errors: a merge key whose value
// is a list or an object panics, for the library compares merge-key values with ==
// (the kind of bug kubernetes/kubernetes#127056 reports elsewhere in it). current is
// always an object this server encoded, so the patch is at fault.
func strategicMergePatch(current, patch []byte, smpStruct interface{}) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the patch does not fit the object's type (%v)", r)
		}
	}()
	return strategicpatch.StrategicMergePatch(current, patch, smpStruct)
}

// typedForm returns obj as Kubernetes would render a built-in kind for a JSON patch
// to apply to: the top-level structs its Go type always has (status, spec) are there
// even when empty, so that paths below them can be added to. Objects of kinds without
// a Go type are returned as they are.
func typedForm(obj *unstructured.Unstructured) map[string]interface{} {
	gvk := obj.GroupVersionKind()
	if !typedScheme.Recognizes(gvk) {
		return obj.Object
	}
	typed, err := typedScheme.New(gvk)
	if err != nil || runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed) != nil {
		return obj.Object
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return obj.Object
	}
	// Only the Go type's empty structs are wanted, not the fields it cannot hold.
	for k, v := range out {
		if _, ok := obj.Object[k]; !ok {
			if m, isMap := v.(map[string]interface{}); isMap && len(m) == 0 {
				obj.Object[k] = m
			}
		}
	}
	return obj.Object
}
