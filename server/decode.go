package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// readBody reads a request body; the body-limit filter has already capped its size.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", mbe.Limit))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	return data, nil
}

// bodyToJSON returns the body as JSON, converting YAML bodies.
func bodyToJSON(r *http.Request, data []byte) ([]byte, error) {
	return contentToJSON(r.Header.Get("Content-Type"), data)
}

// contentToJSON returns data, of media type contentType, as JSON.
func contentToJSON(contentType string, data []byte) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && contentType != "" {
		return nil, unsupportedMediaType(contentType)
	}
	switch mt {
	case "", "application/json":
		return data, nil
	case protobufMediaType:
		return protobufToJSON(data)
	case respond.CBORMediaType:
		return cborToJSON(data)
	case "application/yaml", "application/apply-patch+yaml":
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not valid YAML: %v", err))
		}
		return j, nil
	}
	return nil, unsupportedMediaType(mt)
}

// cborToJSON transcodes a CBOR body (KEP-4222's application/cbor, as client-go's
// dynamic client sends it with ClientsPreferCBOR) to JSON; the JSON path then
// decodes, prunes and validates it as any other body.
func cborToJSON(data []byte) ([]byte, error) {
	var v any
	if err := direct.Unmarshal(data, &v); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not valid CBOR: %v", err))
	}
	return objectjson.Append(nil, v)
}

// isCBOR reports whether contentType is a CBOR body (an object or an apply
// configuration).
func isCBOR(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == respond.CBORMediaType || mt == string(types.ApplyCBORPatchType)
}

// unsupportedMediaType is the 415 for a Content-Type the endpoint does not take.
func unsupportedMediaType(mt string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types are: application/json, application/yaml, application/cbor, application/vnd.kubernetes.protobuf (got %q)", mt),
	}}
}

// fieldValidation is the fieldValidation query parameter.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

