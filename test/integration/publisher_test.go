package integration

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/storageversion/publisher"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

var flundersGR = schema.GroupResource{Group: "wardle.example.com", Resource: "flunders"}

// Aggregated servers publish their own StorageVersion entries through Concord's API
// with package storageversion/publisher, under identities of their own that an
// APIService names: each holds an identity lease; its entries make the common encoding
// version as Concord's servers' do; the garbage collector keeps them while the lease
// lives and removes them once it lapses; a graceful stop withdraws them. Nobody else
// writes StorageVersions: not an administrator, not the publisher for a group not its
// own.
func TestAggregatedServerPublishesStorageVersions(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	publisherConfig := publisherIdentity(t, c)
	apis := aggregatorclient.NewForConfigOrDie(c.Servers[0].Config()).ApiregistrationV1().APIServices()
	if _, err := apis.Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com",
			Annotations: map[string]string{"storageversion.concord.io/publishers": "system:serviceaccount:wardle:apiserver"}},
		Spec: apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "wardle", Name: "api"},
			Group: "wardle.example.com", Version: "v1alpha1", InsecureSkipTLSVerify: true, GroupPriorityMinimum: 1000, VersionPriority: 15},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Two servers of the aggregated API; the second one is cut off before it stops, as
	// a crash would leave it.
	stop1, _ := runPublisher(t, publisherConfig, "wardle-1", "wardle.example.com/v1alpha1")
	waitEntries(t, admin, map[string]string{"wardle-1": "wardle.example.com/v1alpha1"}, ptrString("wardle.example.com/v1alpha1"))
	stop2, cut2 := runPublisher(t, publisherConfig, "wardle-2", "wardle.example.com/v1beta1")
	waitEntries(t, admin, map[string]string{"wardle-1": "wardle.example.com/v1alpha1", "wardle-2": "wardle.example.com/v1beta1"}, nil)
	lease, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, "wardle-2", metav1.GetOptions{})
	if err != nil || lease.Labels["apiserver.kubernetes.io/identity"] != "wardle-apiserver" {
		t.Fatalf("wardle-2's identity lease: %+v %v", lease, err)
	}

	checkRefusals(t, c, publisherConfig)

	cut2.Store(true)
	stop2()
	waitEntries(t, admin, map[string]string{"wardle-1": "wardle.example.com/v1alpha1"}, ptrString("wardle.example.com/v1alpha1"))
	stop1()
	waitFor(t, "wardle-1's entry withdrawn and its lease deleted", func() (bool, error) {
		sv, err := admin.InternalV1alpha1().StorageVersions().Get(ctx, "wardle.example.com.flunders", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		_, leaseErr := admin.CoordinationV1().Leases("kube-system").Get(ctx, "wardle-1", metav1.GetOptions{})
		return (apierrors.IsNotFound(err) || len(sv.Status.StorageVersions) == 0) && apierrors.IsNotFound(leaseErr), nil
	})
}

