// Package tokens owns a server's wiring of service account tokens, on package
// serviceaccount's keys, issuer and authenticator: the issuer of the cluster's
// signing key (--service-account-issuer), the authenticator the server's
// authentication tries after its static tokens, the lookups it checks tokens with (an
// in-process informer of the service accounts; Secrets' UIDs from the watch cache,
// else storage), what the TokenRequest subresource issues with
// (builtin.ServiceAccountTokens), and the issuer's OpenID Connect discovery
// documents, served behind the handler chain.
//
// # Usage
//
//	f, err := tokens.NewFeature(tokens.FeatureConfig{Server: srv, SigningKey: creds.ServiceAccountKey,
//		Options: serviceaccount.Options{Issuer: "https://kubernetes.default.svc.cluster.local"}})
//	authn.Tokens = append(authn.Tokens, f.Authenticator())
//	// builtin.Options{ServiceAccountTokens: f.Tokens()}, the registry filled, then:
//	err = f.Start(ctx, &components) // ready once the service accounts are read
//	err = f.InstallDiscovery(srv.Mux())
//
// # What it must not touch
//
// Tokens' format, signatures and checks are package serviceaccount's, a leaf that
// imports nothing of Concord; the TokenRequest handler is package builtin's. It
// writes no object and holds no flag: the flags are package serviceaccount's Options,
// which FeatureConfig takes.
package tokens
