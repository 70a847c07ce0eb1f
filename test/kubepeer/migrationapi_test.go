package kubepeer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/migration"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/controller"
	"github.com/concordproject/concord/test/kubepeer"
	"github.com/concordproject/concord/test/logbuf"
	"github.com/concordproject/concord/wire"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// migrationsCRD is the name of Concord's StorageVersionMigration definition.
const migrationsCRD = "storageversionmigrations.storagemigration.k8s.io"

// apiPhase is one run of the kube-apiserver peer, and the StorageVersionMigration API
// it serves.
type apiPhase struct {
	name string
	bin  string
	args []string
	// builtIn: the peer serves storagemigration.k8s.io/v1 itself (and Concord's
	// definition must be gone); else the controller manager installs it.
	builtIn bool
}

// Concord's controller-manager, run once against a kube-apiserver that is restarted
// under it (on the same etcd, behind the same address) as a rollback and a roll
// forward would: with its built-in StorageVersionMigration API (1.37), emulating 1.36
// (no such API), and with it again; and, if test/kubepeer/build.sh has built
// kube-apiserver 1.36, rolled back to that release and forward again. In every phase
// a storage version change of a custom resource is migrated, recorded in the API
// served then: the controller manager installs its definition when the API is gone
// and deletes it (with the migrations in it) when the built-in API is back, without
// being restarted. The counts survive where each API keeps them (status.progress of
// the definition, an annotation on the built-in API, which drops status.progress), and
// `concord migrations` shows them; no "unknown field" warning and no "could not find
// the requested resource" is logged.
func TestControllerManagerFollowsMigrationAPI(t *testing.T) {
	bin, err := kubepeer.Binary("kube-apiserver", release)
	if errors.Is(err, kubepeer.ErrNotBuilt) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	phases := []apiPhase{
		{name: release, bin: bin, builtIn: true},
		{name: release + " emulating 1.36", bin: bin, args: []string{"--emulated-version=1.36"}},
		{name: release + " again", bin: bin, builtIn: true},
	}
	if old, err := kubepeer.Binary("kube-apiserver", rollbackRelease); err == nil {
		phases = append(phases, apiPhase{name: rollbackRelease, bin: old}, apiPhase{name: release + " after " + rollbackRelease, bin: bin, builtIn: true})
	} else {
		t.Logf("no rollback to a real 1.36: %v", err)
	}
	dir := t.TempDir()
	etcdURLs := startEtcd(t, dir, "etcd")
	fwd := newForwarder(t)
	logs := captureKlog(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller manager log:\n%s", tail(logs.String(), 32<<10))
		}
	})
	var peer *kubepeer.Peer
	stopPeer := func() {}
	var kubeconfig string
	stopManager := func() {}
	for i, ph := range phases {
		began := time.Now()
		fwd.cut()
		stopPeer()
		peer, stopPeer = startPhase(t, dir, i, ph, etcdURLs)
		t.Logf("%s: the previous peer stopped and this one ready in %v", ph.name, time.Since(began).Round(time.Millisecond))
		fwd.to(strings.TrimPrefix(peer.URL, "https://"))
		if i == 0 {
			kubeconfig = fwd.kubeconfig(t, peer.Kubeconfig, filepath.Join(dir, "forwarded.kubeconfig"))
			w := newWidgets(t, kubeconfig)
			w.create(t, 30)
			stopManager = runControllerManager(t, kubeconfig)
		}
		w := newWidgets(t, kubeconfig)
		waitMigrationAPI(t, w, ph)
		t.Logf("%s: peer started and the migration API followed in %v", ph.name, time.Since(began).Round(time.Millisecond))
		m := w.migrate(t, []string{"v2", "v1"}[i%2])
		checkCounts(t, kubeconfig, ph, m, 30)
		if ph.builtIn {
			checkBuiltInRegistered(t, w)
		}
		t.Logf("%s: migration %s done %v after the peer started", ph.name, m.GetName(), time.Since(began).Round(time.Millisecond))
	}
	stopManager()
	stopPeer()
	// The definition is installed once per phase without the built-in API, never again
	// while the built-in API is served (as it was when kube-apiserver dropped the
	// built-in's APIService with the deleted definition).
	gone := 0
	for _, ph := range phases {
		if !ph.builtIn {
			gone++
		}
	}
	t.Logf("the built-in API's APIService was registered again %d times", strings.Count(logs.String(), "it is registered again"))
	if n := strings.Count(logs.String(), "No StorageVersionMigration API was served"); n > gone {
		t.Errorf("the controller manager installed its definition %d times in %d phases without the built-in API", n, gone)
	}
	for _, bad := range []string{"unknown field", "could not find the requested resource"} {
		if n := strings.Count(logs.String(), bad); n > 0 {
			t.Errorf("the controller manager logged %q %d times", bad, n)
		}
	}
}