// decodeObject parses a JSON object body for res at version: apiVersion and kind must
// be those of the endpoint; duplicate and unknown fields are handled as fieldValidation
// says (an error for Strict, warnings for Warn); unknown fields are pruned and defaults
// applied. The warnings are returned for the Warning header.
func decodeObject(data []byte, res *registry.Resource, version string, fv fieldValidation) (*unstructured.Unstructured, []string, error) {
	gvk := res.GroupVersion(version).WithKind(res.Names.Kind)
	if err := typedDecode(data, gvk); err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	obj, strictErrs, err := parseObject(data)
	if errors.Is(err, errNull) && typedScheme.Recognizes(gvk) {
		// A built-in kind decodes null as its empty object, as Kubernetes does.
		obj, err = &unstructured.Unstructured{Object: map[string]interface{}{}}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	d, err := admit(obj, strictErrs, false, res, version)
	if err != nil {
		return nil, nil, err
	}
	problems := d.problems()
	if len(problems) > 0 && fv != validationIgnore {
		if typed := typedStrictProblems(data, obj.GroupVersionKind()); typed != nil {
			problems = typed
		}
	}
	warnings, err := report(problems, fv)
	return d.obj, warnings, err
}

// parseObject parses a JSON object, and names its duplicate fields.
func parseObject(data []byte) (*unstructured.Unstructured, []error, error) {
	obj := &unstructured.Unstructured{}
	var strictErrs []error
	m, err := objectjson.UnmarshalObjectStrict(data)
	if err == nil {
		obj.Object = m
	} else {
		// A duplicate key or a syntax error: sigs.k8s.io/json decodes again, to name the
		// duplicated fields' paths and to word syntax errors as Kubernetes does.
		strictErrs, err = kjson.UnmarshalStrict(data, &obj.Object, kjson.DisallowDuplicateFields)
		if err != nil {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not a valid JSON object: %v", err))
		}
	}
	if obj.Object == nil {
		return nil, nil, errNull
	}
	return obj, strictErrs, nil
}

// errNull is the 400 of a body that is JSON's null.
var errNull = apierrors.NewBadRequest("the body is not a valid JSON object: null")

// typedDecode decodes data into the Go type of a built-in kind, as Kubernetes decodes
// a body, and returns the decoder's error: a value of the wrong type for its field (a
// list where a string goes, a number too large for its integer). Kinds without a Go
// type (custom resources) are checked against their schema instead: nil.
func typedDecode(data []byte, gvk schema.GroupVersionKind) error {
	if !typedScheme.Recognizes(gvk) {
		return nil
	}
	obj, err := typedScheme.New(gvk)
	if err != nil {
		return nil
	}
	var syntax *json.SyntaxError
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil && !errors.As(err, &syntax) {
		return err
	}
	return nil
}

// typedStrictProblems decodes data strictly into the Go type of a built-in kind, to
// word its unknown and duplicate fields as Kubernetes does for them: in the order they
// appear in the body. It returns nil for kinds without a Go type.
func typedStrictProblems(data []byte, gvk schema.GroupVersionKind) []string {
	if !typedScheme.Recognizes(gvk) {
		return nil
	}
	obj, err := typedScheme.New(gvk)
	if err != nil {
		return nil
	}
	strictErrs, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil || len(strictErrs) == 0 {
		return nil
	}
	problems := make([]string, len(strictErrs))
	for i, e := range strictErrs {
		problems[i] = e.Error()
	}
	return problems
}

// decodeRequestObject decodes the object in a create or update body: JSON and YAML as
// decodeObject does; protobuf (typed clients of built-in kinds) straight from the
// typed object to its map, without a JSON round trip.
func decodeRequestObject(r *http.Request, body []byte, res *registry.Resource, version string, fv fieldValidation) (*unstructured.Unstructured, []string, error) {
	if r.Header.Get("Content-Type") == protobufMediaType {
		m, err := protobufToMap(body)
		if err != nil {
			return nil, nil, err
		}
		d, err := admit(&unstructured.Unstructured{Object: m}, nil, true, res, version)
		if err != nil {
			return nil, nil, err
		}
		warnings, err := report(d.problems(), fv)
		return d.obj, warnings, err
	}
	data, err := bodyToJSON(r, body)
	if err != nil {
		return nil, nil, err
	}
	return decodeObject(data, res, version, fv)
}

// admitted is a decoded object as the endpoint admits it, with what it dropped.
type admitted struct {
	obj *unstructured.Unstructured
	// duplicates are the strict decoder's complaints (duplicate fields).
	duplicates []string
	// unknown are the paths of the fields pruned (no leading dot).
	unknown []string
}

// problems are the admission's problems as Kubernetes words them, sorted.
func (a admitted) problems() []string {
	problems := slices.Clone(a.duplicates)
	for _, f := range a.unknown {
		problems = append(problems, fmt.Sprintf("unknown field %q", f))
	}
	sort.Strings(problems)
	return problems
}

// report turns problems into the error (Strict) or the warnings (Warn) fieldValidation
// asks for.
func report(problems []string, fv fieldValidation) ([]string, error) {
	switch {
	case len(problems) == 0:
	case fv == validationStrict:
		return nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(problems, ", "))
	case fv == validationWarn:
		return problems, nil
	}
	return nil, nil
}

// admit checks a decoded object against the endpoint (apiVersion, kind), prunes
// unknown fields and applies defaults. typedMeta says that metadata was made from a
// metav1.ObjectMeta (a protobuf body), so it cannot hold what ObjectMeta lacks and
// needs no normalizing.
func admit(obj *unstructured.Unstructured, strictErrs []error, typedMeta bool, res *registry.Resource, version string) (admitted, error) {
	return admitWith(obj, strictErrs, typedMeta, res, version, true)
}

