package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditlib "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Filter audits the requests it wraps; it belongs right after authentication, before
// impersonation (the policy sees the authenticated user). Every request gets an audit
// ID, the Audit-ID request header's or a new UUID, echoed as the Audit-ID response
// header, and an audit context in which handlers may add annotations
// (k8s.io/apiserver/pkg/audit.AddAuditAnnotation). A request the policy audits (level
// Metadata or more) has its events sent: RequestReceived, ResponseStarted for watches
// once their response starts, ResponseComplete when the handler returns, or Panic
// when it panics (the panic then goes on up), each unless the policy omits the stage.
func (a *Auditor) Filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ex, answered := a.open(w, r, userOf(r.Context()))
		switch {
		case answered:
			return
		case ex == nil:
			next.ServeHTTP(w, r)
			return
		}
		if !ex.ac.ProcessEventStage(ex.ctx, auditinternal.StageRequestReceived) {
			// Only a blocking-strict backend fails a request this way.
			respond.Error(w, r, apierrors.NewInternalError(errors.New("the request's audit event could not be stored")))
			return
		}
		ex.recordBody(r)
		rw := ex.wrap(w, true)
		defer func() {
			if p := recover(); p != nil {
				ex.panicked(p)
				panic(p)
			}
			ex.complete()
		}()
		next.ServeHTTP(rw, r)
	})
}

// FailedAuthentication audits the requests that authentication refuses: failed
// answers them (401). The policy is evaluated without a user, so only rules that name
// no users or groups match; the event, with an empty user, is sent once the response
// starts (stage ResponseStarted, the only one), its status saying which credentials
// were presented. It gives the request its audit ID as Filter does.
func (a *Auditor) FailedAuthentication(failed http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ex, answered := a.open(w, r, nil)
		switch {
		case answered:
			return
		case ex == nil:
			failed.ServeHTTP(w, r)
			return
		}
		ex.longRunning = true // its one event is sent when the response starts
		ex.ac.SetEventResponseStatus(&metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  metav1.StatusReasonUnauthorized,
			Message: failedAuthenticationMessage(r),
		})
		failed.ServeHTTP(ex.wrap(w, false), r)
	})
}

// open readies the auditing of r, made by u (nil: not authenticated): its audit
// context and ID, and the policy's verdict. It returns the request to serve on and
// its exchange, nil when the request is not audited (auditing off, or level None);
// answered is true when it answered the request itself (see begin).
func (a *Auditor) open(w http.ResponseWriter, r *http.Request, u user.Info) (_ *http.Request, _ *exchange, answered bool) {
	r = withAuditContext(w, r)
	if !a.enabled() {
		disable(r.Context())
		return r, nil, false
	}
	info := requestInfo(r)
	rac, ok := a.begin(w, r, attributes(r, info, u))
	if !ok {
		return r, nil, true
	}
	if rac.Level == auditinternal.LevelNone {
		return r, nil, false
	}
	return r, newExchange(r.Context(), rac, info), false
}

// begin evaluates the policy for the request and sets up its audit context, with its
// metadata when it is audited. It returns false once it has answered the request
// itself (500: the audit context was set up already, the filter being twice in the
// chain).
func (a *Auditor) begin(w http.ResponseWriter, r *http.Request, attrs authorizer.AttributesRecord) (auditlib.RequestAuditConfig, bool) {
	ctx := r.Context()
	rac := a.evaluator.EvaluatePolicyRule(attrs)
	if err := auditlib.AuditContextFrom(ctx).Init(rac, a.sink); err != nil {
		respond.Error(w, r, apierrors.NewInternalError(fmt.Errorf("auditing the request: %w", err)))
		return rac, false
	}
	if rac.Level != auditinternal.LevelNone {
		auditlib.LogRequestMetadata(ctx, r, receivedAt(ctx), attrs)
	}
	return rac, true
}

// withAuditContext gives the request an audit context and its audit ID (the Audit-ID
// header's, or a new UUID), echoed in the response's Audit-ID header, unless it has
// one already.
func withAuditContext(w http.ResponseWriter, r *http.Request) *http.Request {
	ctx := r.Context()
	if auditlib.AuditContextFrom(ctx) != nil {
		return r
	}
	id := r.Header.Get(auditinternal.HeaderAuditID)
	if id == "" {
		id = uuid.NewString()
	}
	ctx = auditlib.WithAuditContext(ctx)
	auditlib.WithAuditID(ctx, types.UID(id))
	if w.Header().Get(auditinternal.HeaderAuditID) == "" {
		w.Header().Set(auditinternal.HeaderAuditID, id)
	}
	return r.WithContext(ctx)
}

// disable marks the request unaudited, so that annotations added to it are not kept.
func disable(ctx context.Context) {
	// An error means its context was set up already, by another filter: leave it.
	_ = auditlib.AuditContextFrom(ctx).Init(auditlib.RequestAuditConfig{Level: auditinternal.LevelNone}, nil)
}

func requestInfo(r *http.Request) *request.Info {
	if info, ok := request.InfoFrom(r.Context()); ok {
		return info
	}
	return request.Parse(r)
}

// userOf returns the request's user, nil if authentication has not put one in ctx.
func userOf(ctx context.Context) user.Info {
	if u, ok := auth.UserFrom(ctx); ok {
		return u.Info()
	}
	return nil
}

// attributes are what the policy's rules match: the user (nil: none), the Kubernetes
// verb, the resource or the non-resource path.
func attributes(r *http.Request, info *request.Info, u user.Info) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            info.Verb,
		Namespace:       info.Namespace,
		APIGroup:        info.APIGroup,
		APIVersion:      info.APIVersion,
		Resource:        info.Resource,
		Subresource:     info.Subresource,
		Name:            info.Name,
		ResourceRequest: info.IsResourceRequest,
		Path:            r.URL.Path,
	}
}

// receivedAt is when the server received the request, if an earlier filter recorded
// it (k8s.io/apiserver/pkg/endpoints/request.WithReceivedTimestamp), else now.
func receivedAt(ctx context.Context) time.Time {
	if t, ok := genericrequest.ReceivedTimestampFrom(ctx); ok {
		return t
	}
	return time.Now()
}

// failedAuthenticationMessage says which credentials a refused request presented.
func failedAuthenticationMessage(r *http.Request) string {
	var presented []string
	if _, _, ok := r.BasicAuth(); ok {
		presented = append(presented, "basic")
	}
	if scheme, _, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "bearer") {
		presented = append(presented, "bearer")
	}
	if strings.TrimSpace(r.URL.Query().Get("access_token")) != "" {
		presented = append(presented, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		presented = append(presented, "x509")
	}
	if len(presented) == 0 {
		return "authentication failed: no credentials presented"
	}
	return "authentication failed: credentials presented: " + strings.Join(presented, ", ")
}