// rollbackRelease is a release without the built-in StorageVersionMigration API, used
// when build.sh has built it.
const rollbackRelease = "1.36.3"

// startPhase runs the peer of phase i on etcd, its output in dir, and returns it with
// the function that stops it.
func startPhase(t *testing.T, dir string, i int, ph apiPhase, etcdURLs []string) (*kubepeer.Peer, func()) {
	t.Helper()
	logPath := filepath.Join(dir, fmt.Sprintf("kube-apiserver-%d.log", i))
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close(); dumpOnFailure(t, logPath) })
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: ph.bin, Dir: filepath.Join(dir, "peer"), EtcdServers: etcdURLs, Args: ph.args, Log: out})
	if err != nil {
		t.Fatalf("%s: %v", ph.name, err)
	}
	stop := sync.OnceFunc(p.Stop) // Peer.Stop waits for the exit it reports once
	t.Cleanup(stop)
	return p, stop
}

// runControllerManager runs `concord controller-manager` against kubeconfig until the
// returned function is called.
func runControllerManager(t *testing.T, kubeconfig string) (stop func()) {
	t.Helper()
	cmd := migration.NewCommand()
	cmd.SetArgs([]string{"--kubeconfig=" + kubeconfig, "--id=cm-under-test", "--poll-interval=500ms", "--page-size=10"})
	cmd.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("controller-manager: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("controller-manager still running 30s after its end")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitMigrationAPI waits until the migration API is as ph says: Concord's definition
// gone where the peer serves its own API, installed and served where it does not.
func waitMigrationAPI(t *testing.T, w *widgets, ph apiPhase) {
	t.Helper()
	crds := w.crds.ApiextensionsV1().CustomResourceDefinitions()
	waitUntil(t, ph.name+": the migration API followed", time.Minute, func() (bool, error) {
		crd, err := crds.Get(t.Context(), migrationsCRD, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return ph.builtIn, nil
		case err != nil:
			return false, nil // the peer may still be settling
		case ph.builtIn:
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				_, err := w.dyn.Resource(migrationapi.StorageVersionMigrations).List(t.Context(), metav1.ListOptions{Limit: 1})
				return err == nil, nil
			}
		}
		return false, nil
	})
}

// checkBuiltInRegistered checks that the built-in API is registered again once
// Concord's definition is deleted: kube-apiserver removes the group-version's
// APIService with the last definition of it, some time after the deletion (its
// autoregistration controller's queue), and the controller manager puts it back once
// it sees it gone, so the APIService may be missing a moment before it is there for
// good.
func checkBuiltInRegistered(t *testing.T, w *widgets) {
	t.Helper()
	apiServices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	name := migrationapi.StorageVersionMigrations.Version + "." + migrationapi.StorageVersionMigrations.Group
	waitUntil(t, "the APIService "+name+" of the built-in StorageVersionMigration API", time.Minute, func() (bool, error) {
		_, err := w.dyn.Resource(apiServices).Get(t.Context(), name, metav1.GetOptions{})
		return err == nil, nil
	})
	if _, err := w.dyn.Resource(migrationapi.StorageVersionMigrations).List(t.Context(), metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("the built-in StorageVersionMigration API is not served: %v", err)
	}
}

// checkCounts checks that migration m of n objects keeps its counts where the API of
// ph keeps them, and that `concord migrations` shows them.
func checkCounts(t *testing.T, kubeconfig string, ph apiPhase, m *unstructured.Unstructured, n int64) {
	t.Helper()
	_, inStatus, _ := unstructured.NestedMap(m.Object, "status", "progress")
	_, inAnnotation := m.GetAnnotations()[controller.AnnotationProgress]
	if inStatus == ph.builtIn || inAnnotation != ph.builtIn {
		t.Errorf("%s: %s has status.progress %v, annotation %v; want the progress in the annotation only on the built-in API", ph.name, m.GetName(), inStatus, inAnnotation)
	}
	p := controller.ProgressOf(m)
	if p == nil || p.Migrated != n || p.Total == nil || *p.Total != n {
		t.Errorf("%s: %s has progress %+v, want %d migrated of %d", ph.name, m.GetName(), p, n, n)
	}
	var out bytes.Buffer
	cmd := migration.NewMigrationsCommand()
	cmd.SetArgs([]string{"--kubeconfig=" + kubeconfig})
	cmd.SetOut(&out)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		// RESOURCE PHASE PROGRESS MIGRATED SKIPPED FAILED TOTAL AGE NAME
		if f := strings.Fields(line); len(f) == 9 && f[8] == m.GetName() {
			if want := fmt.Sprint(n); f[1] != migrationapi.ConditionSucceeded || f[3] != want || f[6] != want {
				t.Errorf("%s: concord migrations shows %q, want Succeeded with %s migrated of %s", ph.name, line, want, want)
			}
			return
		}
	}
	t.Errorf("%s: concord migrations does not show %s:\n%s", ph.name, m.GetName(), out.String())
}

