package safety

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/test/kubepeer"
	"github.com/concordproject/concord/test/tcpgate"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/version"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
)

// The kube-apiserver releases of the kube fleet (test/kubepeer/build.sh builds them):
// the fleet starts on kubeOld, which serves no StorageVersionMigration API, and rolls
// to kubeNew, which serves its own.
const (
	kubeOld = "1.36.3"
	kubeNew = "1.37.2"
)

// kubeFleet: three kube-apiservers of kubeOld on one etcd, each behind its proxy, and
// Concord's controller-manager reaching them through a load balancer, with writers
// throughout. The widgets' storage version is flipped (the manager migrates them
// through its own StorageVersionMigration definition); the fleet is rolled to kubeNew
// with a flip midway (its built-in API replaces the manager's definition); rolled to
// emulate kubeOld's release (the API gone: the manager installs its definition again),
// with a flip and a kill -9 of the manager; and rolled back to kubeNew's own release
// (the API back) with a last flip. upgrade-check is asked before every roll. kube's
// servers publish no StorageVersions here (two kube-apiservers on one host share one
// identity), so the checks that need them are left to Concord's fleets; every other
// invariant holds, and at the end every custom resource is in its storage version.
func kubeFleet(t *testing.T, rep *report, seed uint64) {
	for _, r := range []string{kubeOld, kubeNew} {
		if _, err := kubepeer.Binary("kube-apiserver", r); errors.Is(err, kubepeer.ErrNotBuilt) {
			t.Skipf("the kube fleet needs kube-apiserver %s and %s: %v", kubeOld, kubeNew, err)
		}
	}
	old := release{kube: kubeOld}
	f := newFleet(t, rep, "kube-fleet", seed, 1, old, old, old)
	cm := f.startControllerManager()
	f.createWidgets()
	tr := f.startTraffic(4)
	f.storeWidgetsAs("v2")
	f.waitSettled("with widgets stored as v2 on " + kubeOld)
	midway := f.rng.IntN(len(f.servers))
	f.rollKube(release{kube: kubeNew}, func(i int) {
		if i == midway {
			f.storeWidgetsAs("v1")
		}
	})
	f.waitSettled("on " + kubeNew)
	f.waitMigrationAPI(true)
	oldMinor := minorOf(kubeOld)
	f.rollKube(release{kube: kubeNew, emulation: oldMinor}, nil)
	f.waitMigrationAPI(false)
	f.storeWidgetsAs("v2")
	time.Sleep(time.Duration(f.rng.IntN(1500)) * time.Millisecond)
	f.fault("kill -9 of the controller-manager")
	cm.stop(t, false)
	cm = f.startControllerManager()
	f.waitSettled("emulating " + oldMinor)
	f.rollKube(release{kube: kubeNew}, func(i int) {
		if i == midway {
			f.storeWidgetsAs("v1")
		}
	})
	f.waitMigrationAPI(true)
	f.finish(tr)
	cm.stop(t, true)
}

// migrationsCRD is the controller-manager's StorageVersionMigration definition.
const migrationsCRD = "storageversionmigrations.storagemigration.k8s.io"

// waitMigrationAPI checks that the controller-manager follows the fleet's
// StorageVersionMigration API within two minutes: where kube serves its own (builtIn),
// the manager's definition is gone; elsewhere it is installed and established.
func (f *fleet) waitMigrationAPI(builtIn bool) {
	f.t.Helper()
	ok := waitFor(2*time.Minute, func() bool {
		s := f.randomLive(f.rng)
		if s == nil {
			return false
		}
		u, err := s.dynamicClients.Resource(crdGVR).Get(f.t.Context(), migrationsCRD, metav1.GetOptions{})
		if err != nil {
			// The built-in API stays registered (its APIService, which kube-apiserver
			// removes with the definition, is put back) and served.
			_, listErr := s.dynamicClients.Resource(migrationapi.StorageVersionMigrations).List(f.t.Context(), metav1.ListOptions{Limit: 1})
			_, svcErr := s.dynamicClients.Resource(migrationapi.APIServices).Get(f.t.Context(), "v1.storagemigration.k8s.io", metav1.GetOptions{})
			return builtIn && apierrors.IsNotFound(err) && listErr == nil && svcErr == nil
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			f.t.Fatal(err)
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established {
				return !builtIn && c.Status == apiextensionsv1.ConditionTrue
			}
		}
		return false
	})
	f.step(fmt.Sprintf("the migration API is kube's own: %v", builtIn))
	if !ok {
		f.anomaly("the controller-manager's StorageVersionMigration definition did not follow the fleet within 2m (kube serves its own: %v)", builtIn)
	}
}

