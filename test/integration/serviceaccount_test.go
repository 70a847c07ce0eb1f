package integration

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/serviceaccount"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestServiceAccountTokens: a token requested through one server (TokenRequest,
// kubectl create token) authenticates on every server as its service account, is
// authorized by RBAC bindings to it, is reviewed by TokenReview, and stops working when
// the account is deleted; an expired token or one signed by another key is 401.
func TestServiceAccountTokens(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubectl := kubectlOrSkip(t, c.Servers[0])
	out, err := kubectl("create", "token", "bot", "--duration=1h")
	if err != nil {
		t.Fatalf("kubectl create token: %s %v", out, err)
	}
	token := strings.TrimSpace(out)
	wantUser := "system:serviceaccount:default:bot"
	for i, s := range c.Servers {
		bot := kubernetes.NewForConfigOrDie(withToken(s.Config(), token))
		eventually(t, "the token authenticates on server "+string(rune('0'+i)), func() error {
			who, err := bot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err == nil && (who.Status.UserInfo.Username != wantUser || who.Status.UserInfo.UID != string(sa.UID) ||
				!slices.Contains(who.Status.UserInfo.Groups, "system:serviceaccounts:default")) {
				t.Fatalf("server %d: the token's user is %+v", i, who.Status.UserInfo)
			}
			return err
		})
	}

	// Authorized by a binding to the service account, like any user.
	bot := kubernetes.NewForConfigOrDie(withToken(c.Servers[1].Config(), token))
	if _, err := bot.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the bot lists without a binding: %v, want 403", err)
	}
	botSubject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "bot", Namespace: "default"}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, roleBinding("default", "bot-view", "ClusterRole", "view", botSubject), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the bot lists once bound", func() error {
		_, err := bot.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	})

	checkTokenReviews(t, admin, bot, token, wantUser)
	checkIssuerDiscovery(t, c, token)
	checkForgedTokens(t, c, sa)

	// Bad requests are refused, and nothing is stored.
	for _, tc := range []struct {
		spec authenticationv1.TokenRequestSpec
		want string
	}{
		{authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}, "may not specify a duration less than 10 minutes"},
	} {
		_, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "bot", &authenticationv1.TokenRequest{Spec: tc.spec}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TokenRequest %+v: %v, want 422 with %q", tc.spec, err, tc.want)
		}
	}
	checkSecretBoundTokens(t, c, admin)
	if _, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a token for a missing service account: %v, want 404", err)
	}

	// Deleted, the account's tokens stop working on every server, and a new account
	// of the same name does not revive them.
	if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "bot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, s := range c.Servers {
		bot := kubernetes.NewForConfigOrDie(withToken(s.Config(), token))
		eventually(t, "the deleted account's token is refused on server "+string(rune('0'+i)), func() error {
			_, err := bot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if apierrors.IsUnauthorized(err) {
				return nil
			}
			return errNotYet
		})
	}
	out, err = kubectl("get", "serviceaccounts")
	if err != nil || !strings.Contains(out, "AGE") || !strings.Contains(out, "bot") { // kube's printer: NAME and AGE
		t.Errorf("kubectl get serviceaccounts:\n%s%v", out, err)
	}
}

