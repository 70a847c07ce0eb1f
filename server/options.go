package server

import (
	"bytes"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// writeParams are what every create, update and patch reads from its request before
// anything else: the body and the options of its query, validated as Kubernetes
// validates them.
type writeParams struct {
	dryRun     bool
	validation fieldValidation
	// manager is the field manager: ?fieldManager, else the User-Agent's product.
	manager string
	// force is a server-side apply's ?force.
	force bool
	body  []byte
}

// parseWrite reads a write's body and query. verb is create, update or patch (with
// its type pt). Options Kubernetes refuses are a 422 naming the options' kind and
// field (CreateOptions dryRun, PatchOptions force, ...), as kube-apiserver answers.
func parseWrite(r *http.Request, verb string, pt types.PatchType) (*writeParams, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	var (
		kind    string
		opts    runtime.Object
		errs    func() field.ErrorList
		extract func() (dryRun []string, manager, validation string)
		force   bool
	)
	switch verb {
	case "create":
		o := &metav1.CreateOptions{}
		kind, opts, errs = "CreateOptions", o, func() field.ErrorList { return metav1validation.ValidateCreateOptions(o) }
		extract = func() ([]string, string, string) { return o.DryRun, o.FieldManager, o.FieldValidation }
	case "update":
		o := &metav1.UpdateOptions{}
		kind, opts, errs = "UpdateOptions", o, func() field.ErrorList { return metav1validation.ValidateUpdateOptions(o) }
		extract = func() ([]string, string, string) { return o.DryRun, o.FieldManager, o.FieldValidation }
	default:
		o := &metav1.PatchOptions{}
		kind, opts, errs = "PatchOptions", o, func() field.ErrorList { return metav1validation.ValidatePatchOptions(o, pt) }
		extract = func() ([]string, string, string) {
			force = o.Force != nil && *o.Force
			return o.DryRun, o.FieldManager, o.FieldValidation
		}
	}
	if err := decodeQuery(r, opts); err != nil {
		return nil, err
	}
	if list := errs(); len(list) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", list)
	}
	dry, manager, fv := extract()
	if fv == "" {
		fv = string(validationWarn)
	}
	if manager == "" {
		manager = managerFromUserAgent(r.UserAgent())
	}
	return &writeParams{dryRun: len(dry) > 0, validation: fieldValidation(fv), manager: manager, force: force, body: body}, nil
}

// decodeQuery decodes a request's query into opts, a metav1 options type; a value
// of the wrong type is a 400.
func decodeQuery(r *http.Request, opts runtime.Object) error {
	if err := parameterCodec.DecodeParameters(r.URL.Query(), optionsGV, opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// validateListOptions checks a list's or watch's query as Kubernetes does: its
// selectors parse (400), and its resourceVersion, resourceVersionMatch,
// sendInitialEvents and bookmarks go together (422 ListOptions). watchList says
// whether watches may ask for their initial state.
func validateListOptions(r *http.Request, watchList bool) error {
	var opts metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if errs := metainternalversionvalidation.ValidateListOptions(&opts, watchList); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}

// managerFromUserAgent is the field manager of a write that names none: the
// User-Agent's product (what comes before the first "/"), without its unprintable
// characters, at most as long as a field manager may be; "unknown" if nothing is
// left, as Kubernetes records it.
func managerFromUserAgent(ua string) string {
	product, _, _ := strings.Cut(ua, "/")
	var b bytes.Buffer
	for _, c := range product {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}
