package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"

	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil && r.Header.Get("Content-Type") != "" {
		return nil, unsupportedMediaType(r.Header.Get("Content-Type"))
	}
	switch mt {
	case "", "application/json":
		return data, nil
	case protobufMediaType:
		return protobufToJSON(data)
	case "application/yaml", "application/apply-patch+yaml":
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not valid YAML: %v", err))
		}
		return j, nil
	}
	return nil, unsupportedMediaType(mt)
}

// unsupportedMediaType is the 415 for a Content-Type the endpoint does not take.
func unsupportedMediaType(mt string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types are: application/json, application/yaml (got %q)", mt),
	}}
}

// fieldValidation is the fieldValidation query parameter.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

func parseFieldValidation(r *http.Request) (fieldValidation, error) {
	switch v := r.URL.Query().Get("fieldValidation"); v {
	case "", "Warn":
		return validationWarn, nil
	case "Ignore":
		return validationIgnore, nil
	case "Strict":
		return validationStrict, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid fieldValidation %q: allowed are Ignore, Warn and Strict", v))
	}
}

// decodeObject parses a JSON object body for res at version: apiVersion and kind must
// be those of the endpoint; duplicate and unknown fields are handled as fieldValidation
// says (an error for Strict, warnings for Warn); unknown fields are pruned and defaults
// applied. The warnings are returned for the Warning header.
func decodeObject(data []byte, res *registry.Resource, version string, fv fieldValidation) (*unstructured.Unstructured, []string, error) {
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
		return nil, nil, apierrors.NewBadRequest("the body is not a valid JSON object: null")
	}
	return admitObject(obj, strictErrs, false, res, version, fv)
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
		return admitObject(&unstructured.Unstructured{Object: m}, nil, true, res, version, fv)
	}
	data, err := bodyToJSON(r, body)
	if err != nil {
		return nil, nil, err
	}
	return decodeObject(data, res, version, fv)
}

// admitObject checks a decoded object against the endpoint (apiVersion, kind), prunes
// unknown fields and applies defaults, reporting problems as fieldValidation says.
// typedMeta says that metadata was made from a metav1.ObjectMeta (a protobuf body), so
// it cannot hold what ObjectMeta lacks and needs no normalizing.
func admitObject(obj *unstructured.Unstructured, strictErrs []error, typedMeta bool, res *registry.Resource, version string, fv fieldValidation) (*unstructured.Unstructured, []string, error) {
	wantAV := res.GroupVersion(version).String()
	switch av := obj.GetAPIVersion(); {
	case av == "":
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("apiVersion is not set: expected %q", wantAV))
	case av != wantAV:
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("apiVersion %q does not match the endpoint's %q", av, wantAV))
	}
	switch k := obj.GetKind(); {
	case k == "":
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("kind is not set: expected %q", res.Names.Kind))
	case k != res.Names.Kind:
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("kind %q does not match the endpoint's %q", k, res.Names.Kind))
	}
	var problems []string
	for _, e := range strictErrs {
		problems = append(problems, e.Error())
	}
	var unknown []string
	if !typedMeta {
		var err error
		if unknown, err = normalizeMetadata(obj); err != nil {
			return nil, nil, err
		}
	}
	unknown = append(unknown, res.Schema(version).Prune(obj.Object)...)
	for _, f := range unknown {
		problems = append(problems, fmt.Sprintf("unknown field %q", strings.TrimPrefix(f, ".")))
	}
	res.Schema(version).Default(obj.Object)
	sort.Strings(problems)
	switch fv {
	case validationStrict:
		if len(problems) > 0 {
			return nil, nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(problems, ", "))
		}
	case validationWarn:
		return obj, problems, nil
	}
	return obj, nil, nil
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

// patchedOutputVersion returns the status options of a delete request.
func deleteOptions(r *http.Request, body []byte) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if len(body) > 0 && r.Header.Get("Content-Type") == protobufMediaType {
		j, err := protobufToJSON(body)
		if err != nil {
			return nil, err
		}
		body = j
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := kjson.UnmarshalCaseSensitivePreserveInts(body, opts); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not valid DeleteOptions: %v", err))
		}
	}
	if err := parameterCodec.DecodeParameters(r.URL.Query(), optionsGV, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

// writeParams are what every create, update and patch reads from its request before
// anything else: ?dryRun, ?fieldValidation and the body.
type writeParams struct {
	dryRun     bool
	validation fieldValidation
	body       []byte
}

func parseWrite(r *http.Request) (*writeParams, error) {
	dry, err := dryRun(r)
	if err != nil {
		return nil, err
	}
	fv, err := parseFieldValidation(r)
	if err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return &writeParams{dryRun: dry, validation: fv, body: body}, nil
}