// admitWith is admit, applying defaults only where defaults says: an apply
// configuration of a built-in kind is the applier's intent, not an object, and
// Kubernetes defaults only what applying it makes (the field manager's defaulter), so
// that the defaults are owned by no applier.
func admitWith(obj *unstructured.Unstructured, strictErrs []error, typedMeta bool, res *registry.Resource, version string, defaults bool) (admitted, error) {
	wantAV := res.GroupVersion(version).String()
	if typedScheme.Recognizes(res.GroupVersion(version).WithKind(res.Names.Kind)) {
		// Kubernetes decodes a built-in kind's body into the endpoint's type, so
		// what it leaves out of apiVersion and kind is the endpoint's (custom
		// resources must say both).
		if obj.GetAPIVersion() == "" {
			obj.SetAPIVersion(wantAV)
		}
		if obj.GetKind() == "" {
			obj.SetKind(res.Names.Kind)
		}
	}
	switch av := obj.GetAPIVersion(); {
	case av == "":
		return admitted{}, apierrors.NewBadRequest(fmt.Sprintf("apiVersion is not set: expected %q", wantAV))
	case av != wantAV:
		return admitted{}, apierrors.NewBadRequest(fmt.Sprintf("apiVersion %q does not match the endpoint's %q", av, wantAV))
	}
	switch k := obj.GetKind(); {
	case k == "":
		return admitted{}, apierrors.NewBadRequest(fmt.Sprintf("kind is not set: expected %q", res.Names.Kind))
	case k != res.Names.Kind:
		return admitted{}, apierrors.NewBadRequest(fmt.Sprintf("kind %q does not match the endpoint's %q", k, res.Names.Kind))
	}
	a := admitted{obj: obj}
	for _, e := range strictErrs {
		a.duplicates = append(a.duplicates, e.Error())
	}
	if !typedMeta {
		var err error
		if a.unknown, err = normalizeMetadata(obj); err != nil {
			return admitted{}, err
		}
	}
	for _, f := range res.Schema(version).Prune(obj.Object) {
		a.unknown = append(a.unknown, strings.TrimPrefix(f, "."))
	}
	if !defaults {
		return a, nil
	}
	if err := res.Default(version, obj); err != nil {
		return admitted{}, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Names.Kind, version, res.Names.Kind, err))
	}
	return a, nil
}

// normalizeMetadata round-trips metadata through metav1.ObjectMeta, dropping fields it
// does not have and rejecting values of the wrong type, and returns the dropped paths.
func normalizeMetadata(obj *unstructured.Unstructured) ([]string, error) {
	raw, ok := obj.Object["metadata"]
	if !ok || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		return nil, apierrors.NewBadRequest("metadata must be an object")
	}
	if objectMetaValid(m) {
		return nil, nil // the round trip below would change nothing and find nothing
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata: %v", err))
	}
	var meta metav1.ObjectMeta
	strictErrs, err := kjson.UnmarshalStrict(data, &meta, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata is not valid: %v", err))
	}
	var unknown []string
	if len(strictErrs) > 0 {
		for _, e := range strictErrs {
			// kjson names the field as it appears: `unknown field "foo"`.
			msg := e.Error()
			if i := strings.Index(msg, `"`); i >= 0 {
				unknown = append(unknown, "metadata."+strings.Trim(msg[i:], `"`))
			}
		}
		out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&meta)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		obj.Object["metadata"] = out
	}
	return unknown, nil
}

// deleteOptions reads the DeleteOptions of a delete request from its body, if it has
// one, else from its query, as Kubernetes does. A body must be DeleteOptions, of any
// group-version (clients send their resource's), in JSON, YAML or protobuf (400
// otherwise).
func deleteOptions(r *http.Request, body []byte) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if len(bytes.TrimSpace(body)) == 0 {
		return opts, decodeQuery(r, opts)
	}
	data, err := bodyToJSON(r, body)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &tm); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not valid DeleteOptions: %v", err))
	}
	if tm.Kind != "" && tm.Kind != "DeleteOptions" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("no kind %q is registered for version %q: the body of a deletion is DeleteOptions", tm.Kind, tm.APIVersion))
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, opts); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not valid DeleteOptions: %v", err))
	}
	return opts, nil
}