// rollKube rolls the kube fleet to r; upgrade-check must call the move safe.
func (f *fleet) rollKube(r release, between func(i int)) {
	f.t.Helper()
	if safe, out := f.roll(r, between); !safe {
		f.anomaly("upgrade-check calls the move of kube-apiserver to %s unsafe, and kube makes it: %s", r, out)
	}
}

// minorOf is "1.36" of "1.36.3".
func minorOf(release string) string {
	v := version.MustParse(release)
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}

// kubeCommand returns the kube-apiserver binary of s and its arguments, having written
// its keys, token file (the admin's and the intruder's tokens) and kubeconfig into its
// data directory.
func (s *server) kubeCommand(t *testing.T) (string, []string) {
	t.Helper()
	bin, err := kubepeer.Binary("kube-apiserver", s.kube)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--feature-gates=" + kubeGates}
	if s.emulation != "" {
		args = append(args, "--emulated-version="+s.emulation)
	}
	_, args, err = kubepeer.Prepare(kubepeer.Options{Binary: bin, Dir: s.dataDir, EtcdServers: []string{s.proxy.URL()}, Port: s.port,
		Tokens: []string{intruderToken + "," + intruderUser + ",intruder-uid"}, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return bin, args
}

// kubeGates are the feature gates of the kube fleet's servers: that of the oldest
// PodTemplate field the field writer sets, alpha and off by default in both releases,
// so that kube stores it. The others are kube's defaults: hostnameOverride is stored
// by both, podCertificate from kubeNew on (and kept by kubeOld's update once in use),
// schedulingGroup (whose gate needs an alpha API) and kubeNew's fields by neither, as
// an upgrade must keep them.
const kubeGates = "ContainerStopSignals=true"

// startControllerManager runs `concord controller-manager` against the kube fleet
// through a load balancer (a proxy to the first server that answers).
func (f *fleet) startControllerManager() *proc {
	f.t.Helper()
	var targets []string
	for _, s := range f.servers {
		targets = append(targets, s.url())
	}
	lb := tcpgate.New(f.t, targets...)
	cfg, err := clientcmd.LoadFromFile(f.servers[0].kubeconfig())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + lb.Addr()
	}
	path := filepath.Join(f.dir, "balanced.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		f.t.Fatal(err)
	}
	f.step("the start of the controller-manager")
	return startProc(f.t, f.dir, "controller-manager", concordBinary(f.t), "controller-manager", "--kubeconfig", path,
		"--id", "safety-controller-manager", "--poll-interval", "5s", "--staleness-window", "30s", "-v", "2")
}

// kubeSettled is settled for a kube fleet, which publishes no StorageVersions: every
// resource with a storage version hash in discovery has a StorageState equal to its
// current hash, which the controller-manager has confirmed since the wait began, no
// migration is under way, and every CRD's storedVersions is its storage version alone.
//
// The confirmation matters: the manager reads discovery once a poll, so for up to a
// poll after a roll it may still act on the fleet before it (delete the state of a
// resource the old release did not serve, which the new one serves: a migration
// follows). A state confirmed after the wait began was looked at with discovery read
// after the roll. The manager renews a heartbeat once it is older than a quarter of
// its staleness window (30s here: 7.5s), so a confirmation comes within that and a
// poll.
func (f *fleet) kubeSettled(ctx context.Context, s *server) string {
	tracked, why := f.statesPersisted(ctx, s)
	if why != "" {
		return why
	}
	if why := f.statesConfirmedSince(ctx, s, f.settleFrom); why != "" {
		return why
	}
	if why := untracked(s, tracked, "has a storage version hash", func(_ schema.GroupResource, r metav1.APIResource) bool {
		return r.StorageVersionHash != ""
	}); why != "" {
		return why
	}
	if why := f.migrationsEnded(ctx, s); why != "" {
		return why
	}
	return crdsSettled(ctx, s)
}

// statesConfirmedSince is why a StorageState's heartbeat is older than from ("" if
// none is). Heartbeats are in whole seconds: one from the second from falls in is not
// after it.
func (f *fleet) statesConfirmedSince(ctx context.Context, s *server, from time.Time) string {
	states, err := s.dynamicClients.Resource(migrationapi.StorageStates).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	after := from.Truncate(time.Second).Add(time.Second)
	for _, u := range states.Items {
		var st migrationapi.StorageState
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st); err != nil {
			return err.Error()
		}
		if hb := st.Status.LastHeartbeatTime.Time; hb.Before(after) {
			return fmt.Sprintf("StorageState %s: last confirmed at %s, before the wait began", st.Name, hb.Format(time.TimeOnly))
		}
	}
	return ""
}

