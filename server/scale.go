package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// toScale renders the scale subresource of obj as autoscaling/v1 Scale, reading the
// paths the version's scale subresource declares.
func toScale(q *apiRequest, obj *unstructured.Unstructured) (*autoscalingv1.Scale, error) {
	sc := q.version.Subresources.Scale
	scale := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(), CreationTimestamp: obj.GetCreationTimestamp(),
		},
	}
	if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, jsonPathFields(sc.SpecReplicasPath)...); ok {
		n, ok := toInt32(v)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("%s is not an integer", sc.SpecReplicasPath))
		}
		scale.Spec.Replicas = n
	}
	if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, jsonPathFields(sc.StatusReplicasPath)...); ok {
		scale.Status.Replicas, _ = toInt32(v)
	}
	if sc.LabelSelectorPath != nil {
		selector, err := scaleSelector(obj, *sc.LabelSelectorPath)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		scale.Status.Selector = selector
	}
	return scale, nil
}

// scaleSelector reads the selector at path: a string, as custom resources keep it, or a
// metav1.LabelSelector, as Deployments do, which Scale carries in its string form.
func scaleSelector(obj *unstructured.Unstructured, path string) (string, error) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, jsonPathFields(path)...)
	if !ok {
		return "", nil
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case map[string]interface{}:
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v, &ls); err != nil {
			return "", fmt.Errorf("%s is not a label selector: %w", path, err)
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return "", fmt.Errorf("%s is not a label selector: %w", path, err)
		}
		return sel.String(), nil
	}
	return "", nil
}

func toInt32(v interface{}) (int32, bool) {
	switch n := v.(type) {
	case int64:
		return int32(n), true
	case float64:
		return int32(n), n == float64(int32(n))
	}
	return 0, false
}

// updateScale writes spec replicas from an autoscaling/v1 Scale.
func (s *Server) updateScale(w http.ResponseWriter, r *http.Request, q *apiRequest, data []byte, dry bool) {
	s.writeScale(w, r, q, dry, func(*autoscalingv1.Scale) ([]byte, error) { return data, nil })
}

// patchScale applies a merge or JSON patch to the current Scale and writes the result.
func (s *Server) patchScale(w http.ResponseWriter, r *http.Request, q *apiRequest, pt types.PatchType, patch []byte, dry bool) {
	if pt != types.MergePatchType && pt != types.JSONPatchType {
		respond.Error(w, r, unsupportedMediaType(string(pt)))
		return
	}
	s.writeScale(w, r, q, dry, func(current *autoscalingv1.Scale) ([]byte, error) {
		cur, err := json.Marshal(current)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return applyPatch(pt, cur, patch, nil)
	})
}

// writeScale computes the new Scale from the current one with next and writes its
// spec.replicas into the object, with optimistic concurrency on the Scale's
// resourceVersion.
func (s *Server) writeScale(w http.ResponseWriter, r *http.Request, q *apiRequest, dry bool, next func(*autoscalingv1.Scale) ([]byte, error)) {
	path := jsonPathFields(q.version.Subresources.Scale.SpecReplicasPath)
	// Admission sees the Scales, as in Kubernetes: mutating admission may change the
	// new one before it is validated.
	mutate, admit := s.writeAdmission(q, scaleKind, dry)
	obj, _, err := s.cfg.Store.Update(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace, Name: q.info.Name}, func(ctx context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		current, err := toScale(q, cur)
		if err != nil {
			return nil, err
		}
		data, err := next(current)
		if err != nil {
			return nil, err
		}
		var in autoscalingv1.Scale
		if err := decodeStrictJSON(data, &in); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not a valid autoscaling/v1 Scale: %v", err))
		}
		in.TypeMeta, in.Name, in.Namespace = current.TypeMeta, current.Name, current.Namespace
		if err := admitScale(ctx, mutate, &in, current); err != nil {
			return nil, err
		}
		if in.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(scaleKind.GroupKind(), q.info.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), in.Spec.Replicas, "must be greater than or equal to 0")})
		}
		if err := admitScale(ctx, admit, &in, current); err != nil {
			return nil, err
		}
		if in.ResourceVersion != "" {
			cur.SetResourceVersion(in.ResourceVersion)
		}
		if err := unstructured.SetNestedField(cur.Object, int64(in.Spec.Replicas), path...); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return cur, nil
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{DryRun: dry}})
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	scale, err := toScale(q, obj)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Object(w, r, http.StatusOK, scale)
}

// scaleKind is the kind of the scale subresource.
var scaleKind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// admitScale runs admission (if any) on the update of the Scale current to in, which
// it may change.
func admitScale(ctx context.Context, admit store.AdmitFunc, in, current *autoscalingv1.Scale) error {
	if admit == nil {
		return nil
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	old, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if err := admit(ctx, u, &unstructured.Unstructured{Object: old}); err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

// jsonPathFields splits a simple JSONPath like ".spec.replicas" into its fields.
func jsonPathFields(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

// decodeStrictJSON decodes data into into, refusing unknown and duplicate fields.
func decodeStrictJSON(data []byte, into interface{}) error {
	strict, err := kjson.UnmarshalStrict(data, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	return nil
}
