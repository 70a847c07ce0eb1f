// Package audit owns Kubernetes' auditing for a Concord server: the audit.k8s.io/v1
// events a request gives, the policy that says which requests are audited and how
// much of them is kept, and the backends events are written to, with kube-apiserver's
// flags (--audit-policy-file, --audit-log-*, --audit-webhook-*).
//
// Its leaves are k8s.io/apiserver's: the event and policy types, the policy file
// reader and rule evaluator, the per-request audit context (so that handlers annotate
// events with k8s.io/apiserver/pkg/audit.AddAuditAnnotation), the log, webhook and
// buffering backends, and lumberjack for rotation. The filters are this package's
// own.
//
// # Events
//
// The policy is evaluated with the request's attributes: the authenticated user, the
// Kubernetes verb, the resource (group, resource, subresource, namespace, name) or
// the non-resource path. Its level decides what the events hold: None, no event;
// Metadata, the request's metadata (audit ID, verb, URI, user and impersonated user,
// source IPs, user agent, objectRef, timestamps, annotations) and the response's
// status (its code; for failures and Status answers, the Status' status, reason and
// message); Request, also the request body; RequestResponse, also the response body.
// Bodies are kept as JSON: as they were sent when they are JSON, converted when they
// are YAML or the protobuf of a built-in kind; CBOR bodies and the streams of watches
// are not kept. A request has events at
// stages RequestReceived (before its handler), ResponseStarted (watches only, when
// their response starts), ResponseComplete (when the handler returns) or Panic (the
// handler panicked), but for the stages the policy omits. A request that
// authentication refuses has one event, at ResponseStarted, with an empty user.
//
// # Wiring
//
//	opts := audit.NewOptions()
//	opts.AddFlags(fs)
//	// after parsing:
//	auditor, err := audit.New(ctx, opts) // opts.Validate() errors, ErrPolicy, ErrBackend
//	group.Start(ctx, lifecycle.Component{Name: "audit", Run: auditor.Run}) // before the HTTP server
//	// the chain: ..., authentication (its 401 answers through
//	// auditor.FailedAuthentication(unauthorized)), {Name: "audit", Wrap: auditor.Filter},
//	// impersonation (audit.LogImpersonatedUser(ctx, imp.User) once allowed), ...,
//	// authorization (audit.LogAuthorizationDecision(ctx, allowed, reason)), handlers.
//
// Run ends the backends when its context is done, sending what they still buffer; the
// HTTP server must have stopped serving by then (started after the auditor, it is
// stopped before it). Without a policy file, or without a backend, nothing is
// audited, but requests still get their Audit-ID.
//
// # What it must not touch
//
// It decides nothing about requests: who the user is (authentication), who they act
// as (impersonation), what they may do (authorization). It answers a request only
// when it cannot audit it (500): a blocking-strict backend failed to store its
// RequestReceived event, or the filter is twice in the chain. It does not
// place its filters in the chain (package server does), serves no API and stores
// nothing in etcd. Handlers reach events only through k8s.io/apiserver/pkg/audit's
// functions on the request's context.
package audit
