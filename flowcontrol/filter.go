package flowcontrol

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/klog/v2"
)

const (
	// maxQueueWait bounds how long a request waits for a seat: a quarter of the
	// time its deadline leaves, never more than this (kube-apiserver's rule).
	maxQueueWait = time.Minute
	// defaultQueueWait is the wait of a request without a deadline (watches).
	defaultQueueWait = 15 * time.Second
	// retryAfterSeconds is what a rejected client is told to wait.
	retryAfterSeconds = 1
)

// Filter is the handler-chain stage: it classifies each request by the user the
// earlier stages put in its context and the request info, and serves it once its
// priority level gives it a seat, or answers 429 (reason TooManyRequests, with
// Retry-After) when the level's queues are full or the wait ran out. Every answer,
// a 429 included, says which FlowSchema and priority level classified it.
func (c *Controller) Filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.InfoFrom(r.Context())
		if !ok {
			info = request.Parse(r)
		}
		u, _ := auth.UserFrom(r.Context())
		digest := utilflowcontrol.RequestDigest{RequestInfo: requestInfo(info), User: u.Info()}
		ctx := apirequest.WithUser(apirequest.WithRequestInfo(r.Context(), digest.RequestInfo), digest.User)
		r = r.WithContext(ctx)
		watch := info.Verb == "watch"
		var flowSchema, priorityLevel string
		note := func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, _ string) {
			flowSchema, priorityLevel = fs.Name, pl.Name
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, string(fs.UID))
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, string(pl.UID))
		}
		estimate := func() fcrequest.WorkEstimate { return c.estimate(r, flowSchema, priorityLevel) }
		waitCtx, cancel := queueWait(ctx)
		defer cancel()
		served := false
		c.apf.Handle(waitCtx, digest, note, estimate, nil, func() {
			served = true
			if !watch {
				next.ServeHTTP(w, r)
			}
		})
		if !served {
			klog.FromContext(ctx).V(3).Info("Request rejected by priority and fairness", "user", u.Name,
				"verb", info.Verb, "path", r.URL.Path, "flowSchema", flowSchema, "priorityLevel", priorityLevel)
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			respond.Error(w, r, apierrors.NewTooManyRequests("Too many requests, please try again later.", retryAfterSeconds))
			return
		}
		if watch {
			// Admitted: the watch streams outside its seat, counted among the
			// watchers a write to its resource wakes.
			defer c.apf.RegisterWatch(r)()
			next.ServeHTTP(w, r)
		}
	})
}

// queueWait bounds a request's wait for a seat: a quarter of what its deadline
// leaves, at most maxQueueWait; defaultQueueWait without a deadline.
func queueWait(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := defaultQueueWait
	if deadline, ok := ctx.Deadline(); ok {
		limit = time.Until(deadline) / 4
	}
	return context.WithTimeout(ctx, min(limit, maxQueueWait))
}

// requestInfo is Concord's request info in the form the flowcontrol library
// classifies.
func requestInfo(info *request.Info) *apirequest.RequestInfo {
	return &apirequest.RequestInfo{
		IsResourceRequest: info.IsResourceRequest,
		Path:              info.Path,
		Verb:              info.Verb,
		APIPrefix:         info.APIPrefix,
		APIGroup:          info.APIGroup,
		APIVersion:        info.APIVersion,
		Namespace:         info.Namespace,
		Resource:          info.Resource,
		Subresource:       info.Subresource,
		Name:              info.Name,
	}
}
