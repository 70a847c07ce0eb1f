package tokens

import (
	"context"
	"crypto"
	"errors"
	"fmt"

	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/serviceaccount"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/tools/cache"
)

// errNotSynced: the service accounts have not been read yet.
var errNotSynced = errors.New("the service accounts have not been read yet")

var (
	serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}
	secretsGR         = schema.GroupResource{Resource: "secrets"}
)

// FeatureConfig is what service account tokens need of the server: its context,
// the cluster's signing key and the flags that shape tokens.
type FeatureConfig struct {
	// Server is the server's; its registry may be filled after NewFeature: the
	// lookups read it per token. Start starts the informer of service accounts
	// through its shared informers, so that the informer-sync check counts it.
	feature.Server
	// SigningKey is the PEM of the cluster's service account key (package auth keeps
	// it in etcd with the CA).
	SigningKey []byte
	// Options are the --service-account-* flags and --api-audiences: the tokens'
	// issuer, and that of the discovery document; the audiences the API accepts (a
	// token must be for one of them, and a TokenRequest that names none gets them);
	// the cap of tokens' lifetime, if positive.
	serviceaccount.Options
}

// Feature is service account tokens as one server runs them: the issuer of the
// cluster's key, their authenticator (a token is valid while its service account
// exists with the UID it names, as an in-process informer of the service accounts
// sees them, and its bound Secret, if any, exists with its UID), what the token
// subresource issues with, and the issuer's discovery documents.
type Feature struct {
	registry        *registry.Registry
	store           *store.Store
	shared          *informers.Shared
	issuerURL       string
	issuer          *serviceaccount.Issuer
	serviceAccounts cache.SharedIndexInformer
	authenticator   *serviceaccount.Authenticator
	tokens          *builtin.ServiceAccountTokens
}

// NewFeature builds it: the issuer, the informer of service accounts (started by
// Start) and the authenticator reading it. Every server has it: it fails only on a
// key or issuer tokens cannot be signed with.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	key, err := serviceaccount.ParsePrivateKey(cfg.SigningKey)
	if err != nil {
		return nil, fmt.Errorf("the cluster's service account key: %w", err)
	}
	issuer, err := serviceaccount.NewIssuer(cfg.Issuer, key)
	audiences := cfg.Audiences()
	if err != nil {
		return nil, err
	}
	f := &Feature{registry: cfg.Registry, store: cfg.Store, shared: cfg.Informers, issuerURL: cfg.Issuer, issuer: issuer,
		serviceAccounts: cfg.Store.NewInformer(store.Source{Registry: cfg.Registry, Resource: serviceAccountsGR, Version: "v1"}, nil)}
	f.authenticator, err = serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: []string{cfg.Issuer}, Keys: []crypto.PublicKey{issuer.PublicKey()},
		APIAudiences: audiences, Lookup: f.serviceAccountUID, LookupBoundObject: f.boundObjectUID,
	})
	if err != nil {
		return nil, err
	}
	f.tokens = &builtin.ServiceAccountTokens{Issuer: issuer, APIAudiences: audiences, MaxExpiration: cfg.MaxTokenExpiration,
		SecretUID: f.secretUID}
	return f, nil
}

// Checks returns none: its informer counts in the server's informer-sync check.
func (f *Feature) Checks() []health.Checker { return nil }

// Start starts the informer of service accounts as the component
// serviceaccount-informer; ready once it has read them, so that tokens authenticate
// from the server's first request.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	return f.shared.Start(ctx, g, "serviceaccount-informer", errNotSynced, f.serviceAccounts)
}

// Authenticator returns the authenticator of service account tokens, which the
// server's authentication tries after its static tokens.
func (f *Feature) Authenticator() authenticator.Token { return f.authenticator }

// Tokens returns how the token subresource of ServiceAccounts issues tokens, for the
// built-in resources' configuration (builtin.Options).
func (f *Feature) Tokens() *builtin.ServiceAccountTokens { return f.tokens }

// serviceAccountUID is the authenticator's Lookup: the UID of service account
// namespace/name, as the informer has it.
func (f *Feature) serviceAccountUID(_ context.Context, namespace, name string) (string, error) {
	obj, exists, err := f.serviceAccounts.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", fmt.Errorf("%w: %s/%s", serviceaccount.ErrServiceAccountNotFound, namespace, name)
	}
	return string(obj.(*unstructured.Unstructured).GetUID()), nil
}

// boundObjectUID is the authenticator's LookupBoundObject: the UID of the Secret a
// token is bound to (Concord serves no Pods or Nodes a token could be bound to).
func (f *Feature) boundObjectUID(ctx context.Context, kind, namespace, name string) (string, error) {
	if kind != serviceaccount.KindSecret {
		return "", fmt.Errorf("%w: %s %s/%s (Concord serves no %ss)", serviceaccount.ErrBoundObjectNotFound, kind, namespace, name, kind)
	}
	uid, err := f.cachedSecretUID(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%w: %w", serviceaccount.ErrBoundObjectNotFound, err)
	}
	return uid, err
}

// cachedSecretUID returns the UID of Secret namespace/name as the Secrets' watch cache
// has it (no etcd read per request, as kube-apiserver reads a lister), or, when the
// cache does not hold it (not loaded, or the Secret just created), from storage.
func (f *Feature) cachedSecretUID(ctx context.Context, namespace, name string) (string, error) {
	res := f.registry.Get(secretsGR)
	if res == nil {
		return "", apierrors.NewNotFound(secretsGR, name)
	}
	list, err := f.store.List(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace},
		metav1.ListOptions{ResourceVersion: "0", FieldSelector: "metadata.name=" + name})
	if err == nil && len(list.Items) == 1 {
		return string(list.Items[0].GetUID()), nil
	}
	return f.secretUID(ctx, namespace, name)
}

// secretUID returns the UID of Secret namespace/name, read from storage.
func (f *Feature) secretUID(ctx context.Context, namespace, name string) (string, error) {
	res := f.registry.Get(secretsGR)
	if res == nil {
		return "", apierrors.NewNotFound(secretsGR, name)
	}
	obj, err := f.store.Get(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace, Name: name}, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return string(obj.GetUID()), nil
}
