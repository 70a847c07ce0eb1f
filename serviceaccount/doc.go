// Package serviceaccount owns Kubernetes service account tokens: the bound, expiring
// JWTs the TokenRequest API (serviceaccounts/<name>/token) issues, their
// authentication, and the OIDC discovery documents that let relying parties outside
// the cluster verify them. Tokens are Kubernetes', so clients and relying parties
// cannot tell Concord's from kube-apiserver's.
//
// # Keys
//
// ParsePrivateKey reads the signing key (the cluster's, which package auth keeps in
// etcd with the CA; ECDSA or RSA, SEC 1, PKCS #1 or PKCS #8 PEM) and GenerateKey makes a new ECDSA P-256 one. The
// algorithm follows the key (RS256 for RSA, ES256 for P-256; Algorithm), and a key's
// ID is Kubernetes' (KeyID: base64url of the SHA-256 of its PKIX encoding).
//
// # Tokens
//
// An Issuer signs tokens whose claims are Kubernetes':
//
//	{"iss": issuer, "sub": "system:serviceaccount:<ns>:<name>", "aud": [...],
//	 "exp": ..., "nbf": ..., "iat": ..., "jti": "<random UUID>",
//	 "kubernetes.io": {"namespace": "<ns>", "serviceaccount": {"name", "uid"},
//	                   "pod"|"secret"|"node": {"name", "uid"}}}
//
// (a pod-bound token also carries the pod's "node"), with the header {"alg", "kid"}.
//
// An Authenticator is the authenticator.Token of service account tokens: a token of
// one of its issuers whose signature, times (with Leeway), audiences, service account
// (and, optionally, bound object) hold is Kubernetes' service account user; one that
// fails is an error saying why (ErrInvalidToken, ErrExpired, ...); any other token is
// not its business and is left to the chain's other authenticators.
//
//	key, err := serviceaccount.ParsePrivateKey(pemBytes)
//	issuer, err := serviceaccount.NewIssuer("https://concord.example", key)
//	token, expires, err := issuer.Issue(serviceaccount.Request{
//		Namespace: "default", Name: "builder", UID: string(sa.UID),
//		Audiences: []string{"https://concord.example"}, ExpirationSeconds: 3600,
//		BoundObject: &serviceaccount.BoundObject{Kind: serviceaccount.KindPod, Name: pod.Name, UID: string(pod.UID)},
//	})
//	authn, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
//		Issuers: []string{"https://concord.example"},
//		Keys:    []crypto.PublicKey{issuer.PublicKey()},
//		Lookup: func(ctx context.Context, namespace, name string) (string, error) {
//			sa, err := serviceAccountLister.ServiceAccounts(namespace).Get(name)
//			if apierrors.IsNotFound(err) {
//				return "", fmt.Errorf("%w: %w", serviceaccount.ErrServiceAccountNotFound, err)
//			}
//			if err != nil {
//				return "", err
//			}
//			return string(sa.UID), nil
//		},
//	})
//	resp, ok, err := authn.AuthenticateToken(ctx, token)
//	// resp.User: system:serviceaccount:default:builder, groups system:serviceaccounts
//	// and system:serviceaccounts:default, extras credential-id "JTI=...", pod-name, pod-uid
//
// # Discovery
//
// OpenIDConfiguration and JWKS render the documents kube-apiserver serves at
// OpenIDConfigPath and JWKSPath (--service-account-jwks-uri).
//
// # What it must not touch
//
// It owns no objects and no HTTP: the TokenRequest REST handler (which fetches the
// service account and the bound object, applies the API's validation and expiration
// bounds, and calls Issue) is package builtin's; a server's wiring (the discovery
// handlers, the informers behind the lookups, the authenticator's place in the
// server's authentication) is package tokens' (serviceaccount/tokens). It reads no
// files and imports nothing of Concord. Tokens and private keys never appear in its
// errors or logs.
package serviceaccount
