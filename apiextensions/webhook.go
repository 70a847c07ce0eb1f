package apiextensions

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
)

// WebhookTimeout bounds one call to a conversion webhook, as in Kubernetes (CRDs have no
// per-webhook timeout). A shorter deadline of the caller's context wins.
const WebhookTimeout = 30 * time.Second

// maxReviewBytes caps the size of a ConversionReview response read from a webhook.
const maxReviewBytes = 64 << 20

// Sentinel errors of conversion webhooks, wrapped in a *WebhookError.
var (
	// ErrWebhookConfig: the definition's webhook cannot be called (no v1
	// ConversionReview accepted, a caBundle without certificates, no URL or service).
	ErrWebhookConfig = errors.New("unusable webhook configuration")
	// ErrWebhookResponse: the webhook answered, but not with a valid, successful
	// ConversionReview for the request.
	ErrWebhookResponse = errors.New("invalid conversion response")
)

// WebhookError is what a conversion through a webhook returns when it fails. The
// registry turns it into a 500 InternalError whose message names the webhook, e.g.
// `conversion webhook for stable.example.com/v2, Kind=CronTab failed: Post "https://...": connection refused`.
type WebhookError struct {
	// GroupVersionKind is the kind and the version objects were converted to.
	GroupVersionKind schema.GroupVersionKind
	// URL is where the webhook was called.
	URL string
	// Err is the cause: a transport error, ErrWebhookConfig or ErrWebhookResponse.
	Err error
}

// Error names the conversion and its cause.
func (e *WebhookError) Error() string {
	return fmt.Sprintf("conversion webhook for %s failed: %v", e.GroupVersionKind, e.Err)
}

// Unwrap returns the cause.
func (e *WebhookError) Unwrap() error { return e.Err }

// webhookConverter converts custom resources by sending a ConversionReview v1 to the
// definition's conversion webhook: all objects of one call in one review.
type webhookConverter struct {
	group, kind string
	url         string
	client      *http.Client
	// configErr is set when the configuration cannot be used; every conversion then
	// fails with it, so that objects already in the requested version still read.
	configErr error
}

// newWebhookConverter returns the converter of crd's webhook conversion. A service
// reference is called at https://<name>.<namespace>.svc:<port><path>, which needs DNS
// that resolves cluster services; a URL is called as it is.
func newWebhookConverter(crd *apiextensionsv1.CustomResourceDefinition) *webhookConverter {
	c := &webhookConverter{group: crd.Spec.Group, kind: crd.Spec.Names.Kind}
	if crd.Status.AcceptedNames.Kind != "" {
		c.kind = crd.Status.AcceptedNames.Kind
	}
	conv := crd.Spec.Conversion
	if conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		c.configErr = fmt.Errorf("%w: spec.conversion.webhook.clientConfig is not set", ErrWebhookConfig)
		return c
	}
	if !slices.Contains(conv.Webhook.ConversionReviewVersions, "v1") {
		c.configErr = fmt.Errorf("%w: conversionReviewVersions %v do not include v1, the only version this server sends",
			ErrWebhookConfig, conv.Webhook.ConversionReviewVersions)
		return c
	}
	cc := conv.Webhook.ClientConfig
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case cc.URL != nil:
		c.url = *cc.URL
	case cc.Service != nil:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		host := cc.Service.Name + "." + cc.Service.Namespace + ".svc"
		c.url = "https://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
		if cc.Service.Path != nil {
			c.url += *cc.Service.Path
		}
		tlsConfig.ServerName = host
	default:
		c.configErr = fmt.Errorf("%w: neither url nor service is set", ErrWebhookConfig)
		return c
	}
	if len(cc.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cc.CABundle) {
			c.configErr = fmt.Errorf("%w: caBundle holds no PEM certificate", ErrWebhookConfig)
			return c
		}
		tlsConfig.RootCAs = pool
	}
	c.client = &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsConfig,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		// The converter is replaced with its definition; idle connections then close.
		IdleConnTimeout: 90 * time.Second,
	}}
	return c
}