// widgets is a custom resource in versions v1 and v2 of a peer, reached through
// kubeconfig.
type widgets struct {
	crds apiextensionsclient.Interface
	dyn  dynamic.Interface
	gvr  schema.GroupVersionResource
}

func newWidgets(t *testing.T, kubeconfig string) *widgets {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return &widgets{crds: apiextensionsclient.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg),
		gvr: schema.GroupVersionResource{Group: "svm.example.com", Version: "v1", Resource: "widgets"}}
}

// create defines widgets, stored in v1, and creates n of them.
func (w *widgets) create(t *testing.T, n int) {
	t.Helper()
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptrTrue()}}}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + w.gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: w.gvr.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema},
			},
		},
	}
	if _, err := w.crds.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	objects := w.dyn.Resource(w.gvr).Namespace("default")
	waitUntil(t, "widgets to be served", time.Minute, func() (bool, error) {
		_, err := objects.List(t.Context(), metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	for i := range n {
		o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": w.gvr.GroupVersion().String(), "kind": "Widget",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("w-%03d", i)}, "spec": map[string]interface{}{"size": int64(i)}}}
		if _, err := objects.Create(t.Context(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// migrate makes version the storage version of widgets and waits until a migration
// the trigger starts for it (one with its storage version hash) has succeeded; it
// returns that migration.
func (w *widgets) migrate(t *testing.T, version string) *unstructured.Unstructured {
	t.Helper()
	migrations := w.dyn.Resource(migrationapi.StorageVersionMigrations)
	before := map[string]bool{}
	list, err := migrations.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Items {
		before[m.GetName()] = true
	}
	crds := w.crds.ApiextensionsV1().CustomResourceDefinitions()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(t.Context(), "widgets."+w.gvr.Group, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		_, err = crds.Update(t.Context(), crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	hash := wire.StorageVersionHash(w.gvr.Group, version, "Widget")
	var done *unstructured.Unstructured
	waitUntil(t, "a migration of widgets to "+version+" to succeed", time.Minute, func() (bool, error) {
		list, err := migrations.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i, u := range list.Items {
			m, err := migrationapi.MigrationFrom(&u)
			if err == nil && !before[u.GetName()] && m.Spec.Resource.Group == w.gvr.Group && m.Phase() == migrationapi.ConditionSucceeded &&
				m.Annotations[migrationapi.AnnotationStorageVersionHash] == hash {
				done = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return done
}

// forwarder forwards the TCP connections of one loopback address to the peer running
// now, so that the controller manager keeps one URL across the peer's restarts.
type forwarder struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]bool // open, both sides
}

func newForwarder(t *testing.T) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = ln.Close() })
	go f.serve()
	return f
}

func (f *forwarder) to(target string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = target
}

// cut closes every forwarded connection and refuses new ones until the next to, as
// a peer that is gone would: a peer stopped then has no client to wait for.
func (f *forwarder) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = ""
	for c := range f.conns {
		_ = c.Close()
	}
}

func (f *forwarder) track(c net.Conn, open bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if open {
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
}

func (f *forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		target := f.target
		f.mu.Unlock()
		go f.forward(c, target)
	}
}

func (f *forwarder) forward(c net.Conn, target string) {
	defer func() { _ = c.Close() }()
	if target == "" {
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	f.track(c, true)
	f.track(up, true)
	defer f.track(c, false)
	defer f.track(up, false)
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
}

// kubeconfig writes to path the peer's admin kubeconfig (from peerKubeconfig) with
// the forwarder's address.
func (f *forwarder) kubeconfig(t *testing.T, peerKubeconfig, path string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(peerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://" + f.ln.Addr().String()
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// captureKlog sends klog's output (the controller manager's log, client-go's
// warnings) to a buffer until the test ends.
func captureKlog(t *testing.T) *logbuf.Buffer {
	t.Helper()
	b := &logbuf.Buffer{}
	klog.LogToStderr(false)
	klog.SetOutput(b)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return b
}

// waitUntil polls cond every 100 ms until it holds, or fails the test after limit.
func waitUntil(t *testing.T, what string, limit time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func ptrTrue() *bool { v := true; return &v }
