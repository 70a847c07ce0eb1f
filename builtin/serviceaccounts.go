package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/serviceaccount"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}

// ErrNoTokens means a token was asked of resources configured without
// Options.ServiceAccountTokens, which only tools that serve nothing do.
var ErrNoTokens = errors.New("service account tokens need the server's issuer")

// Token lifetimes, as Kubernetes bounds them.
const (
	defaultTokenSeconds = 3600
	minTokenSeconds     = 600
)

// ServiceAccountTokens says how a server issues the tokens of TokenRequests.
type ServiceAccountTokens struct {
	// Issuer signs them.
	Issuer *serviceaccount.Issuer
	// APIAudiences are the audiences of a token whose request names none.
	APIAudiences []string
	// MaxExpiration, if positive, caps their lifetime
	// (--service-account-max-token-expiration).
	MaxExpiration time.Duration
	// SecretUID returns the UID of a Secret, for tokens bound to one; a missing
	// Secret is a NotFound StatusError. Nil: no token is bound to a Secret.
	SecretUID func(ctx context.Context, namespace, name string) (string, error)
}

var tokenRequestKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// configureServiceAccounts gives core ServiceAccounts kubectl's SECRETS column and
// their token subresource: POST .../serviceaccounts/<name>/token with a TokenRequest
// is answered with a bound, expiring token (kubectl create token).
func configureServiceAccounts(tokens *ServiceAccountTokens) func(*registry.Resource) error {
	return func(res *registry.Resource) error {
		res.Hooks = &registry.Hooks{Actions: map[string]registry.Action{
			"token": {Kind: tokenRequestKind, Do: func(ctx context.Context, sa *unstructured.Unstructured, body []byte, _ bool) (runtime.Object, error) {
				if tokens == nil {
					return nil, apierrors.NewInternalError(ErrNoTokens)
				}
				return tokens.request(ctx, sa, body)
			}},
		}}
		if res.HasPrinterColumns([]string{"Secrets", "Age"}) {
			res.Hooks.TableCells = func(obj *unstructured.Unstructured) []interface{} {
				secrets, _, _ := unstructured.NestedSlice(obj.Object, "secrets")
				return []interface{}{int64(len(secrets)), metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
			}
		}
		return nil
	}
}

// request answers a TokenRequest for sa: defaults (an hour, the API's audiences),
// Kubernetes' validation, the server's maximum lifetime, the object the token is bound
// to, then the signed token.
func (t *ServiceAccountTokens) request(ctx context.Context, sa *unstructured.Unstructured, body []byte) (*authenticationv1.TokenRequest, error) {
	tr := &authenticationv1.TokenRequest{}
	if err := json.Unmarshal(body, tr); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not a TokenRequest: %v", err))
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = ptrTo(int64(defaultTokenSeconds))
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = t.APIAudiences
	}
	if errs := validateTokenRequest(tr); len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestKind.GroupKind(), sa.GetName(), errs)
	}
	if longest := int64(t.MaxExpiration / time.Second); longest > 0 && *tr.Spec.ExpirationSeconds > longest {
		tr.Spec.ExpirationSeconds = ptrTo(longest)
	}
	bound, err := t.boundObject(ctx, sa.GetNamespace(), tr.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	token, expires, err := t.Issuer.Issue(serviceaccount.Request{
		Namespace: sa.GetNamespace(), Name: sa.GetName(), UID: string(sa.GetUID()),
		Audiences: tr.Spec.Audiences, ExpirationSeconds: *tr.Spec.ExpirationSeconds, Now: now,
		BoundObject: bound,
	})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	tr.TypeMeta = metav1.TypeMeta{APIVersion: tokenRequestKind.GroupVersion().String(), Kind: tokenRequestKind.Kind}
	tr.Name, tr.Namespace = sa.GetName(), sa.GetNamespace()
	tr.CreationTimestamp = metav1.NewTime(now)
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expires)}
	return tr, nil
}

// boundObject resolves the object a TokenRequest binds its token to, as Kubernetes
// does: a Secret of the service account's namespace (404 if it does not exist, 409 if
// the reference's UID is another's). Concord serves no Pods or Nodes: binding to one
// is refused as Kubernetes refuses a kind it cannot bind to.
func (t *ServiceAccountTokens) boundObject(ctx context.Context, namespace string, ref *authenticationv1.BoundObjectReference) (*serviceaccount.BoundObject, error) {
	if ref == nil {
		return nil, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if gvk.Group != "" || gvk.Kind != serviceaccount.KindSecret || t.SecretUID == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk))
	}
	uid, err := t.SecretUID(ctx, namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return &serviceaccount.BoundObject{Kind: serviceaccount.KindSecret, Name: ref.Name, UID: uid}, nil
}

// validateTokenRequest is Kubernetes' validation of a TokenRequest's spec.
func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	switch secs := *tr.Spec.ExpirationSeconds; {
	case secs < minTokenSeconds:
		errs = append(errs, field.Invalid(specPath.Child("expirationSeconds"), secs, "may not specify a duration less than 10 minutes"))
	case secs > serviceaccount.MaxExpirationSeconds:
		errs = append(errs, field.Invalid(specPath.Child("expirationSeconds"), secs, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}

func ptrTo[T any](v T) *T { return &v }
