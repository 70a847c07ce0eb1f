package safety

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The objects the writers share: keysPerResource configmaps and as many widgets, all in
// namespace default.
const (
	keysPerResource = 8
	namespace       = "default"
)

var widgets = schema.GroupVersionResource{Group: "safety.example.com", Version: "v1", Resource: "widgets"}

// traffic runs writers against the live servers of a fleet until stopped.
type traffic struct {
	f      *fleet
	rec    *recorder
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startTraffic starts n writers, each with its own random source from the fleet's,
// the intruder and the field writer (fields_test.go).
func (f *fleet) startTraffic(n int) *traffic {
	ctx, cancel := context.WithCancel(f.t.Context())
	tr := &traffic{f: f, rec: f.rec, cancel: cancel}
	for i := range n {
		rng := rand.New(rand.NewPCG(f.seed, uint64(i)))
		tr.wg.Go(func() { tr.write(ctx, i, rng) })
	}
	rng := rand.New(rand.NewPCG(f.seed, uint64(n)))
	tr.wg.Go(func() { tr.intrude(ctx, rng) })
	fieldRNG := rand.New(rand.NewPCG(f.seed, uint64(n+1)))
	tr.wg.Go(func() { tr.writeFields(ctx, fieldRNG) })
	return tr
}

// The intruder: a user of --token-auth-file bound to view in namespace default, which
// grants no Secrets. No server may ever show it one.
const (
	tokensFile    = "tokens.csv"
	intruderToken = "intruder-token"
	intruderUser  = "intruder"
	guardedSecret = "guarded"
)

// guardSecret stores the Secret the intruder tries to read and binds the intruder to
// view.
func (f *fleet) guardSecret(t *testing.T) {
	t.Helper()
	c := f.servers[0].clients
	if _, err := c.CoreV1().Secrets(namespace).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: guardedSecret},
		StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().RoleBindings(namespace).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "intruder-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: intruderUser}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// intrude reads the guarded Secret (get, list, watch in turn) through a random live
// server about every 30 ms; any success is an anomaly.
func (tr *traffic) intrude(ctx context.Context, rng *rand.Rand) {
	for seq := 0; ctx.Err() == nil; seq++ {
		s := tr.f.randomLive(rng)
		if s == nil || s.intruder == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		opCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		secrets := s.intruder.CoreV1().Secrets(namespace)
		var err error
		switch seq % 3 {
		case 0:
			_, err = secrets.Get(opCtx, guardedSecret, metav1.GetOptions{})
		case 1:
			_, err = secrets.List(opCtx, metav1.ListOptions{})
		default:
			var w watch.Interface
			if w, err = secrets.Watch(opCtx, metav1.ListOptions{}); err == nil {
				w.Stop()
			}
		}
		cancel()
		if err == nil {
			tr.f.anomaly("%s showed the Secret %s to %s, who has no grant for it (attempt %d)", s.id, guardedSecret, intruderUser, seq)
		}
		time.Sleep(time.Duration(20+rng.IntN(20)) * time.Millisecond)
	}
}

func (tr *traffic) stop() {
	tr.cancel()
	tr.wg.Wait()
}

// write is one writer: a random operation on a random object through a random live
// server, about every 20 ms.
func (tr *traffic) write(ctx context.Context, id int, rng *rand.Rand) {
	for seq := 0; ctx.Err() == nil; seq++ {
		s := tr.f.randomLive(rng)
		if s == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		custom := rng.IntN(2) == 0
		name := fmt.Sprintf("k%d", rng.IntN(keysPerResource))
		key := "configmaps/" + name
		if custom {
			key = "widgets/" + name
		}
		in := opInput{key: key, kind: pickKind(rng), value: fmt.Sprintf("w%d-%d", id, seq)}
		conditional := rng.IntN(2) == 0
		opCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = tr.rec.record(id, in, func() (string, error) {
			if custom {
				return widgetOp(opCtx, s, name, in, conditional)
			}
			return configMapOp(opCtx, s, name, in, conditional)
		})
		cancel()
		time.Sleep(time.Duration(10+rng.IntN(20)) * time.Millisecond)
	}
}

func pickKind(rng *rand.Rand) opKind {
	switch n := rng.IntN(10); {
	case n < 2:
		return opCreate
	case n < 6:
		return opUpdate
	case n < 7:
		return opDelete
	default:
		return opRead
	}
}

// configMapOp runs in on configmap name with the typed client: an update is a merge
// patch or, when conditional, a read and an update at the resourceVersion read.
func configMapOp(ctx context.Context, s *server, name string, in opInput, conditional bool) (string, error) {
	cms := s.clients.CoreV1().ConfigMaps(namespace)
	switch in.kind {
	case opCreate:
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": in.value}}, metav1.CreateOptions{})
		return "", err
	case opUpdate:
		if !conditional {
			patch, _ := json.Marshal(map[string]interface{}{"data": map[string]string{"v": in.value}})
			_, err := cms.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return "", err
		}
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", unknownIfNotFound(err) // the read says nothing of the write's moment
		}
		cm.Data = map[string]string{"v": in.value}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return "", err
	case opDelete:
		return "", cms.Delete(ctx, name, metav1.DeleteOptions{})
	default:
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && namesObject(err) {
			return "", nil // absent; a NotFound of the resource says nothing (outcome)
		}
		if err != nil {
			return "", err
		}
		return cm.Data["v"], nil
	}
}

