package controlplane

import (
	"context"
	"slices"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/rbac"
	"github.com/concordproject/concord/rbac/bootstrap"
	"github.com/concordproject/concord/serviceaccount/tokens"
)

// newAuthorization builds the server's authorizer from --authorization-mode. With RBAC,
// it builds RBAC's feature (whose informers read the object store once started, when
// the registry is filled) and the bootstrap roles'; without it, neither.
func (i *Instance) newAuthorization() (*auth.Authorization, error) {
	modes := i.opts.Auth.AuthorizationModes
	if !slices.Contains(modes, auth.ModeRBAC) {
		return auth.NewAuthorization(modes, nil)
	}
	f, err := rbac.NewFeature(rbac.FeatureConfig{Registry: i.Registry, Informers: i.parts.informers})
	if err != nil {
		return nil, err
	}
	roles, err := bootstrap.NewFeature(bootstrap.FeatureConfig{Loopback: i.unlimitedLoopback(), ClusterRoles: f.ClusterRoles(), ServerID: i.ServerID})
	if err != nil {
		return nil, err
	}
	i.parts.rbac, i.parts.rbacBootstrap = f, roles
	return auth.NewAuthorization(modes, f.Authorizer())
}

// startBootstrapRoles starts the bootstrap roles and the ClusterRole aggregation
// controller, if the server runs RBAC.
func (i *Instance) startBootstrapRoles(ctx context.Context) error {
	if i.parts.rbacBootstrap == nil {
		return nil
	}
	return i.parts.rbacBootstrap.Start(ctx, &i.components)
}

// newServiceAccounts builds service account tokens (the cluster's signing key,
// --service-account-issuer) and adds their authenticator to the server's
// authentication; it returns what the token subresource issues with.
func (i *Instance) newServiceAccounts() (*builtin.ServiceAccountTokens, error) {
	o := i.opts
	f, err := tokens.NewFeature(tokens.FeatureConfig{Registry: i.Registry, Store: i.Store, Informers: i.parts.informers,
		SigningKey: i.parts.serving.serviceAccountKey, Issuer: o.ServiceAccounts.Issuer, APIAudiences: o.ServiceAccounts.Audiences(),
		MaxExpiration: o.ServiceAccounts.MaxTokenExpiration})
	if err != nil {
		return nil, err
	}
	i.parts.serving.authn.Tokens = append(i.parts.serving.authn.Tokens, f.Authenticator())
	i.parts.serviceAccounts = f
	return f.Tokens(), nil
}
