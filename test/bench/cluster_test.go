package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/test/binary"
	"github.com/concordproject/concord/test/ports"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// etcdPrefix is the server's default --etcd-prefix; objects of a namespaced
	// resource live under <prefix>/<group or "core">/<plural>/<namespace>/<name>
	// (registry.Resource.Key). setup checks this by reading a created object raw.
	etcdPrefix = "/registry"
	// objectSize is the target size of one stored ConfigMap, in bytes.
	objectSize = 1024
	// listSize is the number of objects in the namespace that get and list read.
	listSize = 100
	// watchBatch is the number of creations in one transaction of a watch's writer.
	watchBatch = 100
	// watchWriters is the number of goroutines writing the creations watchers receive.
	watchWriters = 4

	nsRead, nsCreate, nsWatch = "bench-read", "bench-create", "bench-watch"
	nsUpdate                  = "bench-update"
	nsPut, nsTxn              = "bench-put", "bench-txn" // raw etcd only
)

// configMapKey returns the etcd key of a ConfigMap.
func configMapKey(ns, name string) string {
	return etcdPrefix + "/core/configmaps/" + ns + "/" + name
}

// objectName returns the 10-character name of object n in a series named by letter,
// so that every object of every series has the same size.
func objectName(letter byte, n int64) string { return fmt.Sprintf("%c-%08d", letter, n) }

// suite holds what the sub-benchmarks of BenchmarkConcord share, each piece made on
// first use so that a -bench filter selecting a few of them pays for nothing else.
type suite struct {
	parent  *testing.B
	dir     string
	results results

	bin   func() (string, error)
	start func() (*cluster, error)
	// etcdArgs are more flags for the suite's `concord etcd`, set before it starts.
	etcdArgs []string
}

func newSuite(b *testing.B) *suite {
	s := &suite{parent: b, dir: b.TempDir()}
	s.bin = sync.OnceValues(s.build)
	s.start = sync.OnceValues(s.startCluster)
	return s
}

