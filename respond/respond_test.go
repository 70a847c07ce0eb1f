package respond_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func TestError(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("wait")
	unavailable.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 3}
	for _, tc := range []struct {
		name, accept string
		err          error
		code         int
		ctype        string
		reason       metav1.StatusReason
		retryAfter   string
	}{
		{"API error, no Accept", "", apierrors.NewNotFound(schemaGR, "x"), 404, "application/json", metav1.StatusReasonNotFound, ""},
		{"API error as YAML", "application/yaml", apierrors.NewNotFound(schemaGR, "x"), 404, "application/yaml", metav1.StatusReasonNotFound, ""},
		{"kubectl's Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", apierrors.NewConflict(schemaGR, "x", errors.New("c")), 409, "application/json", metav1.StatusReasonConflict, ""},
		{"protobuf", "application/vnd.kubernetes.protobuf", apierrors.NewBadRequest("b"), 400, "application/vnd.kubernetes.protobuf", metav1.StatusReasonBadRequest, ""},
		{"unacceptable Accept: JSON anyway", "text/html", apierrors.NewBadRequest("b"), 400, "application/json", metav1.StatusReasonBadRequest, ""},
		{"plain error", "", errors.New("disk on fire"), 500, "application/json", metav1.StatusReasonUnknown, ""},
		{"Retry-After", "", unavailable, 503, "application/json", metav1.StatusReasonServiceUnavailable, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
			if tc.accept != "" {
				r.Header.Set("Accept", tc.accept)
			}
			w := httptest.NewRecorder()
			respond.Error(w, r, tc.err)
			if w.Code != tc.code || w.Header().Get("Content-Type") != tc.ctype || w.Header().Get("Retry-After") != tc.retryAfter {
				t.Fatalf("%d %q Retry-After %q, want %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Header().Get("Retry-After"), tc.code, tc.ctype, tc.retryAfter)
			}
			body := w.Body.Bytes()
			var st metav1.Status
			switch tc.ctype {
			case "application/yaml":
				var err error
				if body, err = yaml.YAMLToJSON(body); err != nil {
					t.Fatal(err)
				}
			case respond.ProtobufMediaType:
				obj, _, err := respond.Protobuf.Decode(body, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				st = *obj.(*metav1.Status)
				body = nil
			}
			if body != nil {
				if err := json.Unmarshal(body, &st); err != nil {
					t.Fatal(err)
				}
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Reason != tc.reason || st.Code != int32(tc.code) {
				t.Errorf("Status %+v", st)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	const pb = respond.ProtobufMediaType
	for _, tc := range []struct {
		accept   string
		protobuf bool // the object's kind has a protobuf form
		want     respond.Negotiation
		ok       bool
	}{
		{"", true, respond.Negotiation{}, true},
		{pb, true, respond.Negotiation{Protobuf: true}, true},
		{pb, false, respond.Negotiation{}, false},
		{pb + ",application/json", true, respond.Negotiation{Protobuf: true}, true},
		{pb + ",application/json", false, respond.Negotiation{}, true},
		{"application/json," + pb, true, respond.Negotiation{}, true},
		{pb + ";as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", false, respond.Negotiation{Output: respond.OutputMetadata, Protobuf: true}, true},
		{pb + ";as=Table;v=v1;g=meta.k8s.io," + "application/json;as=Table;v=v1;g=meta.k8s.io", true, respond.Negotiation{Output: respond.OutputTable}, true},
		{pb + ";as=Table;v=v1;g=meta.k8s.io", true, respond.Negotiation{}, false},
		{"application/json", false, respond.Negotiation{}, true},
		{"application/yaml", false, respond.Negotiation{YAML: true}, true},
		{"*/*", false, respond.Negotiation{}, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", false, respond.Negotiation{Output: respond.OutputTable}, true},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", false, respond.Negotiation{Output: respond.OutputMetadata}, true},
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/json", false, respond.Negotiation{}, true},
		{"application/json;as=Unknown", false, respond.Negotiation{}, false},
		{"text/html", false, respond.Negotiation{}, false},
		// CBOR (KEP-4222) for kinds without protobuf; preference by q, ties in order.
		{"application/json;q=0.9,application/cbor;q=1", false, respond.Negotiation{CBOR: true}, true},
		{"application/json;q=0.9,application/cbor;q=1", true, respond.Negotiation{}, true},
		{"application/cbor", true, respond.Negotiation{}, false},
		{"application/cbor,application/json", false, respond.Negotiation{CBOR: true}, true},
		{"application/json,application/cbor", false, respond.Negotiation{}, true},
		{"application/cbor;q=0,application/json", false, respond.Negotiation{}, true},
		{"application/cbor;q=0.5," + pb + ";q=0.7,application/json;q=0.1", true, respond.Negotiation{Protobuf: true}, true},
		{"application/cbor;as=Table;v=v1;g=meta.k8s.io", false, respond.Negotiation{}, false},
		{"application/json;q=2", false, respond.Negotiation{}, false},
	} {
		// A server that does not serve CBOR (its CBORServingAndStorage gate off)
		// never offers it.
		off := httptest.NewRequest(http.MethodGet, "/", nil)
		off.Header.Set("Accept", tc.accept)
		if got, _ := respond.Negotiate(off, tc.protobuf); got.CBOR {
			t.Errorf("Accept %q without CBOR served: %+v", tc.accept, got)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r = r.WithContext(respond.WithCBOR(r.Context()))
		r.Header.Set("Accept", tc.accept)
		got, err := respond.Negotiate(r, tc.protobuf)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("Accept %q (protobuf kind: %v): %+v, %v; want %+v, ok=%v", tc.accept, tc.protobuf, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "application/json") {
			t.Errorf("Accept %q: the refusal does not say what is served: %v", tc.accept, err)
		}
	}
}

var schemaGR = schema.GroupResource{Resource: "pods"}

// ProtobufKind answers from the scheme the first time and from what it kept after,
// the same way: built-in kinds have a protobuf form, custom resources none.
func TestProtobufKind(t *testing.T) {
	cases := map[schema.GroupVersionKind]bool{
		{Version: "v1", Kind: "ConfigMap"}:                           true,
		{Group: "apps", Version: "v1", Kind: "Deployment"}:           true,
		{Group: "example.com", Version: "v1", Kind: "Widget"}:        false,
		{Group: "apps", Version: "v1", Kind: "NoSuchKindInTheGroup"}: false,
	}
	for range 2 {
		for gvk, want := range cases {
			if got := respond.ProtobufKind(gvk); got != want {
				t.Errorf("ProtobufKind(%s) = %v, want %v", gvk, got, want)
			}
		}
	}
}
