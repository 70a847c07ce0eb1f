package server

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/server/respond"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// servePatch handles JSON patch, JSON merge patch, strategic merge patch (for the
// built-in kinds client-go knows, whose patch strategies come from their Go types) and
// server-side apply.
func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	ctx := r.Context()
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		respond.Error(w, r, unsupportedMediaType(r.Header.Get("Content-Type")))
		return
	}
	pt := types.PatchType(mt)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
	default:
		respond.Error(w, r, unsupportedMediaType(mt))
		return
	}
	if pt == types.ApplyCBORPatchType {
		respond.Error(w, r, unsupportedMediaType(mt))
		return
	}
	wr, err := parseWrite(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	dry, fv, body := wr.dryRun, wr.validation, wr.body
	manager, err := fieldManagerName(r, pt == types.ApplyYAMLPatchType)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	force := r.URL.Query().Get("force") == "true"
	if force && pt != types.ApplyYAMLPatchType {
		respond.Error(w, r, apierrors.NewBadRequest("force is only allowed for apply patches"))
		return
	}
	var smpStruct interface{}
	if pt == types.StrategicMergePatchType {
		gvk := q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind)
		typed, err := typedScheme.New(gvk)
		if err != nil {
			respond.Error(w, r, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", q.gr(), q.info.Name,
				fmt.Sprintf("strategic merge patch is not supported for %s: use a JSON merge patch, a JSON patch or server-side apply", gvk.GroupKind()), 0, false))
			return
		}
		smpStruct = typed
	}
	if q.subresource == "scale" {
		s.patchScale(w, r, q, pt, body, dry)
		return
	}
	sub := q.subresource
	fm, err := s.fieldManager(q.res, q.version.Name, sub)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if sub == "finalize" {
		sub = ""
	}
	var warnings []string
	apply := pt == types.ApplyYAMLPatchType
	result, created, err := s.cfg.Store.Update(ctx, store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace, Name: q.info.Name}, func(ctx context.Context, current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if apply {
			data, err := bodyToJSON(r, body)
			if err != nil {
				return nil, err
			}
			applied, ws, err := decodeObject(data, q.res, q.version.Name, fv)
			if err != nil {
				return nil, err
			}
			warnings = ws
			if applied.GetName() != "" && applied.GetName() != q.info.Name {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the applied object (%s) does not match the name on the URL (%s)", applied.GetName(), q.info.Name))
			}
			applied.SetName(q.info.Name)
			if q.res.Namespaced && applied.GetNamespace() == "" {
				applied.SetNamespace(q.info.Namespace)
			}
			return fm.apply(current, applied, manager, force)
		}
		if current == nil {
			return nil, apierrors.NewNotFound(q.gr(), q.info.Name)
		}
		currentJSON, err := json.Marshal(current.Object)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := applyPatch(pt, currentJSON, body, smpStruct)
		if err != nil {
			return nil, err
		}
		next, ws, err := decodeObject(patched, q.res, q.version.Name, fv)
		if err != nil {
			return nil, err
		}
		warnings = ws
		return fm.track(current, next, manager), nil
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{DryRun: dry, Subresource: sub}, AllowCreate: apply})
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeWritten(w, r, q, result, created, warnings)
}

// applyPatch applies a JSON, merge or strategic merge patch to a JSON document.
func applyPatch(pt types.PatchType, current, patch []byte, smpStruct interface{}) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the JSON patch does not parse: %v", err))
		}
		out, err := p.Apply(current)
		if err != nil {
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
				Message: fmt.Sprintf("the JSON patch does not apply: %v", err),
			}}
		}
		return out, nil
	case types.MergePatchType:
		out, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the merge patch does not apply: %v", err))
		}
		return out, nil
	case types.StrategicMergePatchType:
		out, err := strategicpatch.StrategicMergePatch(current, patch, smpStruct)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the strategic merge patch does not apply: %v", err))
		}
		return out, nil
	}
	return nil, unsupportedMediaType(string(pt))
}
