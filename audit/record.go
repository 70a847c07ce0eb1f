package audit

import (
	"context"

	"github.com/concordproject/concord/auth"
	auditlib "k8s.io/apiserver/pkg/audit"
)

// The annotations Kubernetes' authorization filter gives audit events.
const (
	// AnnotationAuthorizationDecision is "allow" or "forbid".
	AnnotationAuthorizationDecision = "authorization.k8s.io/decision"
	// AnnotationAuthorizationReason is the authorizer's reason, if it gave one.
	AnnotationAuthorizationReason = "authorization.k8s.io/reason"
)

// LogImpersonatedUser records u as the impersonatedUser of the request's event, the
// authenticated user staying its user. The impersonation filter calls it once the
// impersonation is allowed, before it puts u into the context. It does nothing for a
// request that is not audited (or not at level Metadata or more).
func LogImpersonatedUser(ctx context.Context, u auth.User) {
	auditlib.LogImpersonatedUser(ctx, u.Info(), "")
}

// LogAuthorizationDecision records the authorizer's decision on the request as
// Kubernetes does: AnnotationAuthorizationDecision "allow" or "forbid", and
// AnnotationAuthorizationReason (even empty). It does nothing for a request that is
// not audited.
func LogAuthorizationDecision(ctx context.Context, allowed bool, reason string) {
	decision := "forbid"
	if allowed {
		decision = "allow"
	}
	auditlib.AddAuditAnnotations(ctx, AnnotationAuthorizationDecision, decision, AnnotationAuthorizationReason, reason)
}