// widgetOp is configMapOp for widgets, with the dynamic client.
func widgetOp(ctx context.Context, s *server, name string, in opInput, conditional bool) (string, error) {
	ws := s.dynamicClients.Resource(widgets).Namespace(namespace)
	switch in.kind {
	case opCreate:
		_, err := ws.Create(ctx, widget(name, in.value), metav1.CreateOptions{})
		return "", err
	case opUpdate:
		if !conditional {
			patch, _ := json.Marshal(map[string]interface{}{"spec": map[string]string{"v": in.value}})
			_, err := ws.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return "", err
		}
		u, err := ws.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", unknownIfNotFound(err)
		}
		if err := unstructured.SetNestedField(u.Object, in.value, "spec", "v"); err != nil {
			return "", err
		}
		_, err = ws.Update(ctx, u, metav1.UpdateOptions{})
		return "", err
	case opDelete:
		return "", ws.Delete(ctx, name, metav1.DeleteOptions{})
	default:
		u, err := ws.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && namesObject(err) {
			return "", nil // absent; a NotFound of the resource says nothing (outcome)
		}
		if err != nil {
			return "", err
		}
		v, _, _ := unstructured.NestedString(u.Object, "spec", "v")
		return v, nil
	}
}

func widget(name, v string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": widgets.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]interface{}{"name": name, "namespace": namespace},
		"spec":     map[string]interface{}{"v": v},
	}}
}

// unknownIfNotFound turns the NotFound of a conditional update's read into a refusal
// that says nothing (a conflict): the object was absent at the read, not at the write.
func unknownIfNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewConflict(schema.GroupResource{}, "", err)
	}
	return err
}

// finalReads reads every object through every live server and straight from etcd, and
// records the reads: the history then also says that what etcd holds is what the last
// acknowledged writes left.
func (f *fleet) finalReads(t *testing.T) {
	t.Helper()
	for _, s := range f.servers {
		if !s.live() {
			continue
		}
		for i := range keysPerResource {
			name := fmt.Sprintf("k%d", i)
			for _, res := range []string{"configmaps", "widgets"} {
				in := opInput{key: res + "/" + name, kind: opRead}
				_ = f.rec.record(1000+s.index, in, func() (string, error) {
					if res == "widgets" {
						return widgetOp(t.Context(), s, name, in, false)
					}
					return configMapOp(t.Context(), s, name, in, false)
				})
			}
		}
	}
	for i := range keysPerResource {
		name := fmt.Sprintf("k%d", i)
		for _, res := range []string{"configmaps", "widgets"} {
			key := coreKey(f.kube, res) + namespace + "/" + name
			if res == "widgets" {
				key = fmt.Sprintf("/registry/%s/%s/%s/%s", widgets.Group, res, namespace, name)
			}
			_ = f.rec.record(2000, opInput{key: res + "/" + name, kind: opRead}, func() (string, error) {
				return f.etcdValue(t, key, res == "widgets")
			})
		}
	}
}

// etcdValue reads an object's register value straight from etcd.
func (f *fleet) etcdValue(t *testing.T, key string, custom bool) (string, error) {
	resp, err := f.etcd.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	obj, err := storedObject(resp.Kvs[0].Value)
	if err != nil {
		return "", err
	}
	field := "data"
	if custom {
		field = "spec"
	}
	v, _ := lookup(obj, []any{field, "v"})
	s, _ := v.(string)
	return s, nil
}
