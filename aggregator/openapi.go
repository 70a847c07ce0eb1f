package aggregator

import (
	"context"
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// OpenAPISink takes the OpenAPI documents of an aggregated group-version, as its
// backend serves them (nil: none), or both nil once it is gone (package openapi's
// Service.SetAggregated).
type OpenAPISink func(ctx context.Context, gv schema.GroupVersion, v2 *spec.Swagger, v3 *spec3.OpenAPI)

// SetOpenAPISink makes RunDiscovery hand the backends' OpenAPI documents to sink: read
// when a group-version's discovery first succeeds or changes. Call it before
// RunDiscovery.
func (a *Aggregator) SetOpenAPISink(sink OpenAPISink) { a.openAPI = sink }

// readOpenAPI reads svc's OpenAPI documents from its backend and hands them to the
// sink, if the discovery list differs from the one before (old).
func (a *Aggregator) readOpenAPI(ctx context.Context, svc *apiregistrationv1.APIService, list, old *metav1.APIResourceList) {
	if a.openAPI == nil || (old != nil && reflect.DeepEqual(list, old)) {
		return
	}
	gv := schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}
	logger := klog.FromContext(ctx).WithValues("apiservice", svc.Name)
	var v2 *spec.Swagger
	if body, err := a.get(ctx, svc, "/openapi/v2"); err != nil {
		logger.V(3).Info("No OpenAPI v2 document from the backend", "err", err)
	} else if err := json.Unmarshal(body, &v2); err != nil {
		logger.V(2).Info("Invalid OpenAPI v2 document from the backend", "err", err)
		v2 = nil
	}
	var v3 *spec3.OpenAPI
	if body, err := a.get(ctx, svc, "/openapi/v3/apis/"+gv.Group+"/"+gv.Version); err != nil {
		logger.V(3).Info("No OpenAPI v3 document from the backend", "err", err)
	} else if err := json.Unmarshal(body, &v3); err != nil {
		logger.V(2).Info("Invalid OpenAPI v3 document from the backend", "err", err)
		v3 = nil
	}
	a.openAPI(ctx, gv, v2, v3)
}
