package safety

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/test/ports"
	"github.com/concordproject/concord/test/tcpgate"
	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
)

var (
	seedFlag     = flag.Uint64("seed", 0, "seed of the scenarios (0: from the clock, printed)")
	durationFlag = flag.Duration("duration", 0, "how long TestTorture runs (0: it is skipped)")
)

// fleet is one etcd and the servers on it, with the writers' history and the checker.
type fleet struct {
	t       *testing.T
	name    string
	dir     string
	seed    uint64
	rng     *rand.Rand
	members []*member
	etcd    *clientv3.Client
	servers []*server
	// kube is true for a fleet of kube-apiservers (kube_test.go).
	kube   bool
	rec    *recorder
	check  *checker
	fields *fieldLedger
	report *report
	// newest and oldest are the catalog's releases.
	newest, oldest *version.Version
	// settleFrom is when the current wait for the fleet to settle began: after the
	// last change (kubeSettled asks the controller-manager to have looked since).
	settleFrom time.Time
	// settleWithin is how long the fleet may take to settle (3 minutes; longer where a
	// scenario holds many objects).
	settleWithin time.Duration

	mu        sync.Mutex
	anomalies []string
}

// release is a server's --binary-version, --emulation-version and
// --min-compatibility-version ("" for defaults); or, where kube is set, the release of
// a kube-apiserver and its --emulated-version.
type release struct{ binary, emulation, minCompat, kube string }

