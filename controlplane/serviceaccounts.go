package controlplane

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"

	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/serviceaccount"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// errServiceAccountsNotSynced: the service accounts have not been read yet.
var errServiceAccountsNotSynced = errors.New("the service accounts have not been read yet")

var (
	serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}
	secretsGR         = schema.GroupResource{Resource: "secrets"}
)

// newServiceAccountTokens builds what issues service account tokens (the cluster's
// signing key, --service-account-issuer) and adds their authenticator to the server's
// authentication: a token is valid while its service account exists with the UID it
// names, as an in-process informer of the service accounts (started by
// startServiceAccounts) sees them.
func (i *Instance) newServiceAccountTokens(keyPEM []byte) (*builtin.ServiceAccountTokens, error) {
	o := i.opts
	key, err := serviceaccount.ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the cluster's service account key: %w", err)
	}
	issuer, err := serviceaccount.NewIssuer(o.ServiceAccounts.Issuer, key)
	if err != nil {
		return nil, err
	}
	inf := i.Store.NewInformer(store.Source{Registry: i.Registry, Resource: serviceAccountsGR, Version: "v1"}, nil)
	i.parts.serviceAccounts = inf
	lookup := func(_ context.Context, namespace, name string) (string, error) {
		obj, exists, err := inf.GetStore().GetByKey(namespace + "/" + name)
		if err != nil {
			return "", err
		}
		if !exists {
			return "", fmt.Errorf("%w: %s/%s", serviceaccount.ErrServiceAccountNotFound, namespace, name)
		}
		return string(obj.(*unstructured.Unstructured).GetUID()), nil
	}
	authn, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: []string{o.ServiceAccounts.Issuer}, Keys: []crypto.PublicKey{issuer.PublicKey()},
		APIAudiences: o.ServiceAccounts.Audiences(), Lookup: lookup,
		LookupBoundObject: func(ctx context.Context, kind, namespace, name string) (string, error) {
			if kind != serviceaccount.KindSecret {
				return "", fmt.Errorf("%w: %s %s/%s (Concord serves no %ss)", serviceaccount.ErrBoundObjectNotFound, kind, namespace, name, kind)
			}
			uid, err := i.cachedSecretUID(ctx, namespace, name)
			if apierrors.IsNotFound(err) {
				return "", fmt.Errorf("%w: %w", serviceaccount.ErrBoundObjectNotFound, err)
			}
			return uid, err
		},
	})
	if err != nil {
		return nil, err
	}
	i.parts.serving.authn.Tokens = append(i.parts.serving.authn.Tokens, authn)
	i.parts.issuer = issuer
	return &builtin.ServiceAccountTokens{Issuer: issuer, APIAudiences: o.ServiceAccounts.Audiences(), MaxExpiration: o.ServiceAccounts.MaxTokenExpiration,
		SecretUID: i.secretUID}, nil
}

// cachedSecretUID returns the UID of Secret namespace/name as the Secrets' watch cache
// has it (no etcd read per request, as kube-apiserver reads a lister), or, when the
// cache does not hold it (not loaded, or the Secret just created), from storage.
func (i *Instance) cachedSecretUID(ctx context.Context, namespace, name string) (string, error) {
	res := i.Registry.Get(secretsGR)
	if res == nil {
		return "", apierrors.NewNotFound(secretsGR, name)
	}
	list, err := i.Store.List(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace},
		metav1.ListOptions{ResourceVersion: "0", FieldSelector: "metadata.name=" + name})
	if err == nil && len(list.Items) == 1 {
		return string(list.Items[0].GetUID()), nil
	}
	return i.secretUID(ctx, namespace, name)
}

// secretUID returns the UID of Secret namespace/name, read from storage.
func (i *Instance) secretUID(ctx context.Context, namespace, name string) (string, error) {
	res := i.Registry.Get(secretsGR)
	if res == nil {
		return "", apierrors.NewNotFound(secretsGR, name)
	}
	obj, err := i.Store.Get(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace, Name: name}, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return string(obj.GetUID()), nil
}

// startServiceAccounts starts the informer of service accounts; ready once it has
// read them, so that tokens authenticate from the server's first request.
func (i *Instance) startServiceAccounts(ctx context.Context) error {
	inf := i.parts.serviceAccounts
	if inf == nil {
		return nil
	}
	return i.parts.informers.Start(ctx, &i.components, "serviceaccount-informer", errServiceAccountsNotSynced, inf)
}

// installIssuerDiscovery serves the issuer's OpenID Connect discovery document and its
// public keys, as kube-apiserver does, behind the handler chain (RBAC's
// system:service-account-issuer-discovery role grants them).
func (i *Instance) installIssuerDiscovery(mux *http.ServeMux) error {
	issuer := i.parts.issuer
	if issuer == nil {
		return nil
	}
	keys := []crypto.PublicKey{issuer.PublicKey()}
	config, err := serviceaccount.OpenIDConfiguration(i.opts.ServiceAccounts.Issuer, i.opts.ServiceAccounts.Issuer+serviceaccount.JWKSPath, keys)
	if err != nil {
		return err
	}
	jwks, err := serviceaccount.JWKS(keys)
	if err != nil {
		return err
	}
	serve := func(body []byte, contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		}
	}
	mux.Handle(serviceaccount.OpenIDConfigPath, serve(config, "application/json"))
	mux.Handle(serviceaccount.JWKSPath, serve(jwks, "application/jwk-set+json"))
	return nil
}
