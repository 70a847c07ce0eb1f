package apiextensions

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// reviewFunc answers a ConversionReview request; the test server wraps it.
type reviewFunc func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse

// convertAll is a correct webhook: it sets the desired apiVersion and doubles
// spec.size when converting to v2 (and halves it back to v1).
func convertAll(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range req.Objects {
		u := &unstructured.Unstructured{}
		_ = u.UnmarshalJSON(raw.Raw)
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
		if strings.HasSuffix(req.DesiredAPIVersion, "/v2") {
			size *= 2
		} else {
			size /= 2
		}
		_ = unstructured.SetNestedField(u.Object, size, "spec", "size")
		u.SetAPIVersion(req.DesiredAPIVersion)
		data, _ := u.MarshalJSON()
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	return resp
}

type webhookServer struct {
	*httptest.Server
	mu      sync.Mutex
	answer  reviewFunc
	reviews []*apiextensionsv1.ConversionRequest
}

func startWebhook(t *testing.T) *webhookServer {
	t.Helper()
	s := &webhookServer{answer: convertAll}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &apiextensionsv1.ConversionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil || review.APIVersion != "apiextensions.k8s.io/v1" {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reviews = append(s.reviews, review.Request)
		answer := s.answer
		s.mu.Unlock()
		review.Response = answer(review.Request)
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *webhookServer) set(f reviewFunc) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

func (s *webhookServer) crd() *apiextensionsv1.CustomResourceDefinition {
	crd := widgetsCRD()
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				URL:      ptr(s.URL + "/convert"),
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}),
			},
		},
	}
	return crd
}

func ptr[T any](v T) *T { return &v }

func widget(version, name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]interface{}{"name": name, "namespace": "default", "uid": "uid-" + name, "resourceVersion": "7",
			"labels": map[string]interface{}{"app": "x"}},
		"spec": map[string]interface{}{"size": size},
	}}
	return u
}

func TestWebhookConvertsInOneReview(t *testing.T) {
	s := startWebhook(t)
	conv := newWebhookConverter(s.crd())
	objs := []*unstructured.Unstructured{widget("v1", "a", 1), widget("v1", "b", 2), widget("v1", "c", 3)}
	if err := conv.Convert(t.Context(), objs, "v2"); err != nil {
		t.Fatal(err)
	}
	if len(s.reviews) != 1 || len(s.reviews[0].Objects) != 3 || s.reviews[0].DesiredAPIVersion != "example.com/v2" {
		t.Fatalf("reviews = %+v", s.reviews)
	}
	for i, o := range objs {
		if o.GetAPIVersion() != "example.com/v2" || o.Object["spec"].(map[string]interface{})["size"] != int64(2*(i+1)) || o.GetResourceVersion() != "7" {
			t.Errorf("object %d = %v", i, o.Object)
		}
	}
}

func TestWebhookMetadataRules(t *testing.T) {
	s := startWebhook(t)
	s.set(func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
		resp := convertAll(req)
		for i, raw := range resp.ConvertedObjects {
			u := &unstructured.Unstructured{}
			_ = u.UnmarshalJSON(raw.Raw)
			u.SetName("renamed")
			u.SetUID("other")
			u.SetResourceVersion("99")
			u.SetLabels(map[string]string{"app": "x", "converted": "true"})
			u.SetAnnotations(map[string]string{"note": "by webhook"})
			resp.ConvertedObjects[i].Raw, _ = u.MarshalJSON()
		}
		return resp
	})
	objs := []*unstructured.Unstructured{widget("v1", "a", 1)}
	if err := newWebhookConverter(s.crd()).Convert(t.Context(), objs, "v2"); err != nil {
		t.Fatal(err)
	}
	o := objs[0]
	if o.GetName() != "a" || o.GetUID() != "uid-a" || o.GetResourceVersion() != "7" || o.GetNamespace() != "default" {
		t.Errorf("metadata other than labels and annotations changed: %v", o.Object["metadata"])
	}
	if o.GetLabels()["converted"] != "true" || o.GetAnnotations()["note"] != "by webhook" {
		t.Errorf("labels and annotations from the webhook were dropped: %v", o.Object["metadata"])
	}
}