func (r release) String() string {
	s := "binary " + or(r.binary, "default")
	if r.kube != "" {
		s = "kube-apiserver " + r.kube
	}
	if r.emulation != "" {
		s += ", emulation " + r.emulation
	}
	if r.minCompat != "" {
		s += ", min compatibility " + r.minCompat
	}
	return s
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// newFleet starts an etcd of members and one server per release, each behind a
// proxy, and the checker.
func newFleet(t *testing.T, rep *report, name string, seed uint64, members int, releases ...release) *fleet {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("SAFETY_KEEP"); keep != "" { // keep the logs for a look afterwards
		dir, _ = os.MkdirTemp(keep, name+"-")
	}
	f := &fleet{t: t, name: name, dir: dir, seed: seed, settleWithin: 3 * time.Minute, rng: rand.New(rand.NewPCG(seed, 0)), rec: newRecorder(), report: rep, fields: newFieldLedger(t)}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	f.newest, f.oldest = cat.BinaryVersion(), cat.Releases()[0]
	f.members, f.etcd = startEtcd(t, f.dir, members)
	var urls []string
	for _, m := range f.members {
		urls = append(urls, m.clientURL)
	}
	for i, r := range releases {
		s := &server{index: i, id: fmt.Sprintf("safety-%d", i), port: ports.Free(t), dataDir: filepath.Join(f.dir, fmt.Sprintf("server-%d", i)),
			binary: r.binary, emulation: r.emulation, minCompat: r.minCompat, kube: r.kube, proxy: tcpgate.New(t, urls...)}
		f.servers = append(f.servers, s)
		f.kube = f.kube || r.kube != ""
	}
	f.fields.prefix = coreKey(f.kube, "podtemplates")
	if err := os.WriteFile(filepath.Join(f.dir, tokensFile), []byte(intruderToken+","+intruderUser+",intruder-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	// The first server makes the cluster's CA and tokens; the others share them.
	f.servers[0].start(t, f.dir)
	for _, s := range f.servers[1:] {
		wg.Go(func() { s.start(t, f.dir) })
	}
	wg.Wait()
	if t.Failed() { // a start failed on its goroutine, which ended there: end the test
		t.FailNow()
	}
	f.guardSecret(t)
	f.check = f.startChecker(t)
	return f
}

// liveMu guards the servers' processes, which the scenario replaces while the writers
// pick servers.
var liveMu sync.RWMutex

func (f *fleet) randomLive(rng *rand.Rand) *server {
	liveMu.RLock()
	defer liveMu.RUnlock()
	var live []*server
	for _, s := range f.servers {
		if s.live() && s.routable.Load() {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[rng.IntN(len(live))]
}

func (f *fleet) isLive(id string) bool {
	liveMu.RLock()
	defer liveMu.RUnlock()
	for _, s := range f.servers {
		if s.id == id && s.live() {
			return true
		}
	}
	return false
}

func (f *fleet) liveIDs() []string {
	liveMu.RLock()
	defer liveMu.RUnlock()
	var ids []string
	for _, s := range f.servers {
		if s.live() {
			ids = append(ids, s.id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (f *fleet) anomaly(format string, args ...interface{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.anomalies = append(f.anomalies, fmt.Sprintf(format, args...))
}

// stop stops s gracefully or with kill -9, as graceful says.
func (f *fleet) stop(s *server, graceful bool) {
	f.t.Helper()
	what := "kill -9"
	if graceful {
		what = "graceful stop"
	}
	f.fault(what + " of " + s.id)
	s.routable.Store(false)
	if s.kube == "" {
		s.proc.stop(f.t, graceful)
		return
	}
	if !s.proc.stopWithin(graceful, 30*time.Second) {
		// kube-apiserver sometimes waits on requests it does not end: its own
		// behaviour, not a fault of the fleet.
		f.t.Logf("%s did not stop within 30s of SIGTERM; killed (log %s)", s.id, s.proc.log)
	}
}

// restart starts s again, now of release r.
func (f *fleet) restart(s *server, r release) {
	f.t.Helper()
	f.step(fmt.Sprintf("the restart of %s (%s)", s.id, r))
	liveMu.Lock()
	s.binary, s.emulation, s.minCompat, s.kube = r.binary, r.emulation, r.minCompat, r.kube
	liveMu.Unlock()
	s.start(f.t, f.dir)
}

// roll moves every server, one at a time in a random order, to release r: a graceful
// stop or a kill -9 (at random), a restart, a pause with traffic. A move to another
// release is checked first with upgrade-check, whose verdict and output roll returns
// (true when nothing moves) and holds against what follows: once it approved, no field
// may be lost until the next move (settleFields).
func (f *fleet) roll(r release, between func(i int)) (bool, string) {
	f.t.Helper()
	safe, moving, out := true, false, ""
	for _, s := range f.servers {
		moving = moving || s.binary != r.binary || s.emulation != r.emulation || s.minCompat != r.minCompat || s.kube != r.kube
	}
	if moving {
		target := release{binary: or(r.binary, f.newest.String()), emulation: r.emulation}
		if r.kube != "" {
			target.binary = minorOf(r.kube)
		}
		safe, out = f.upgradeCheck(target)
		f.beginRoll(target.String(), safe)
	}
	for i, idx := range f.rng.Perm(len(f.servers)) {
		s := f.servers[idx]
		f.stop(s, f.rng.IntN(2) == 0)
		f.restart(s, r)
		if between != nil {
			between(i)
		}
		time.Sleep(time.Duration(500+f.rng.IntN(1500)) * time.Millisecond)
	}
	if moving {
		f.settleFields("the roll to " + r.String())
	}
	return safe, out
}

// finish stops the traffic, waits for the fleet to settle, checks what holds then and
// the history, and reports.
func (f *fleet) finish(tr *traffic) {
	f.t.Helper()
	tr.stop()
	f.quiesce(f.t)
	f.settleFields("the scenario")
	bad, result := f.rec.check(time.Minute)
	for _, k := range bad {
		f.anomaly("this history is not linearizable: %s", k)
	}
	found, events, overlapping := f.check.results()
	f.fields.mu.Lock()
	odd := slices.Clone(f.fields.odd)
	f.fields.mu.Unlock()
	f.mu.Lock()
	all := append(append(slices.Clone(f.anomalies), found...), odd...)
	f.mu.Unlock()
	f.report.scenario(f.name, f.seed, f.rec, events, overlapping, string(result), all, f.fields.summary())
	for _, a := range all {
		f.t.Errorf("anomaly: %s", a)
	}
	if f.t.Failed() {
		needles := anomalyObjects(all)
		for _, s := range f.servers {
			f.t.Logf("%s log: %s; its lines on the elections and on %v:\n%s", s.id, s.proc.log, needles, logExcerpt(s.proc.log, needles))
		}
	}
}

// anomalyObjects returns the names of the objects the anomalies name by etcd key
// ("/registry/<group>/<resource>/[<namespace>/]<name>").
func anomalyObjects(anomalies []string) []string {
	var names []string
	for _, a := range anomalies {
		for _, w := range strings.Fields(a) {
			if strings.HasPrefix(w, "/registry/") {
				names = append(names, path.Base(w))
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// The widget definition: v1 and v2 served, v1 stored, the same schema.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"v": {Type: "string"}}},
		},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgets.Resource + "." + widgets.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgets.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Storage: false, Schema: schema.DeepCopy()},
			},
		},
	}
}

var crdGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// createWidgets defines widgets and waits until every live server serves them.
func (f *fleet) createWidgets() {
	f.t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(widgetCRD())
	if err != nil {
		f.t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetAPIVersion("apiextensions.k8s.io/v1")
	obj.SetKind("CustomResourceDefinition")
	if _, err := f.servers[0].dynamicClients.Resource(crdGVR).Create(f.t.Context(), obj, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	for _, s := range f.servers {
		waitUntil(f.t, 60*time.Second, s.id+" to serve widgets", func() bool {
			_, err := s.dynamicClients.Resource(widgets).Namespace(namespace).List(f.t.Context(), metav1.ListOptions{Limit: 1})
			return err == nil
		})
	}
}

// editWidgets changes the widget definition with edit, retrying conflicts.
func (f *fleet) editWidgets(what string, edit func(*apiextensionsv1.CustomResourceDefinition)) {
	f.t.Helper()
	f.fault("CRD: " + what)
	waitUntil(f.t, 60*time.Second, "the widget definition to change: "+what, func() bool {
		s := f.randomLive(f.rng)
		u, err := s.dynamicClients.Resource(crdGVR).Get(f.t.Context(), widgetCRD().Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			f.t.Fatal(err)
		}
		edit(&crd)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crd)
		if err != nil {
			f.t.Fatal(err)
		}
		_, err = s.dynamicClients.Resource(crdGVR).Update(f.t.Context(), &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			f.t.Logf("changing the widget definition (%s): %v", what, err)
		}
		return err == nil
	})
}

// storeWidgetsAs makes version v the storage version of widgets.
func (f *fleet) storeWidgetsAs(v string) {
	f.editWidgets("store widgets as "+v, func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == v
			if crd.Spec.Versions[i].Name == v {
				crd.Spec.Versions[i].Served = true
			}
		}
	})
}

// upgradeCheck runs `concord upgrade-check` against the fleet and says whether it
// called moving to r safe, with its output. Exit status 1 without a verdict (the
// cluster could not be read) is run again, through another server.
func (f *fleet) upgradeCheck(r release) (bool, string) {
	f.t.Helper()
	var safe bool
	var out []byte
	waitUntil(f.t, 2*time.Minute, "a verdict of upgrade-check --to-version "+r.binary, func() bool {
		s := f.randomLive(f.rng)
		if s == nil {
			return false
		}
		args := []string{"upgrade-check", "--kubeconfig", s.kubeconfig(), "--to-version", r.binary}
		if r.emulation != "" {
			args = append(args, "--emulation-version", r.emulation)
		}
		var err error
		out, err = exec.CommandContext(f.t.Context(), concordBinary(f.t), args...).CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			f.t.Fatalf("upgrade-check: %v\n%s", err, out)
		}
		safe = err == nil
		if !safe && !strings.Contains(string(out), "not safe") {
			f.t.Logf("upgrade-check through %s gave no verdict: %s", s.id, out)
			return false
		}
		return true
	})
	f.report.fault(f.name, fmt.Sprintf("upgrade-check --to-version %s --emulation-version %s: safe=%v", r.binary, r.emulation, safe))
	if !safe {
		f.t.Logf("upgrade-check --to-version %s --emulation-version %s refuses:\n%s", r.binary, r.emulation, out)
	}
	return safe, string(out)
}

// waitSettled waits until the fleet has settled, failing with the last reason it had
// not.
func (f *fleet) waitSettled(what string) {
	f.t.Helper()
	why := ""
	f.settleFrom = time.Now()
	deadline := f.settleFrom.Add(f.settleWithin)
	for {
		ctx, cancel := context.WithTimeout(f.t.Context(), 15*time.Second)
		why = f.settled(ctx, f.randomLive(f.rng))
		cancel()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the fleet did not settle %s within %v: %s", what, f.settleWithin, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// versions returns the catalog's releases N, N-1, N-2, N-3.
func versions(t *testing.T) [4]string {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	n := cat.BinaryVersion()
	var out [4]string
	for i := range out {
		out[i] = fmt.Sprintf("%d.%d", n.Major(), int(n.Minor())-i)
	}
	return out
}

func seed(t *testing.T) uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	s := uint64(time.Now().UnixNano())
	t.Logf("seed %d (run again with -args -seed %d)", s, s)
	return s
}

// report collects what the scenarios did and found.
type report struct {
	mu        sync.Mutex
	scenarios []string
	faults    atomic.Int64
	acked     int
	anomalies []string
}

func (r *report) fault(scenario, what string) {
	r.faults.Add(1)
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "  [%s] %s %s\n", time.Now().Format("15:04:05"), scenario, what)
	}
}

func (r *report) scenario(name string, seed uint64, rec *recorder, events, overlapping int, lin string, anomalies, notes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec.mu.Lock()
	line := fmt.Sprintf("%-16s seed %-20d ops %5d acked %5d unknown %4d refused %4d etcd events %6d migrations overlapping a disagreement %d linearizability %-8s anomalies %d",
		name, seed, len(rec.ops), rec.acked, rec.unknown, rec.refusals, events, overlapping, lin, len(anomalies))
	r.acked += rec.acked
	rec.mu.Unlock()
	for _, n := range notes {
		line += "\n    " + n
	}
	r.scenarios = append(r.scenarios, line)
	r.anomalies = append(r.anomalies, anomalies...)
}

func (r *report) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "scenarios %d, faults injected %d, operations acknowledged %d, anomalies %d\n",
		len(r.scenarios), r.faults.Load(), r.acked, len(r.anomalies))
	for _, s := range r.scenarios {
		b.WriteString("  " + s + "\n")
	}
	for _, a := range r.anomalies {
		b.WriteString("  anomaly: " + a + "\n")
	}
	return b.String()
}

func joinComma(s []string) string { return strings.Join(s, ",") }

// apiSeeded is how many widgets seedWidgets creates through the servers at most; the
// rest of a larger seed is written straight into etcd (seedStored).
const apiSeeded = 2000

// seedValue is a seeded widget's spec.v: objects of about 1 KiB, as the scale
// asks.
var seedValue = "seed-" + strings.Repeat("x", 900)

// seedWidgets creates n widgets besides the writers' ones, eight at a time.
func (f *fleet) seedWidgets(n int) {
	f.t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := range 8 {
		wg.Go(func() {
			s := f.servers[w%len(f.servers)]
			for i := w; i < n; i += 8 {
				if _, err := s.dynamicClients.Resource(widgets).Namespace(namespace).Create(f.t.Context(), widget(bulkName(i), seedValue), metav1.CreateOptions{}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		f.t.Fatalf("%d of %d widgets not created", failed.Load(), n)
	}
}

func bulkName(i int) string { return fmt.Sprintf("bulk-%d", i) }

// migrationLeader returns the server that holds the storage-migration lease (its
// candidates' identities start with their server's ID).
func (f *fleet) migrationLeader() *server {
	f.t.Helper()
	var leader *server
	waitUntil(f.t, 60*time.Second, "a storage-migration leader", func() bool {
		l, err := f.randomLive(f.rng).clients.CoordinationV1().Leases("kube-system").Get(f.t.Context(), "concord-storage-migration", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false
		}
		for _, s := range f.servers {
			if strings.HasPrefix(*l.Spec.HolderIdentity, s.id+"_") {
				leader = s
			}
		}
		return leader != nil
	})
	return leader
}
