package server

import (
	"slices"
	"strings"

	"github.com/concordproject/concord/server/filters"
)

// Chain is the handler chain, outermost first: every request the server answers
// passes these filters in this order before it reaches a handler (discovery, the REST
// verbs of every resource, the storage-migration rewrite, OpenAPI, health, version,
// metrics, profiles). It is the one definition of the order; docs cite it.
//
//  1. recovery: a panic becomes a 500 Status;
//  2. request-info: what the method and URL say (request.Info);
//  3. warnings: what the request's handling warns of (admission policies' Warn
//     action) becomes Warning headers of the answer;
//  4. metrics: apiserver_request_total and _duration_seconds;
//  5. timeout: the request timeout, watches excepted;
//  6. authentication: the user, or 401 (public paths admit anonymous users; the 401
//     is audited);
//  7. audit (Config.Audit): the request's audit events, as the audit policy says;
//  8. request-body: the whole body read, within the size limit (413), the request's
//     deadline (504) and the user's count of bodies still arriving (429), so that
//     no later stage waits on a slow client;
//  9. impersonation: Impersonate-* headers replace the user, if the authorizer
//     (Config.Authorizer) allows the authenticated one to impersonate it; 403
//     otherwise;
//  10. priority-and-fairness (Config.FlowControl, if set): the request waits for a
//     seat of its priority level, or is answered 429;
//  11. authorization: 403 unless the authorizer allows;
//  12. client-skew (Config.ClientSkew, if set): clients outside the version skew the
//     server allows are counted and logged, never refused;
//  13. ready-for-writes (Config.WritesWhenReady, if set): until the server's start-up
//     is done, clients' writes wait for it (the server's own pass), so that none is
//     accepted while /readyz still fails after a (re)start;
//  14. storage-version-barrier (Config.StorageVersionBarrier, if set): writes of a
//     resource wait until this server's storage version for it is registered.
//
// A filter that does not concern a request passes it on; whichever answers stops it.
func (s *Server) Chain() []filters.Filter { return slices.Clone(s.chain) }

// buildChain makes the filters of Chain; New calls it once.
func (s *Server) buildChain() []filters.Filter {
	chain := []filters.Filter{
		filters.Recovery(),
		filters.RequestInfo(),
		filters.Warnings(),
		filters.Metrics(s.cfg.Metrics),
		filters.Timeout(s.cfg.RequestTimeout),
		filters.Authentication(s.cfg.Authenticator, publicPath, s.cfg.Audit.FailedAuthentication),
		{Name: "audit", Wrap: s.cfg.Audit.Filter},
		filters.RequestBody(filters.BodyLimits{MaxBytes: s.cfg.MaxRequestBodyBytes, PerUser: s.cfg.MaxBodyReadsPerUser}),
		filters.Impersonation(s.cfg.Authorizer),
	}
	if s.cfg.FlowControl != nil {
		chain = append(chain, filters.Filter{Name: "priority-and-fairness", Wrap: s.cfg.FlowControl})
	}
	chain = append(chain, filters.Authorization(s.cfg.Authorizer))
	if s.cfg.ClientSkew != nil {
		chain = append(chain, filters.Filter{Name: "client-skew", Wrap: s.cfg.ClientSkew})
	}
	if s.cfg.WritesWhenReady != nil {
		chain = append(chain, s.cfg.WritesWhenReady.Filter())
	}
	if s.cfg.StorageVersionBarrier != nil {
		chain = append(chain, filters.Filter{Name: "storage-version-barrier", Wrap: s.cfg.StorageVersionBarrier})
	}
	return chain
}

// publicPath reports whether a path may be read without credentials.
func publicPath(p string) bool {
	for _, prefix := range []string{"/healthz", "/livez", "/readyz"} {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return true
		}
	}
	return p == "/version" || p == "/version/"
}