// checkSecretBoundTokens: a token bound to a Secret (kubectl create token
// --bound-object-kind Secret) authenticates on every server while the Secret lives,
// and on none once it is deleted, though its account lives; binding to a Pod (Concord
// serves none) is a 400, to a missing Secret a 404, to another Secret's UID a 409, as
// in Kubernetes.
func checkSecretBoundTokens(t *testing.T, c *harness.Cluster, admin kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	secret, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bot-binding"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubectl := kubectlOrSkip(t, c.Servers[1])
	out, err := kubectl("create", "token", "bot", "--bound-object-kind", "Secret", "--bound-object-name", "bot-binding")
	if err != nil {
		t.Fatalf("kubectl create token bound to a Secret: %s %v", out, err)
	}
	bound := strings.TrimSpace(out)
	review := func(s *harness.Server) error {
		_, err := kubernetes.NewForConfigOrDie(withToken(s.Config(), bound)).AuthenticationV1().SelfSubjectReviews().
			Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	}
	for _, s := range c.Servers {
		eventually(t, "the Secret-bound token authenticates", func() error { return review(s) })
	}
	for _, tc := range []struct {
		ref  authenticationv1.BoundObjectReference
		want func(error) bool
	}{
		{authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}, apierrors.IsBadRequest},
		{authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "absent"}, apierrors.IsNotFound},
		{authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "bot-binding", UID: "not-" + secret.UID}, apierrors.IsConflict},
	} {
		_, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "bot",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &tc.ref}}, metav1.CreateOptions{})
		if !tc.want(err) {
			t.Errorf("a token bound to %+v: %v", tc.ref, err)
		}
	}
	if err := admin.CoreV1().Secrets("default").Delete(ctx, "bot-binding", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Each server reads its Secrets' watch cache, as kube-apiserver reads a lister:
	// the token stops working once the deletion reaches it.
	for _, s := range c.Servers {
		eventually(t, "the token of a deleted Secret refused on "+s.ServerID, func() error {
			if err := review(s); !apierrors.IsUnauthorized(err) {
				return errNotYet
			}
			return nil
		})
	}
}

// checkTokenReviews: TokenReview says whose a token is, for the server's audiences or
// the ones asked; only those allowed may ask.
func checkTokenReviews(t *testing.T, admin, bot kubernetes.Interface, token, wantUser string) {
	ctx := t.Context()
	review := func(c kubernetes.Interface, audiences ...string) (*authenticationv1.TokenReview, error) {
		return c.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
	}
	tr, err := review(admin)
	if err != nil || !tr.Status.Authenticated || tr.Status.User.Username != wantUser {
		t.Errorf("TokenReview: %+v %v", tr, err)
	}
	tr, err = review(admin, "https://kubernetes.default.svc.cluster.local", "other")
	if err != nil || !tr.Status.Authenticated || !slices.Equal(tr.Status.Audiences, []string{"https://kubernetes.default.svc.cluster.local"}) {
		t.Errorf("TokenReview for two audiences: %+v %v", tr.Status, err)
	}
	tr, err = review(admin, "other")
	if err != nil || tr.Status.Authenticated || tr.Status.Error == "" {
		t.Errorf("TokenReview for another audience: %+v %v, want not authenticated, with an error", tr.Status, err)
	}
	if _, err := review(bot); !apierrors.IsForbidden(err) {
		t.Errorf("the bot reviews tokens: %v, want 403 (it is no auth delegator)", err)
	}
}

// checkIssuerDiscovery: a service account reads the issuer's discovery document and
// keys, and the token's key is among them.
func checkIssuerDiscovery(t *testing.T, c *harness.Cluster, token string) {
	cfg := withToken(c.Servers[0].Config(), token)
	resp, body := do(t, cfg, http.MethodGet, "/.well-known/openid-configuration", nil)
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil || doc.Issuer != "https://kubernetes.default.svc.cluster.local" {
		t.Errorf("openid-configuration: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, cfg, http.MethodGet, "/openid/v1/jwks", nil)
	kid := jwtHeader(t, token)["kid"]
	if resp.StatusCode != http.StatusOK || kid == "" || !strings.Contains(body, `"kid":"`+kid+`"`) {
		t.Errorf("jwks: %d %s, want the token's key %q", resp.StatusCode, body, kid)
	}
}

// checkForgedTokens: a token signed by another key, or expired, is 401.
func checkForgedTokens(t *testing.T, c *harness.Cluster, sa *corev1.ServiceAccount) {
	ctx := t.Context()
	otherKey, err := serviceaccount.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := serviceaccount.ParsePrivateKey(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := serviceaccount.NewIssuer("https://kubernetes.default.svc.cluster.local", signer)
	if err != nil {
		t.Fatal(err)
	}
	req := serviceaccount.Request{Namespace: "default", Name: "bot", UID: string(sa.UID), Audiences: []string{"https://kubernetes.default.svc.cluster.local"}, ExpirationSeconds: 3600}
	forged, _, err := forger.Issue(req)
	if err != nil {
		t.Fatal(err)
	}
	clusterKey := clusterServiceAccountKey(t, c)
	issuer, err := serviceaccount.NewIssuer("https://kubernetes.default.svc.cluster.local", clusterKey)
	if err != nil {
		t.Fatal(err)
	}
	req.ExpirationSeconds, req.Now = 600, time.Now().Add(-time.Hour)
	expired, _, err := issuer.Issue(req)
	if err != nil {
		t.Fatal(err)
	}
	for what, token := range map[string]string{"signed by another key": forged, "expired": expired} {
		_, err := kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), token)).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("a token %s: %v, want 401", what, err)
		}
	}
}