// Convert sends objs to the webhook in one ConversionReview asking for toVersion and
// replaces each object with its converted form. The webhook may change the object's
// labels and annotations besides its content; any other metadata it changes is
// restored from the original. A failure is a *WebhookError.
func (c *webhookConverter) Convert(ctx context.Context, objs []*unstructured.Unstructured, toVersion string) error {
	if len(objs) == 0 {
		return nil
	}
	gvk := schema.GroupVersionKind{Group: c.group, Version: toVersion, Kind: c.kind}
	fail := func(err error) error { return &WebhookError{GroupVersionKind: gvk, URL: c.url, Err: err} }
	if c.configErr != nil {
		return fail(c.configErr)
	}
	desired := gvk.GroupVersion().String()
	review := &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{
			UID:               uuid.NewUUID(),
			DesiredAPIVersion: desired,
			Objects:           make([]runtime.RawExtension, len(objs)),
		},
	}
	for i, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			return fail(err)
		}
		review.Request.Objects[i].Raw = raw
	}
	response, err := c.call(ctx, review)
	if err != nil {
		return fail(err)
	}
	klog.FromContext(ctx).V(5).Info("Converted through webhook", "url", c.url, "to", desired, "objects", len(objs))
	converted := make([]*unstructured.Unstructured, len(objs))
	for i, raw := range response.ConvertedObjects {
		out, err := restoreMetadata(objs[i], raw.Raw, desired, c.kind)
		if err != nil {
			return fail(fmt.Errorf("%w: convertedObjects[%d]: %w", ErrWebhookResponse, i, err))
		}
		converted[i] = out
	}
	for i := range objs {
		*objs[i] = *converted[i]
	}
	return nil
}

// call posts review and returns the checked response.
func (c *webhookConverter) call(ctx context.Context, review *apiextensionsv1.ConversionReview) (*apiextensionsv1.ConversionResponse, error) {
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReviewBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response of %s: %w", c.url, err)
	}
	if len(data) > maxReviewBytes {
		return nil, fmt.Errorf("%w: the response of %s is larger than %d bytes", ErrWebhookResponse, c.url, maxReviewBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered HTTP %d: %s", ErrWebhookResponse, c.url, resp.StatusCode, truncate(data, 512))
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%w: %s did not answer a ConversionReview: %w", ErrWebhookResponse, c.url, err)
	}
	r := out.Response
	switch {
	case r == nil:
		return nil, fmt.Errorf("%w: the review has no response", ErrWebhookResponse)
	case r.UID != review.Request.UID:
		return nil, fmt.Errorf("%w: response uid %q does not match request uid %q", ErrWebhookResponse, r.UID, review.Request.UID)
	case r.Result.Status != metav1.StatusSuccess:
		msg := r.Result.Message
		if msg == "" {
			msg = "no message"
		}
		return nil, fmt.Errorf("%w: the webhook reported status %q: %s", ErrWebhookResponse, r.Result.Status, msg)
	case len(r.ConvertedObjects) != len(review.Request.Objects):
		return nil, fmt.Errorf("%w: %d objects sent, %d converted objects returned", ErrWebhookResponse, len(review.Request.Objects), len(r.ConvertedObjects))
	}
	return r, nil
}

// restoreMetadata decodes a converted object, checks its apiVersion and kind, and gives
// it the metadata of the original with the converted object's labels and annotations.
func restoreMetadata(original *unstructured.Unstructured, raw []byte, apiVersion, kind string) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	if out.GetAPIVersion() != apiVersion {
		return nil, fmt.Errorf("apiVersion is %q, want %q", out.GetAPIVersion(), apiVersion)
	}
	if out.GetKind() != kind {
		return nil, fmt.Errorf("kind is %q, want %q", out.GetKind(), kind)
	}
	if m, ok := out.Object["metadata"]; ok && m != nil {
		if _, ok := m.(map[string]interface{}); !ok {
			return nil, fmt.Errorf("metadata is not an object")
		}
	}
	labels, annotations := out.GetLabels(), out.GetAnnotations()
	errs := metav1validation.ValidateLabels(labels, field.NewPath("metadata", "labels"))
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(annotations, field.NewPath("metadata", "annotations"))...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if meta, ok := original.Object["metadata"]; ok {
		out.Object["metadata"] = runtime.DeepCopyJSONValue(meta)
	} else {
		delete(out.Object, "metadata")
	}
	out.SetLabels(labels)
	out.SetAnnotations(annotations)
	return out, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