// storedInStorageVersion: once the fleet has settled, every custom resource in etcd
// is stored in its definition's storage version (the migrations that the flips
// started rewrote them all).
func (f *fleet) storedInStorageVersion(ctx context.Context, s *server) {
	list, err := s.dynamicClients.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.anomaly("listing the CRDs at the end: %v", err)
		return
	}
	for _, u := range list.Items {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			f.t.Fatal(err)
		}
		var want string
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				want = crd.Spec.Group + "/" + v.Name
			}
		}
		stale := 0
		err := f.eachStored(ctx, "/registry/"+crd.Spec.Group+"/"+crd.Spec.Names.Plural+"/", func(key string, value []byte) {
			if obj, err := storedObject(value); err != nil || obj["apiVersion"] != want {
				if stale++; stale <= 3 {
					f.anomaly("the fleet settled with %s stored as %v, not in %s's storage version %s (%v)", key, obj["apiVersion"], crd.Name, want, err)
				}
			}
		})
		if err != nil {
			f.anomaly("reading the %s from etcd: %v", crd.Name, err)
			continue
		}
		if stale > 3 {
			f.anomaly("and %d more %s not in %s", stale-3, crd.Spec.Names.Plural, want)
		}
	}
}

// storedCodec decodes what kube-apiserver stores in protobuf: the built-in types of
// client-go and CustomResourceDefinitions (kube stores them as v1beta1).
var storedCodec = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), apiextensionsv1.AddToScheme(scheme), apiextensionsv1beta1.AddToScheme(scheme)); err != nil {
		panic(err)
	}
	return protobuf.NewSerializer(scheme, scheme)
}()

// protobufMagic starts every object kube-apiserver stores in protobuf.
var protobufMagic = []byte("k8s\x00")

// storedObject returns a stored object as encoding/json decodes its JSON: Concord's
// and every custom resource's JSON, kube-apiserver's protobuf (a type this test does
// not know gives its apiVersion and kind alone).
func storedObject(value []byte) (map[string]any, error) {
	var obj map[string]any
	if !bytes.HasPrefix(value, protobufMagic) {
		return obj, json.Unmarshal(value, &obj)
	}
	typed, gvk, err := storedCodec.Decode(value, nil, nil)
	if err != nil {
		var u runtime.Unknown
		if uerr := u.Unmarshal(value[len(protobufMagic):]); uerr != nil {
			return nil, fmt.Errorf("%w (and as runtime.Unknown: %w)", err, uerr)
		}
		return map[string]any{"apiVersion": u.APIVersion, "kind": u.Kind}, nil
	}
	data, err := json.Marshal(typed)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	obj["apiVersion"], obj["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return obj, nil
}