// clusterServiceAccountKey reads the cluster's service account key from etcd, as an
// attacker with etcd access could: to sign an expired token.
func clusterServiceAccountKey(t *testing.T, c *harness.Cluster) crypto.Signer {
	t.Helper()
	resp, err := c.EtcdClient.Get(t.Context(), "/registry/concord/credentials")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the credentials: %v", err)
	}
	var creds struct {
		ServiceAccountKey string `json:"serviceAccountKey"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &creds); err != nil {
		t.Fatal(err)
	}
	key, err := serviceaccount.ParsePrivateKey([]byte(creds.ServiceAccountKey))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// jwtHeader decodes a JWT's header.
func jwtHeader(t *testing.T, token string) map[string]string {
	t.Helper()
	part, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	_ = json.Unmarshal(b, &h)
	return h
}

// TestDelegatedAuthentication: a server that delegates authentication and
// authorization to Concord, as aggregated API servers built on k8s.io/apiserver do
// (its delegating authenticator and authorizer: TokenReview and SubjectAccessReview),
// authenticates Concord's users and asks Concord what they may do, once its own
// identity is bound to system:auth-delegator.
func TestDelegatedAuthentication(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	token := func(ns, name string) string {
		t.Helper()
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	delegate := kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), token("kube-system", "sample-apiserver")))
	backoff := &wait.Backoff{Duration: 100 * time.Millisecond, Factor: 1.5, Steps: 3}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient: delegate.AuthenticationV1(), TokenAccessReviewTimeout: 10 * time.Second, WebhookRetryBackoff: backoff,
	}.New()
	if err != nil {
		t.Fatal(err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{SubjectAccessReviewClient: delegate.AuthorizationV1(), WebhookRetryBackoff: backoff}.New()
	if err != nil {
		t.Fatal(err)
	}
	userToken := token("default", "flunder-reader")
	request := func(tok string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r.WithContext(ctx)
	}
	// Not yet an auth delegator: Concord refuses its reviews.
	if _, ok, err := authn.AuthenticateRequest(request(userToken)); ok || err == nil {
		t.Fatalf("delegated authentication without system:auth-delegator: ok=%v err=%v, want an error", ok, err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sample-apiserver:auth-delegator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "sample-apiserver"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var resp *authenticator.Response
	eventually(t, "delegated authentication", func() error {
		r, ok, err := authn.AuthenticateRequest(request(userToken))
		if err == nil && !ok {
			err = errNotYet
		}
		resp = r
		return err
	})
	if resp.User.GetName() != "system:serviceaccount:default:flunder-reader" {
		t.Fatalf("the delegated user: %+v", resp.User)
	}
	if _, ok, _ := authn.AuthenticateRequest(request("not-a-token")); ok {
		t.Error("a bad token authenticated through delegation")
	}
	attrs := authorizer.AttributesRecord{User: resp.User, Verb: "list", APIGroup: "wardle.example.com", APIVersion: "v1alpha1",
		Resource: "flunders", Namespace: "default", ResourceRequest: true}
	if d, _, _ := authz.Authorize(ctx, attrs); d == authorizer.DecisionAllow {
		t.Fatal("delegated authorization allowed a user without a grant")
	}
	if _, err := admin.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"wardle.example.com"}, Resources: []string{"flunders"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, roleBinding("default", "flunder-reader", "Role", "flunder-reader",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "flunder-reader"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "delegated authorization once granted", func() error {
		if d, reason, err := authz.Authorize(ctx, attrs); d != authorizer.DecisionAllow {
			return fmt.Errorf("%v %s: %w", d, reason, errors.Join(err, errNotYet))
		}
		return nil
	})
}
