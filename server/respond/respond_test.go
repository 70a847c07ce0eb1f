package respond_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/concordproject/concord/server/respond"
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
		{"unacceptable Accept: JSON anyway", "application/vnd.kubernetes.protobuf", apierrors.NewBadRequest("b"), 400, "application/json", metav1.StatusReasonBadRequest, ""},
		{"plain error", "", errors.New("disk on fire"), 500, "application/json", metav1.StatusReasonInternalError, ""},
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
			if tc.ctype == "application/yaml" {
				var err error
				if body, err = yaml.YAMLToJSON(body); err != nil {
					t.Fatal(err)
				}
			}
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatal(err)
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Reason != tc.reason || st.Code != int32(tc.code) {
				t.Errorf("Status %+v", st)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   respond.Negotiation
		ok     bool
	}{
		{"", respond.Negotiation{}, true},
		{"application/json", respond.Negotiation{}, true},
		{"application/yaml", respond.Negotiation{YAML: true}, true},
		{"*/*", respond.Negotiation{}, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", respond.Negotiation{Output: respond.OutputTable}, true},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", respond.Negotiation{Output: respond.OutputMetadata}, true},
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/json", respond.Negotiation{}, true},
		{"application/json;as=Unknown", respond.Negotiation{}, false},
		{"text/html", respond.Negotiation{}, false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept", tc.accept)
		got, err := respond.Negotiate(r)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("Accept %q: %+v, %v; want %+v, ok=%v", tc.accept, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "application/json") {
			t.Errorf("Accept %q: the refusal does not say what is served: %v", tc.accept, err)
		}
	}
}

var schemaGR = schema.GroupResource{Resource: "pods"}
