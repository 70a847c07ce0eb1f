package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/test/progress"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// updateRetrying reads object name with get, applies change and writes it with update,
// reading it again on a conflict (a controller may write the object meanwhile); it
// returns the update's answer. get and update are a typed client's Get and Update.
func updateRetrying[T any](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error), name string, change func(T)) (T, error) {
	var updated T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(obj)
		updated, err = update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
	return updated, err
}

// waitFor polls cond every 50 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitNamespaceGone waits until namespace ns is gone, for as long as its deletion
// moves: the namespace's own writes (its conditions) or the number of keys etcd holds
// in it, which the namespace controller deletes resource by resource.
func waitNamespaceGone(t *testing.T, c *harness.Cluster, cs kubernetes.Interface, ns string) {
	t.Helper()
	waitUnstalled(t, "namespace "+ns+" to be gone", func() (bool, string, error) {
		cur, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		in, err := namespaceKeys(t, c, ns)
		return false, fmt.Sprintf("resourceVersion %s, %d keys in it", cur.ResourceVersion, in), err
	})
}

// namespaceKeys counts the keys in etcd of objects in namespace ns.
func namespaceKeys(t *testing.T, c *harness.Cluster, ns string) (int, error) {
	keys, err := c.EtcdClient.Get(t.Context(), "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	in := 0
	for _, kv := range keys.Kvs {
		if strings.Contains(string(kv.Key), "/"+ns+"/") {
			in++
		}
	}
	return in, nil
}

// waitNamespaceConditions waits until namespace ns has each condition of want, given
// as "status reason message"; the namespace controller's deletions of its content
// show as progress.
func waitNamespaceConditions(t *testing.T, c *harness.Cluster, cs kubernetes.Interface, ns string, want map[corev1.NamespaceConditionType]string) {
	t.Helper()
	waitUnstalled(t, "namespace "+ns+"'s conditions", func() (bool, string, error) {
		cur, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got := map[corev1.NamespaceConditionType]string{}
		for _, c := range cur.Status.Conditions {
			got[c.Type] = fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
		}
		for typ, w := range want {
			if got[typ] != w {
				in, err := namespaceKeys(t, c, ns)
				return false, fmt.Sprintf("resourceVersion %s, %d keys in it, %s: %q", cur.ResourceVersion, in, typ, got[typ]), err
			}
		}
		return true, "", nil
	})
}

// waitUnstalled waits until cond reports done, failing the test when it reports an
// error, when the mark it reports (what the awaited work has done so far) has not
// changed for 20 s, or after 10 minutes: work that is slow on a loaded machine waits
// as long as it moves.
func waitUnstalled(t testing.TB, what string, cond func() (done bool, mark string, err error)) {
	t.Helper()
	progress.Wait(t, what, progress.Limits{Stall: 20 * time.Second, Bound: 10 * time.Minute}, cond)
}

// withTokens serves the static tokens of csv (token,user,uid,"group1,group2" lines)
// besides the admin's, as --token-auth-file does.
func withTokens(t *testing.T, csv string) harness.Option {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	return harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Auth.TokenAuthFile = path })
}

func errorsAs(err error, target *apierrors.APIStatus) bool { return errors.As(err, target) }

// rvNumber parses a resourceVersion: they are ordered as numbers, never as strings
// ("10" < "9" as strings).
func rvNumber(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a number: %v", rv, err)
	}
	return n
}
