package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// barrierLeaseTokens are the users of TestStorageVersionBarrierLeases: an ordinary user
// allowed to write leases in kube-system, Concord's controller manager, and the
// identity of an aggregated server that publishes StorageVersions.
const barrierLeaseTokens = "leaser-token,leaser,3001\n" +
	"cm-token,system:concord:controller-manager,3002\n" +
	"wardle-token,wardle-publisher,3003\n"

// The write barrier lets through writes to leases in kube-system only from those who
// hold identity or election leases there (issue 31): on a server whose registration of
// leases keeps failing (their StorageVersion holds a condition its writes cannot get
// past), an ordinary user with RBAC rights on those leases, and the administrator, get
// the barrier's 503 for creates, updates and deletes, while the server's loopback
// identity, Concord's controller manager and an aggregated server an APIService names
// as publisher write them. Once the StorageVersion is repaired, the ordinary user's
// writes pass.
func TestStorageVersionBarrierLeases(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := harness.Start(t, 1, withTokens(t, barrierLeaseTokens))
	a := c.Servers[0]
	admin := a.Clientset(t)
	grantLeases(t, a, "leaser", "wardle-publisher")
	if _, err := aggregatorclient.NewForConfigOrDie(a.Config()).ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com",
			Annotations: map[string]string{"storageversion.concord.io/publishers": "wardle-publisher"}},
		Spec: apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "wardle", Name: "api"},
			Group: "wardle.example.com", Version: "v1alpha1", InsecureSkipTLSVerify: true, GroupPriorityMinimum: 1000, VersionPriority: 15},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "existing"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Poison the leases' StorageVersion behind the servers' back, then start a server
	// that cannot register leases.
	key := "/registry/internal.apiserver.k8s.io/storageversions/coordination.k8s.io.leases"
	original := poisonStorageVersion(t, c, key)
	b := c.AddServer(t)
	cfg := b.Config()
	leaser := svWithToken(cfg, "leaser-token")

	const prefix = "wait for storage version registration to complete for resource: leases.coordination.k8s.io, last seen error: "
	for _, tc := range []struct {
		who          string
		cfg          *rest.Config
		method, path string
		body         interface{}
	}{
		{"an ordinary user creating", leaser, http.MethodPost, leasePath(""), leaseBody("mine")},
		{"an ordinary user updating", leaser, http.MethodPatch, leasePath("existing"), map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]string{"a": "b"}}}},
		{"an ordinary user deleting", leaser, http.MethodDelete, leasePath("existing"), nil},
		{"the administrator creating", cfg, http.MethodPost, leasePath(""), leaseBody("admins")},
	} {
		code, st, hdr, body := svHTTP(t, tc.cfg, tc.method, tc.path, tc.body)
		if code != http.StatusServiceUnavailable || st == nil || st.Reason != metav1.StatusReasonServiceUnavailable ||
			!strings.HasPrefix(st.Message, prefix) || !strings.Contains(st.Message, "reason: Required value") || hdr.Get("Retry-After") != "1" {
			t.Errorf("%s a lease in kube-system: %d Retry-After=%q %s; want the barrier's 503 %q", tc.who, code, hdr.Get("Retry-After"), body, prefix+"...")
		}
	}

	for _, tc := range []struct {
		who  string
		cfg  *rest.Config
		name string
	}{
		{"the server's loopback identity", b.LoopbackConfig(), "loopback"},
		{"Concord's controller manager", svWithToken(cfg, "cm-token"), "controller-manager-x"},
	} {
		if code, _, _, body := svHTTP(t, tc.cfg, http.MethodPost, leasePath(""), leaseBody(tc.name)); code != http.StatusCreated {
			t.Errorf("%s creating its lease: %d %s; want 201", tc.who, code, body)
		}
		renew := map[string]interface{}{"spec": map[string]interface{}{"holderIdentity": tc.name}}
		if code, _, _, body := svHTTP(t, tc.cfg, http.MethodPatch, leasePath(tc.name), renew); code != http.StatusOK {
			t.Errorf("%s renewing its lease: %d %s; want 200", tc.who, code, body)
		}
	}
	// The aggregated server is known once the new server's aggregator has read the
	// APIService.
	publisher := svWithToken(cfg, "wardle-token")
	waitFor(t, "the publisher's lease written through the barrier", func() (bool, error) {
		code, _, _, _ := svHTTP(t, publisher, http.MethodPost, leasePath(""), leaseBody("wardle-1"))
		return code == http.StatusCreated, nil
	})
	if code, _, _, body := svHTTP(t, publisher, http.MethodDelete, leasePath("wardle-1"), nil); code != http.StatusOK {
		t.Errorf("the publisher deleting its lease: %d %s; want 200", code, body)
	}

	// Repaired, the server registers leases and lets everyone's writes through.
	if _, err := c.EtcdClient.Put(ctx, key, string(original)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ordinary user's lease written once leases are registered", func() (bool, error) {
		code, _, _, body := svHTTP(t, leaser, http.MethodPost, leasePath(""), leaseBody("mine"))
		if code != http.StatusCreated && code != http.StatusServiceUnavailable {
			t.Fatalf("the ordinary user creating a lease after the repair: %d %s", code, body)
		}
		return code == http.StatusCreated, nil
	})
}

// grantLeases lets users write leases in kube-system.
func grantLeases(t *testing.T, s *harness.Server, users ...string) {
	t.Helper()
	rbac := s.Clientset(t).RbacV1()
	if _, err := rbac.Roles("kube-system").Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "lease-writer"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lease-writer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "lease-writer"},
	}
	for _, u := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	if _, err := rbac.RoleBindings("kube-system").Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// poisonStorageVersion adds to the StorageVersion stored at key, in etcd, a condition
// without a reason, which no server's write of the object can get past, and returns
// the value it replaced.
func poisonStorageVersion(t *testing.T, c *harness.Cluster, key string) []byte {
	t.Helper()
	resp, err := c.EtcdClient.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s: %v", key, err)
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(resp.Kvs[0].Value, &obj); err != nil {
		t.Fatal(err)
	}
	status := obj["status"].(map[string]interface{})
	conditions, _ := status["conditions"].([]interface{})
	status["conditions"] = append(conditions,
		map[string]interface{}{"type": "Poisoned", "status": "True", "reason": "", "message": "written behind the servers' back"})
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EtcdClient.Put(t.Context(), key, string(b)); err != nil {
		t.Fatal(err)
	}
	return resp.Kvs[0].Value
}

// leasePath is the path of the leases in kube-system, or of one of them.
func leasePath(name string) string {
	p := "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
	if name != "" {
		p += "/" + name
	}
	return p
}

// leaseBody is a Lease named name held by name, renewed now.
func leaseBody(name string) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": map[string]interface{}{"name": name},
		"spec": map[string]interface{}{"holderIdentity": name, "leaseDurationSeconds": 30,
			"renewTime": metav1.NewMicroTime(time.Now()).UTC().Format("2006-01-02T15:04:05.000000Z")}}
}