// publisherIdentity creates the aggregated servers' service account with the grants
// the publisher needs, and returns a client configuration as it.
func publisherIdentity(t *testing.T, c *harness.Cluster) *rest.Config {
	t.Helper()
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wardle"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("wardle").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "apiserver"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := "system:serviceaccount:wardle:apiserver"
	grant(t, admin, "kube-system", "wardle-leases", sa, "coordination.k8s.io", "leases", "get", "create", "update", "delete")
	grant(t, admin, "", "wardle-storageversions", sa, "internal.apiserver.k8s.io", "storageversions", "get", "create", "update")
	grant(t, admin, "", "wardle-storageversions-status", sa, "internal.apiserver.k8s.io", "storageversions/status", "update")
	tr, err := admin.CoreV1().ServiceAccounts("wardle").CreateToken(ctx, "apiserver", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return withToken(c.Servers[1].Config(), tr.Status.Token)
}

// runPublisher runs a publisher of flunders for server id, encoded in encoding, until
// stop is called (which waits for it); once cut is set, its requests fail.
func runPublisher(t *testing.T, cfg *rest.Config, id, encoding string) (stop func(), cut *atomic.Bool) {
	t.Helper()
	cut = &atomic.Bool{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if cut.Load() {
				return nil, errors.New("cut off")
			}
			return rt.RoundTrip(r)
		})
	})
	p, err := publisher.New(publisher.Config{
		Client: kubernetes.NewForConfigOrDie(cfg), ServerID: id, Kind: "wardle-apiserver",
		Resources: []publisher.Resource{{GroupResource: flundersGR, EncodingVersion: encoding,
			DecodableVersions: []string{"wardle.example.com/v1beta1", "wardle.example.com/v1alpha1"},
			ServedVersions:    []string{"wardle.example.com/v1beta1", "wardle.example.com/v1alpha1"}}},
		LeaseDuration: 3 * time.Second, RenewInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The barrier: writes of flunders wait for the entry, reads do not.
	barrier := p.Filter(func(r *http.Request) (schema.GroupResource, bool, bool) {
		return flundersGR, r.Method != http.MethodGet, true
	}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	if code := serve(barrier, http.MethodPost); code != http.StatusServiceUnavailable {
		t.Errorf("a write before the entry is published: %d, want 503", code)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	waitFor(t, id+"'s entry published", func() (bool, error) { return p.Published(flundersGR), nil })
	if code := serve(barrier, http.MethodPost); code != http.StatusOK {
		t.Errorf("a write once the entry is published: %d, want 200", code)
	}
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop, cut
}

func serve(h http.Handler, method string) int {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders", nil))
	return w.Code
}

// waitEntries waits until the flunders' StorageVersion holds exactly the entries of
// want (server ID → encoding version) and the common encoding version common.
func waitEntries(t *testing.T, client kubernetes.Interface, want map[string]string, common *string) {
	t.Helper()
	waitFor(t, "the flunders' StorageVersion entries", func() (bool, error) {
		sv, err := client.InternalV1alpha1().StorageVersions().Get(t.Context(), "wardle.example.com.flunders", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		got := map[string]string{}
		for _, e := range sv.Status.StorageVersions {
			got[e.APIServerID] = e.EncodingVersion
		}
		same := len(got) == len(want)
		for id, v := range want {
			same = same && got[id] == v
		}
		c := sv.Status.CommonEncodingVersion
		return same && ((c == nil && common == nil) || (c != nil && common != nil && *c == *common)), nil
	})
}

func ptrString(s string) *string { return &s }

// checkRefusals checks who may not write StorageVersions: the administrator, and the
// publisher for a group no APIService of its names.
func checkRefusals(t *testing.T, c *harness.Cluster, publisherConfig *rest.Config) {
	t.Helper()
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	sv, err := admin.InternalV1alpha1().StorageVersions().Get(ctx, "wardle.example.com.flunders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sv.Status.StorageVersions = nil
	if _, err := admin.InternalV1alpha1().StorageVersions().UpdateStatus(ctx, sv, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the administrator clearing an aggregated API's entries: %v, want 403", err)
	}
	pub := kubernetes.NewForConfigOrDie(publisherConfig).InternalV1alpha1().StorageVersions()
	if _, err := pub.Create(ctx, &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: "other.example.com.things"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the publisher creating another group's StorageVersion: %v, want 403", err)
	}
	core, err := admin.InternalV1alpha1().StorageVersions().Get(ctx, "core.configmaps", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	core.Status.StorageVersions = nil
	if _, err := pub.UpdateStatus(ctx, core, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the publisher clearing the ConfigMaps' entries: %v, want 403", err)
	}
}

// grant gives user verbs on resource of group: a Role and RoleBinding in namespace,
// or a ClusterRole and ClusterRoleBinding when namespace is empty.
func grant(t *testing.T, client kubernetes.Interface, namespace, name, user, group, resource string, verbs ...string) {
	t.Helper()
	ctx := t.Context()
	rules := []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	var err error
	if namespace != "" {
		if _, err = client.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = client.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
		}
	} else if _, err = client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err == nil {
		_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}