func TestWebhookFailures(t *testing.T) {
	s := startWebhook(t)
	for _, tc := range []struct {
		name   string
		answer reviewFunc
		crd    func(*apiextensionsv1.CustomResourceDefinition)
		ctx    func(context.Context) (context.Context, context.CancelFunc)
		want   error
		msg    string
	}{
		{name: "failure result", answer: func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
			return &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusFailure, Message: "no way"}}
		}, want: ErrWebhookResponse, msg: "no way"},
		{name: "wrong uid", answer: func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
			r := convertAll(req)
			r.UID = "someone-else"
			return r
		}, want: ErrWebhookResponse, msg: "does not match request uid"},
		{name: "missing object", answer: func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
			r := convertAll(req)
			r.ConvertedObjects = r.ConvertedObjects[1:]
			return r
		}, want: ErrWebhookResponse, msg: "2 objects sent, 1 converted objects returned"},
		{name: "wrong apiVersion", answer: func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
			req.DesiredAPIVersion = "example.com/v1"
			return convertAll(req)
		}, want: ErrWebhookResponse, msg: `apiVersion is "example.com/v1", want "example.com/v2"`},
		{name: "invalid label", answer: func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
			r := convertAll(req)
			u := &unstructured.Unstructured{}
			_ = u.UnmarshalJSON(r.ConvertedObjects[0].Raw)
			u.SetLabels(map[string]string{"bad label": "x"})
			r.ConvertedObjects[0].Raw, _ = u.MarshalJSON()
			return r
		}, want: ErrWebhookResponse, msg: "metadata.labels"},
		{name: "no v1 review", crd: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1beta1"}
		}, want: ErrWebhookConfig, msg: "do not include v1"},
		{name: "caBundle without certificates", crd: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("not PEM")
		}, want: ErrWebhookConfig, msg: "caBundle"},
		{name: "untrusted certificate", crd: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.CABundle = nil
		}, msg: "certificate"},
		{name: "timeout", answer: func(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
			time.Sleep(300 * time.Millisecond)
			return convertAll(req)
		}, ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 50*time.Millisecond)
		}, want: context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.answer != nil {
				s.set(tc.answer)
				defer s.set(convertAll)
			}
			crd := s.crd()
			if tc.crd != nil {
				tc.crd(crd)
			}
			ctx := t.Context()
			if tc.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tc.ctx(ctx)
				defer cancel()
			}
			objs := []*unstructured.Unstructured{widget("v1", "a", 1), widget("v1", "b", 2)}
			err := newWebhookConverter(crd).Convert(ctx, objs, "v2")
			var we *WebhookError
			if !errors.As(err, &we) {
				t.Fatalf("got %v, want a *WebhookError", err)
			}
			if !strings.HasPrefix(err.Error(), "conversion webhook for example.com/v2, Kind=Widget failed: ") {
				t.Errorf("message %q does not name the webhook", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v, want it to match %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %q, want ...%s...", err, tc.msg)
			}
			if objs[0].GetAPIVersion() != "example.com/v1" {
				t.Errorf("a failed conversion changed the objects")
			}
		})
	}
}

func TestWebhookServiceReference(t *testing.T) {
	crd := widgetsCRD()
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1beta1", "v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Namespace: "system", Name: "converter", Path: ptr("/convert")}},
		},
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	c := newWebhookConverter(crd)
	if c.configErr != nil || c.url != "https://converter.system.svc:443/convert" {
		t.Fatalf("url %q, err %v", c.url, c.configErr)
	}
	if sn := c.client.Transport.(*http.Transport).TLSClientConfig.ServerName; sn != "converter.system.svc" {
		t.Errorf("TLS server name %q", sn)
	}
}