func (s *suite) binary(b *testing.B) string {
	bin, err := s.bin()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

func (s *suite) cluster(b *testing.B) *cluster {
	cl, err := s.start()
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// build returns the concord binary of this checkout (see test/binary).
// With -concord.binary it uses that binary as it is.
func (s *suite) build() (string, error) {
	if *concordBinary != "" {
		return *concordBinary, nil
	}
	return binary.Concord()
}

// startFloor builds and starts the transport floor (see test/bench/floor) on the
// suite's etcd with the server's serving certificate, waits until it answers, and
// returns a clientset of it made from the server's client configuration.
func (s *suite) startFloor(cl *cluster, server *rest.Config, pki string) (*kubernetes.Clientset, error) {
	ctx := s.parent.Context()
	bin, err := binary.Install(binary.Module + "/test/bench/floor")
	if err != nil {
		return nil, err
	}
	port, err := ports.Take()
	if err != nil {
		return nil, err
	}
	p, err := startProcess("floor", filepath.Join(s.dir, "floor.log"), bin, "--etcd", cl.etcdURL,
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--value-size", fmt.Sprint(objectSize),
		"--tls-cert-file", filepath.Join(pki, "serving.crt"), "--tls-private-key-file", filepath.Join(pki, "serving.key"))
	if err != nil {
		return nil, err
	}
	s.parent.Cleanup(func() {
		if err := p.stop(); err != nil {
			s.parent.Error(err)
		}
	})
	cfg := rest.CopyConfig(server)
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for {
		_, err := cs.CoreV1().ConfigMaps(nsRead).Get(ctx, objectName('r', 0), metav1.GetOptions{})
		if err == nil {
			break
		}
		if e := p.exited(); e != nil {
			return nil, e
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cl.floorProcess.Store(p)
	return cs, nil
}

// startProcess starts a process that lives until BenchmarkConcord ends.
func (s *suite) startProcess(name string, args ...string) (*process, error) {
	bin, err := s.bin()
	if err != nil {
		return nil, err
	}
	p, err := startProcess(name, filepath.Join(s.dir, name+".log"), bin, args...)
	if err != nil {
		return nil, err
	}
	s.parent.Cleanup(func() {
		if err := p.stop(); err != nil {
			s.parent.Error(err)
		}
	})
	return p, nil
}

// cluster is one `concord etcd` and one `concord server` using it, with clients of
// both shared by all the throughput sub-benchmarks.
type cluster struct {
	etcd, server *process
	etcdURL      string

	// clientset is the one client-go clientset every goroutine uses, as the
	// goroutines of one real client would.
	clientset *kubernetes.Clientset
	// kv is the raw etcd client every goroutine uses.
	kv *clientv3.Client

	// payload is the ConfigMap data that makes a stored object objectSize bytes.
	payload map[string]string
	// stored is the raw value of a server-created object of nsRead.
	stored []byte
	// seq numbers the objects of all series, so no two creations share a name.
	seq atomic.Int64

	// floor starts, on first use, the transport floor (test/bench/floor) and returns a
	// clientset of it; floorProcess is that process once started.
	floor        func() (*kubernetes.Clientset, error)
	floorProcess atomic.Pointer[process]
}

func (s *suite) startCluster() (*cluster, error) {
	ctx := s.parent.Context()
	clientPort, err := ports.Take()
	if err != nil {
		return nil, err
	}
	peerPort, err := ports.Take()
	if err != nil {
		return nil, err
	}
	serverPort, err := ports.Take()
	if err != nil {
		return nil, err
	}
	cl := &cluster{etcdURL: fmt.Sprintf("http://127.0.0.1:%d", clientPort)}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcdArgs := []string{"etcd", "--name", "bench", "--data-dir", filepath.Join(s.dir, "etcd"),
		"--listen-client-urls", cl.etcdURL, "--advertise-client-urls", cl.etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "bench=" + peerURL}
	if *unsafeNoFsync {
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync")
	}
	etcdArgs = append(etcdArgs, s.etcdArgs...)
	if cl.etcd, err = s.startProcess("etcd", etcdArgs...); err != nil {
		return nil, err
	}
	dataDir := filepath.Join(s.dir, "server")
	if cl.server, err = s.startProcess("server", "server", "--etcd-servers", cl.etcdURL,
		"--data-dir", dataDir, "--secure-port", fmt.Sprint(serverPort)); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	if err := waitForFile(ctx, cl.server, kubeconfig, time.Minute); err != nil {
		return nil, err
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	restConfig.QPS = -1 // no client-side rate limit
	if cl.clientset, err = kubernetes.NewForConfig(restConfig); err != nil {
		return nil, err
	}
	cl.floor = sync.OnceValues(func() (*kubernetes.Clientset, error) {
		return s.startFloor(cl, restConfig, filepath.Join(dataDir, "pki"))
	})
	if cl.kv, err = clientv3.New(clientv3.Config{Endpoints: []string{cl.etcdURL}, DialTimeout: 10 * time.Second}); err != nil {
		return nil, err
	}
	s.parent.Cleanup(func() { cl.kv.Close() })
	if err := cl.setup(ctx); err != nil {
		return nil, fmt.Errorf("setting up the objects: %w", err)
	}
	return cl, nil
}

// seedUpdates creates the objects update rewrites, once per cluster.
func (cl *cluster) seedUpdates(ctx context.Context) error {
	cms := cl.clientset.CoreV1().ConfigMaps(nsUpdate)
	for i := int64(0); i < listSize; i++ {
		_, err := cms.Create(ctx, newConfigMap(objectName('u', i), cl.payload), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// setup creates the namespaces and the objects that get and list read, sizing the
// payload so that a stored object is objectSize bytes.
func (cl *cluster) setup(ctx context.Context) error {
	for _, ns := range []string{nsRead, nsCreate, nsWatch, nsUpdate} {
		if _, err := cl.clientset.CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	cms := cl.clientset.CoreV1().ConfigMaps(nsRead)
	first := objectName('r', 0)
	const probe = 512
	cm, err := cms.Create(ctx, newConfigMap(first, map[string]string{"payload": strings.Repeat("x", probe)}), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	stored, err := cl.rawGet(ctx, configMapKey(nsRead, first))
	if err != nil {
		return err
	}
	grow := objectSize - len(stored)
	if probe+grow <= 0 {
		return fmt.Errorf("a stored ConfigMap without payload is already %d bytes", len(stored)-probe)
	}
	cl.payload = map[string]string{"payload": strings.Repeat("x", probe+grow)}
	cm.Data = cl.payload
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if cl.stored, err = cl.rawGet(ctx, configMapKey(nsRead, first)); err != nil {
		return err
	}
	if len(cl.stored) != objectSize {
		return fmt.Errorf("sized for %d bytes, the stored ConfigMap has %d", objectSize, len(cl.stored))
	}
	for i := int64(1); i < listSize; i++ {
		if _, err := cms.Create(ctx, newConfigMap(objectName('r', i), cl.payload), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func newConfigMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

func (cl *cluster) rawGet(ctx context.Context, key string) ([]byte, error) {
	resp, err := cl.kv.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) != 1 {
		return nil, fmt.Errorf("etcd has no key %s: the key layout is not what this benchmark assumes", key)
	}
	return resp.Kvs[0].Value, nil
}

// valueTemplate is a stored object whose 10-character name sits at a known offset, to
// make raw etcd values of the same size and shape as the server's objects cheaply.
type valueTemplate struct {
	data    []byte
	nameOff int
	// uidOff is where the object's 36-character uid starts (0: it has none); each
	// value gets a uid of its own, derived from its name, so that seeded objects are
	// as many distinct objects to the garbage collector as real ones.
	uidOff int
}

// templateOf returns the template of data, a stored JSON object whose name is the
// placeholder name.
func templateOf(data []byte, name string) (valueTemplate, error) {
	off := bytes.Index(data, []byte(`"`+name+`"`))
	if off < 0 || bytes.Count(data, []byte(name)) != 1 {
		return valueTemplate{}, errors.New("the name placeholder is not unique in the template")
	}
	t := valueTemplate{data: data, nameOff: off + 1}
	if i := bytes.Index(data, []byte(`"uid":"`)); i >= 0 && len(data) >= i+7+36 && data[i+7+36] == '"' {
		t.uidOff = i + 7
	}
	return t, nil
}

// template re-encodes the stored object with namespace ns and a placeholder name.
func (cl *cluster) template(ns string) (valueTemplate, error) { return newTemplate(cl.stored, ns) }

// newTemplate re-encodes a stored JSON object with namespace ns and a placeholder name.
func newTemplate(stored []byte, ns string) (valueTemplate, error) {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(stored))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return valueTemplate{}, err
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return valueTemplate{}, errors.New("the stored object has no metadata")
	}
	const placeholder = "#-########"
	meta["name"], meta["namespace"] = placeholder, ns
	data, err := json.Marshal(obj)
	if err != nil {
		return valueTemplate{}, err
	}
	return templateOf(data, placeholder)
}

// value returns the template with the given 10-character name, and a uid of its own.
func (t valueTemplate) value(name string) string {
	v := slices.Clone(t.data)
	copy(v[t.nameOff:], name)
	if t.uidOff > 0 {
		sum := sha256.Sum256([]byte(name))
		h := hex.EncodeToString(sum[:16])
		copy(v[t.uidOff:], h[:8]+"-"+h[8:12]+"-"+h[12:16]+"-"+h[16:20]+"-"+h[20:32])
	}
	return string(v)
}

// cpu is the CPU time used so far by the server, the floor server (zero until it
// starts), etcd, this process and the whole machine.
type cpu struct{ server, floor, etcd, self, machine time.Duration }

func (c cpu) minus(o cpu) cpu {
	return cpu{server: c.server - o.server, floor: c.floor - o.floor, etcd: c.etcd - o.etcd,
		self: c.self - o.self, machine: c.machine - o.machine}
}

// others returns the CPU time of the machine that none of the measured processes
// used.
func (c cpu) others() time.Duration {
	return max(0, c.machine-c.server-c.floor-c.etcd-c.self)
}

func (cl *cluster) cpu() (cpu, error) { return cl.cpuOf(cl.server.pid()) }

// cpuOf is cpu with the process server (pid) in place of the cluster's server.
func (cl *cluster) cpuOf(server int) (cpu, error) {
	var c cpu
	var err error
	if c.server, err = cpuTime(server); err != nil {
		return c, err
	}
	if c.etcd, err = cpuTime(cl.etcd.pid()); err != nil {
		return c, err
	}
	if f := cl.floorProcess.Load(); f != nil {
		if c.floor, err = cpuTime(f.pid()); err != nil {
			return c, err
		}
	}
	if c.self, err = cpuTime(os.Getpid()); err != nil {
		return c, err
	}
	c.machine, err = machineBusy()
	return c, err
}
