package safety

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/test/ports"
	"github.com/concordproject/concord/test/tcpgate"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
)

// Field preservation. A field writer keeps PodTemplates whose fields the catalog dates
// (template.spec.hostnameOverride 1.34, schedulingGroup 1.36, ...): each create and
// update sets the fields of a release picked at random, falling back a release at a
// time while the server refuses them (a field newer than its minimum compatibility
// release: 422; newer than its binary: an unknown field, 400 under
// fieldValidation=Strict), and names itself in an annotation; label patches keep the
// annotation. The checker then holds every object etcd stores to the write its
// annotation names: a field that write set, missing or changed, was lost by whatever
// rewrote the object since (a server that does not know the field, a migration). A
// later accepted create or update replaces the annotation, and with it what is
// expected: that is the "unless a later accepted write changed or removed it".

// The PodTemplates of the field writer, p0 … p(podTemplateKeys-1) in namespace
// default. The first stickyTemplates are never deleted nor rewritten with fewer fields:
// they gain the newest fields the fleet accepts and keep them through every later step,
// so that a rollback always has fields to lose.
const (
	podTemplateKeys = 6
	stickyTemplates = 2
	// writeAnnotation names the write whose content the object holds.
	writeAnnotation = "safety.concord.io/write"
	// touchLabel is what label patches change.
	touchLabel = "safety.concord.io/touch"
)

// coreKey is where the servers keep objects of a core resource in etcd: Concord under
// /registry/core/<resource>/, kube-apiserver under /registry/<resource>/.
func coreKey(kube bool, resource string) string {
	if kube {
		return "/registry/" + resource + "/"
	}
	return "/registry/core/" + resource + "/"
}

var podTemplates = schema.GroupVersionResource{Version: "v1", Resource: "podtemplates"}

// datedField is a field of PodTemplate v1 that the catalog dates, and how a writer
// sets it.
type datedField struct {
	path    string           // the catalog's path
	release *version.Version // the catalog's release that introduced it
	// set sets the field in obj to a value of write seq (a new value at each write, so
	// that no write is accepted by validation ratcheting) and returns where (keys and
	// list indexes) and what.
	set func(obj map[string]any, seq int) (at []any, value any)
}

// fieldSetters are the fields the writers set, from the oldest release to the newest.
// The catalog says when each came; a field the catalog does not date is left out.
var fieldSetters = []struct {
	path string
	set  func(obj map[string]any, seq int) ([]any, any)
}{
	{"template.spec.containers.[].lifecycle.stopSignal", func(o map[string]any, seq int) ([]any, any) {
		v := []string{"SIGTERM", "SIGINT", "SIGQUIT", "SIGUSR1"}[seq%4]
		child(firstContainer(o), "lifecycle")["stopSignal"] = v
		child(o, "template", "spec", "os")["name"] = "linux" // kube requires it beside a stop signal
		return []any{"template", "spec", "containers", 0, "lifecycle", "stopSignal"}, v
	}},
	{"template.spec.hostnameOverride", func(o map[string]any, seq int) ([]any, any) {
		v := fmt.Sprintf("h%d", seq)
		child(o, "template", "spec")["hostnameOverride"] = v
		return []any{"template", "spec", "hostnameOverride"}, v
	}},
	{"template.spec.volumes.[].projected.sources.[].podCertificate", func(o map[string]any, seq int) ([]any, any) {
		v := fmt.Sprintf("bundle-%d.pem", seq)
		pc := podCertificate(o)
		pc["signerName"], pc["keyType"], pc["credentialBundlePath"] = "example.com/safety", "ED25519", v
		return []any{"template", "spec", "volumes", 0, "projected", "sources", 0, "podCertificate", "credentialBundlePath"}, v
	}},
	{"template.spec.volumes.[].projected.sources.[].podCertificate.userAnnotations", func(o map[string]any, seq int) ([]any, any) {
		v := map[string]any{"safety.concord.io/seq": fmt.Sprint(seq)}
		podCertificate(o)["userAnnotations"] = v
		return []any{"template", "spec", "volumes", 0, "projected", "sources", 0, "podCertificate", "userAnnotations"}, v
	}},
	{"template.spec.schedulingGroup", func(o map[string]any, seq int) ([]any, any) {
		v := map[string]any{"podGroupName": fmt.Sprintf("g%d", seq)}
		child(o, "template", "spec")["schedulingGroup"] = v
		return []any{"template", "spec", "schedulingGroup"}, v
	}},
	{"template.spec.evictionResponders", func(o map[string]any, seq int) ([]any, any) {
		v := []any{map[string]any{"name": fmt.Sprintf("r%d", seq), "priority": 1}}
		child(o, "template", "spec")["evictionResponders"] = v
		return []any{"template", "spec", "evictionResponders"}, v
	}},
}

// child returns the map at keys below m, making the maps missing.
func child(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m
}

func firstContainer(o map[string]any) map[string]any {
	return child(o, "template", "spec")["containers"].([]any)[0].(map[string]any)
}

// podCertificate returns the podCertificate of the first volume's first projected
// source, making it.
func podCertificate(o map[string]any) map[string]any {
	spec := child(o, "template", "spec")
	if _, ok := spec["volumes"]; !ok {
		spec["volumes"] = []any{map[string]any{"name": "cert", "projected": map[string]any{"sources": []any{map[string]any{}}}}}
	}
	source := spec["volumes"].([]any)[0].(map[string]any)["projected"].(map[string]any)["sources"].([]any)[0].(map[string]any)
	return child(source, "podCertificate")
}

// setField is one field a write set: what a stored object of that write must hold.
type setField struct {
	path    string
	release *version.Version
	at      []any
	value   any // as encoding/json decodes it
}

// fieldWrite is a create or update the field writer sent.
type fieldWrite struct {
	key    string // etcd key
	fields []setField
	// pending: what the write stored is not known yet. A server drops a field its
	// emulated release gates off (Kubernetes' own field dropping, which Concord's
	// servers run too), so a write holds stored objects to the fields it answered
	// with (confirm), and nothing until it answered.
	pending bool
}

// fieldLoss is a field of a write missing (or changed) in what etcd stores under its
// annotation.
type fieldLoss struct {
	key, write string
	field      setField
	rev        int64
	got        string // what etcd holds there ("" missing)
	evaluated  bool
}

// step is a move of the scenario (a stop, a restart, a CRD change, a fault), from the
// etcd revision before it.
type step struct {
	what string
	rev  int64
}

// rollCheck is upgrade-check's verdict on a move of the fleet to another release,
// in effect from the revision before the move until the next move.
type rollCheck struct {
	target string
	safe   bool
	rev    int64
	losses int
}

// fieldLedger knows every write of the field writer, the scenario's steps and
// upgrade-check's verdicts, and the fields lost.
type fieldLedger struct {
	// prefix is where etcd holds the PodTemplates (coreKey).
	prefix string
	fields []datedField
	levels []*version.Version // the distinct releases of fields, oldest first

	mu     sync.Mutex
	writes map[string]*fieldWrite // by annotation
	seen   map[string]bool        // key|write|path lost already
	losses []*fieldLoss
	steps  []step
	rolls  []*rollCheck
	notes  []string
	// checks counts the fields compared in stored objects; stats the writer's outcomes.
	checks int
	stats  struct {
		attempts, acked, patched, refusedNew, refusedUnknown, deleted, expectedLosses int
		// level counts the acknowledged creates and updates by the release of their
		// newest field.
		level map[string]int
	}
	// odd are the writer's surprises (anomalies).
	odd []string
}

func newFieldLedger(t *testing.T) *fieldLedger {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	l := &fieldLedger{prefix: coreKey(false, "podtemplates"), writes: map[string]*fieldWrite{}, seen: map[string]bool{}}
	l.stats.level = map[string]int{}
	var v *catalog.Version
	if r := cat.Resource("", "podtemplates"); r != nil {
		v = r.Version("v1")
	}
	if v == nil {
		t.Fatal("the catalog has no PodTemplate v1")
	}
	for _, fs := range fieldSetters {
		rel := v.Fields[fs.path]
		if rel == nil {
			continue
		}
		l.fields = append(l.fields, datedField{path: fs.path, release: rel, set: fs.set})
	}
	sort.SliceStable(l.fields, func(i, j int) bool { return l.fields[i].release.LessThan(l.fields[j].release) })
	for _, fd := range l.fields {
		if len(l.levels) == 0 || !l.levels[len(l.levels)-1].EqualTo(fd.release) {
			l.levels = append(l.levels, fd.release)
		}
	}
	if len(l.levels) < 3 {
		t.Fatalf("the catalog dates only %d of the fields the writers set", len(l.fields))
	}
	return l
}

// build returns a PodTemplate with the fields of level (an index of levels; -1: none)
// set to values of seq, and the fields.
func (l *fieldLedger) build(name, write string, level, seq int) (*unstructured.Unstructured, []setField) {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "PodTemplate",
		"metadata": map[string]any{"name": name, "namespace": namespace, "annotations": map[string]any{writeAnnotation: write}},
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}},
	}
	var set []setField
	for _, fd := range l.fields {
		if level < 0 || fd.release.GreaterThan(l.levels[level]) {
			continue
		}
		at, value := fd.set(obj, seq)
		set = append(set, setField{path: fd.path, release: fd.release, at: at, value: jsonValue(value)})
	}
	return &unstructured.Unstructured{Object: obj}, set
}

// jsonValue is v as encoding/json decodes it.
func jsonValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

// lookup returns the value at at in v.
func lookup(v any, at []any) (any, bool) {
	for _, elem := range at {
		switch e := elem.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[e]; !ok {
				return nil, false
			}
		case int:
			list, ok := v.([]any)
			if !ok || e >= len(list) {
				return nil, false
			}
			v = list[e]
		}
	}
	return v, true
}

// hasPath reports whether v has a value at a catalog path ("[]" for any item).
func hasPath(v any, path []string) bool {
	if len(path) == 0 {
		return v != nil
	}
	if path[0] == "[]" {
		list, _ := v.([]any)
		return slices.ContainsFunc(list, func(item any) bool { return hasPath(item, path[1:]) })
	}
	m, _ := v.(map[string]any)
	next, ok := m[path[0]]
	return ok && hasPath(next, path[1:])
}

func (l *fieldLedger) register(write string, w *fieldWrite) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes[write] = w
}

// confirm holds the objects of a write to the fields the server answered with, from
// now on.
func (l *fieldLedger) confirm(write string, stored *unstructured.Unstructured) {
	answered := jsonValue(stored.Object)
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.writes[write]
	var kept []setField // a new slice: the writer still judges all it set
	for _, sf := range w.fields {
		if got, ok := lookup(answered, sf.at); ok && reflect.DeepEqual(got, sf.value) {
			kept = append(kept, sf)
		}
	}
	w.fields, w.pending = kept, false
}

// check holds a stored PodTemplate to the write its annotation names.
func (l *fieldLedger) check(key string, value []byte, rev int64) {
	obj, err := storedObject(value)
	if err != nil {
		return // the checker reports what it cannot decode
	}
	write, _ := lookup(obj, []any{"metadata", "annotations", writeAnnotation})
	l.mu.Lock()
	defer l.mu.Unlock()
	name, _ := write.(string)
	w := l.writes[name]
	if w != nil && w.pending {
		return
	}
	if w == nil {
		if !l.seen[key+"|"+name] {
			l.seen[key+"|"+name] = true
			l.odd = append(l.odd, fmt.Sprintf("rev %d: %s is stored with annotation %s=%q, which names no write of the field writer (lost, or made up)", rev, key, writeAnnotation, name))
		}
		return
	}
	for _, sf := range w.fields {
		l.checks++
		got, ok := lookup(obj, sf.at)
		if ok && reflect.DeepEqual(got, sf.value) {
			continue
		}
		id := key + "|" + name + "|" + sf.path
		if l.seen[id] {
			continue
		}
		l.seen[id] = true
		loss := &fieldLoss{key: key, write: name, field: sf, rev: rev}
		if ok {
			data, _ := json.Marshal(got)
			loss.got = string(data)
		}
		l.losses = append(l.losses, loss)
	}
}

// stepAt is the step during which revision rev was written; rollAt the verdict in
// effect then (nil: no move of the fleet was checked before it).
func (l *fieldLedger) stepAt(rev int64) string {
	what := "the fleet's start"
	for _, s := range l.steps {
		if s.rev < rev {
			what = s.what
		}
	}
	return what
}

func (l *fieldLedger) rollAt(rev int64) *rollCheck {
	var in *rollCheck
	for _, r := range l.rolls {
		if r.rev < rev {
			in = r
		}
	}
	return in
}

// evaluate sets every loss not yet evaluated against the verdict in effect when it
// happened: after an approval, or with no verdict, it is an anomaly; after a refusal
// it is what the refusal foretold, noted in the report.
func (l *fieldLedger) evaluate() (anomalies []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, loss := range l.losses {
		if loss.evaluated {
			continue
		}
		loss.evaluated = true
		what := fmt.Sprintf("%s lost %s (introduced in %s; written by %s", strings.TrimPrefix(loss.key, l.prefix), loss.field.path, loss.field.release, loss.write)
		if loss.got != "" {
			what = fmt.Sprintf("%s changed %s to %s (introduced in %s; %s wrote %s", strings.TrimPrefix(loss.key, l.prefix), loss.field.path, loss.got, loss.field.release, loss.write, mustJSON(loss.field.value))
		}
		what += fmt.Sprintf(") at rev %d, after %s", loss.rev, l.stepAt(loss.rev))
		switch r := l.rollAt(loss.rev); {
		case r == nil:
			anomalies = append(anomalies, "field lost: "+what)
		case r.safe:
			r.losses++
			anomalies = append(anomalies, fmt.Sprintf("upgrade-check approved the move to %s, and then %s", r.target, what))
		default:
			r.losses++
			l.stats.expectedLosses++
			l.notes = append(l.notes, fmt.Sprintf("expected loss (upgrade-check refused the move to %s): %s", r.target, what))
		}
	}
	return anomalies
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// currentRev is etcd's revision now (the last one known if etcd does not answer).
func (f *fleet) currentRev() int64 {
	ctx, cancel := context.WithTimeout(f.t.Context(), 5*time.Second)
	defer cancel()
	resp, err := f.etcd.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		f.fields.mu.Lock()
		defer f.fields.mu.Unlock()
		if n := len(f.fields.steps); n > 0 {
			return f.fields.steps[n-1].rev
		}
		return 0
	}
	return resp.Header.Revision
}

// step records that the scenario makes a move now.
func (f *fleet) step(what string) {
	rev := f.currentRev()
	f.fields.mu.Lock()
	defer f.fields.mu.Unlock()
	f.fields.steps = append(f.fields.steps, step{what: what, rev: rev})
}

// fault is a step that injects a fault, counted in the report.
func (f *fleet) fault(what string) {
	f.step(what)
	f.report.fault(f.name, what)
}

// settleFields checks what etcd holds now against the writes, once the checker has
// seen every write up to now, and sets the losses found against the verdicts: after
// a step, approved means nothing lost.
func (f *fleet) settleFields(after string) {
	f.t.Helper()
	rev := f.currentRev()
	waitUntil(f.t, 60*time.Second, "the checker to see etcd up to rev "+fmt.Sprint(rev), func() bool {
		_ = f.etcd.RequestProgress(f.t.Context())
		return f.check.seenUpTo() >= rev
	})
	ctx, cancel := context.WithTimeout(f.t.Context(), 15*time.Second)
	defer cancel()
	resp, err := f.etcd.Get(ctx, f.fields.prefix, clientv3.WithPrefix())
	if err != nil {
		f.t.Fatalf("reading the PodTemplates from etcd: %v", err)
	}
	held := map[string]int{}
	for _, kv := range resp.Kvs {
		f.fields.check(string(kv.Key), kv.Value, kv.ModRevision)
		if obj, err := storedObject(kv.Value); err == nil {
			for _, fd := range f.fields.fields {
				if hasPath(obj, strings.Split(fd.path, ".")) {
					held[fd.path]++
				}
			}
		}
	}
	for _, a := range f.fields.evaluate() {
		f.anomaly("%s", a)
	}
	var parts []string
	for _, fd := range f.fields.fields {
		if held[fd.path] > 0 {
			parts = append(parts, fmt.Sprintf("%s (%s) ×%d", fd.path, fd.release, held[fd.path]))
		}
	}
	f.t.Logf("fields in etcd after %s: %s", after, strings.Join(parts, ", "))
}

// storedWith reports how many stored PodTemplates hold the field at path.
func (f *fleet) storedWith(path string) int {
	ctx, cancel := context.WithTimeout(f.t.Context(), 15*time.Second)
	defer cancel()
	resp, err := f.etcd.Get(ctx, f.fields.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0
	}
	n := 0
	for _, kv := range resp.Kvs {
		if obj, err := storedObject(kv.Value); err == nil && hasPath(obj, strings.Split(path, ".")) {
			n++
		}
	}
	return n
}

// newestField returns the path of the newest field introduced at or before rel.
func (l *fieldLedger) newestField(rel string) string {
	at := version.MustParse(rel)
	path := ""
	for _, fd := range l.fields {
		if !fd.release.GreaterThan(at) {
			path = fd.path
		}
	}
	return path
}

// beginRoll records upgrade-check's verdict on a move to target, starting now.
func (f *fleet) beginRoll(target string, safe bool) {
	rev := f.currentRev()
	f.fields.mu.Lock()
	defer f.fields.mu.Unlock()
	f.fields.rolls = append(f.fields.rolls, &rollCheck{target: target, safe: safe, rev: rev})
}

// summary is the report's line of the field writer and the checks.
func (l *fieldLedger) summary() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	var verdicts []string
	for _, r := range l.rolls {
		v := "approved"
		if !r.safe {
			v = "refused"
		}
		verdicts = append(verdicts, fmt.Sprintf("%s %s, %d lost", r.target, v, r.losses))
	}
	var levels []string
	for _, lv := range l.levels {
		levels = append(levels, fmt.Sprintf("%s: %d", lv, s.level[lv.String()]))
	}
	out := []string{fmt.Sprintf("fields: creates and updates %d, acked %d (by newest field's release: %s), refused: a field newer than the minimum compatibility release %d, a field unknown to the release %d; label patches acked %d; deletes %d; field values checked in etcd %d, lost %d (expected after a refusal %d)",
		s.attempts, s.acked, strings.Join(levels, ", "), s.refusedNew, s.refusedUnknown, s.patched, s.deleted, l.checks, len(l.losses), s.expectedLosses),
		"upgrade-check before each move: " + or(strings.Join(verdicts, "; "), "no move")}
	return append(out, l.notes...)
}

// serverRelease is what a server runs as: its process, binary and minimum
// compatibility releases.
type serverRelease struct {
	proc                         *proc
	binary, emulation, minCompat *version.Version
}

// releaseOf returns what s runs as now.
func (f *fleet) releaseOf(s *server) serverRelease {
	liveMu.RLock()
	defer liveMu.RUnlock()
	binary := f.newest
	switch {
	case s.kube != "":
		binary = version.MustParse(minorOf(s.kube))
	case s.binary != "":
		binary = version.MustParse(s.binary)
	}
	emulation := binary
	if s.emulation != "" {
		emulation = version.MustParse(s.emulation)
	}
	floor := binary.SubtractMinor(3)
	if floor.LessThan(f.oldest) {
		floor = f.oldest
	}
	minCompat := emulation.SubtractMinor(1)
	if minCompat.LessThan(floor) {
		minCompat = emulation
	}
	if s.minCompat != "" {
		minCompat = version.MustParse(s.minCompat)
	}
	return serverRelease{proc: s.proc, binary: binary, emulation: emulation, minCompat: minCompat}
}

// fieldWriter is the writer of the PodTemplates.
type fieldWriter struct {
	f   *fleet
	rng *rand.Rand
	seq int
	// held is the level each sticky template was last written with (-2: unknown).
	held [stickyTemplates]int
}

// writeFields runs the field writer until ctx ends: about every 30 ms an operation on
// one of the PodTemplates through a random live server.
func (tr *traffic) writeFields(ctx context.Context, rng *rand.Rand) {
	w := &fieldWriter{f: tr.f, rng: rng}
	for i := range w.held {
		w.held[i] = -2
	}
	for ctx.Err() == nil {
		s := tr.f.randomLive(rng)
		if s == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		i := rng.IntN(podTemplateKeys)
		opCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		w.op(opCtx, s, i)
		cancel()
		time.Sleep(time.Duration(15+rng.IntN(30)) * time.Millisecond)
	}
}

// op is one operation on template i: a sticky one is created with the newest fields
// the server accepts, label-patched, or rewritten with newer fields only; another is
// created, rewritten (fields of a random release, falling back), label-patched or
// deleted.
func (w *fieldWriter) op(ctx context.Context, s *server, i int) {
	name := fmt.Sprintf("p%d", i)
	pts := s.dynamicClients.Resource(podTemplates).Namespace(namespace)
	top := len(w.f.fields.levels) - 1
	if i < stickyTemplates {
		switch {
		case w.held[i] == -2 || w.rng.IntN(4) == 0:
			cur, err := pts.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				if lvl, ok := w.write(ctx, s, name, nil, top, -1); ok {
					w.held[i] = lvl
				}
			case err == nil && w.held[i] < top:
				if lvl, ok := w.write(ctx, s, name, cur, top, max(w.held[i], -1)+1); ok {
					w.held[i] = lvl
				}
			}
		default:
			w.patch(ctx, pts, name)
		}
		return
	}
	switch n := w.rng.IntN(20); {
	case n < 3:
		w.write(ctx, s, name, nil, w.rng.IntN(top+1), -1)
	case n < 10:
		cur, err := pts.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			w.write(ctx, s, name, cur, w.rng.IntN(top+1), -1)
		}
	case n < 18:
		w.patch(ctx, pts, name)
	default:
		if pts.Delete(ctx, name, metav1.DeleteOptions{}) == nil {
			w.f.fields.mu.Lock()
			w.f.fields.stats.deleted++
			w.f.fields.mu.Unlock()
		}
	}
}

// patch changes the template's touch label, a merge patch of metadata only: the server
// decodes the stored object and writes it back, which must keep every field.
func (w *fieldWriter) patch(ctx context.Context, pts interface {
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error)
}, name string) {
	w.seq++
	patch := mustJSON(map[string]any{"metadata": map[string]any{"labels": map[string]any{touchLabel: fmt.Sprint(w.seq)}}})
	if _, err := pts.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
		w.f.fields.mu.Lock()
		w.f.fields.stats.patched++
		w.f.fields.mu.Unlock()
	}
}

// write creates (cur nil) or updates (at cur's resourceVersion) the template with the
// fields of level from, then of each lower level down to floor while the server refuses
// them. It returns the level written when a write was acknowledged.
func (w *fieldWriter) write(ctx context.Context, s *server, name string, cur *unstructured.Unstructured, from, floor int) (int, bool) {
	pts := s.dynamicClients.Resource(podTemplates).Namespace(namespace)
	l := w.f.fields
	for level := from; level >= floor; level-- {
		w.seq++
		write := fmt.Sprintf("%s-%d", w.f.name, w.seq)
		obj, set := l.build(name, write, level, w.seq)
		l.register(write, &fieldWrite{key: l.prefix + namespace + "/" + name, fields: set, pending: true})
		before := w.f.releaseOf(s)
		var err error
		var stored *unstructured.Unstructured
		opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
		if cur == nil {
			stored, err = pts.Create(ctx, obj, opts)
		} else {
			obj.SetResourceVersion(cur.GetResourceVersion())
			stored, err = pts.Update(ctx, obj, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict})
		}
		if err == nil {
			l.confirm(write, stored)
		}
		after := w.f.releaseOf(s)
		l.mu.Lock()
		l.stats.attempts++
		refusal := apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
		switch {
		case err == nil:
			l.stats.acked++
			if level >= 0 {
				l.stats.level[l.levels[level].String()]++
			}
		case apierrors.IsInvalid(err):
			l.stats.refusedNew++
		case apierrors.IsBadRequest(err):
			l.stats.refusedUnknown++
		}
		l.mu.Unlock()
		if (err == nil || refusal) && before.proc == after.proc && before.proc != nil {
			w.judge(s, before, set, stored, err)
		}
		if !refusal {
			return level, err == nil
		}
	}
	return 0, false
}

// judge checks the server's answer to a write against its releases: a field newer
// than its binary is unknown to it (400 under Strict), one newer than its minimum
// compatibility release is refused (422) or, where the server's emulated release
// gates it off, dropped (Kubernetes' field dropping: the write is accepted without
// it), the others are accepted.
func (w *fieldWriter) judge(s *server, r serverRelease, set []setField, stored *unstructured.Unstructured, err error) {
	newest := ""
	var rel *version.Version
	for _, sf := range set {
		if rel == nil || sf.release.GreaterThan(rel) {
			newest, rel = sf.path, sf.release
		}
	}
	want := "accepted"
	switch {
	case rel != nil && rel.GreaterThan(r.binary):
		want = "refused as unknown (400)"
	case rel != nil && rel.GreaterThan(r.minCompat) && s.kube == "" && keptNewer(set, stored, r.minCompat):
		// kube-apiserver takes no such rule: it keeps what its emulated release's
		// gates allow (and the write is held to what it answered with).
		want = "refused as new (422)"
	}
	got := "accepted"
	switch {
	case apierrors.IsInvalid(err):
		got = "refused as new (422)"
	case apierrors.IsBadRequest(err):
		got = "refused as unknown (400)"
	}
	if got == want || (want != "accepted" && got != "accepted") {
		return
	}
	l := w.f.fields
	l.mu.Lock()
	defer l.mu.Unlock()
	l.odd = append(l.odd, fmt.Sprintf("%s (binary %s, minimum compatibility %s) %s a PodTemplate whose newest field is %s (introduced in %s), which it should have %s: %v",
		s.id, r.binary, r.minCompat, got, newest, rel, want, err))
}

// keptNewer reports whether stored, a write's answer (nil if refused), kept a field of
// set newer than minCompat.
func keptNewer(set []setField, stored *unstructured.Unstructured, minCompat *version.Version) bool {
	if stored == nil {
		return true
	}
	answered := jsonValue(stored.Object)
	for _, sf := range set {
		if got, ok := lookup(answered, sf.at); ok && sf.release.GreaterThan(minCompat) && reflect.DeepEqual(got, sf.value) {
			return true
		}
	}
	return false
}

// joinRefusal is what a server says when it refuses to join servers whose minimum
// compatibility version is above its release (identity.ErrBelowFleet).
const joinRefusal = "release below the minimum compatibility version of the servers sharing this etcd"

// probeRefusal checks that the fleet refuses a rollback to release to while it holds a
// field to does not know: once such a field is stored, upgrade-check --to-version to
// must block, a server of to must refuse to join (member, stopped and started again
// as to, or a server beside the fleet if member is nil) writing nothing, and the field
// must still be in etcd afterwards. The fleet runs releases newer than to, of minimum
// compatibility above it.
func (f *fleet) probeRefusal(to string, member *server) {
	f.t.Helper()
	path := f.fields.newestField(version.MustParse(to).AddMinor(1).String())
	waitUntil(f.t, 60*time.Second, "a PodTemplate with "+path+" in etcd", func() bool { return f.storedWith(path) > 0 })
	safe, out := f.upgradeCheck(release{binary: to})
	if safe {
		f.anomaly("upgrade-check approves a rollback to %s while %s (which %s does not know) is stored and the servers' minimum compatibility version is above it:\n%s", to, path, to, out)
	}
	display := strings.ReplaceAll(path, ".[]", "[]")
	namesField, namesFleet := strings.Contains(out, "field "+display+" of"), strings.Contains(out, "below the servers' minimum compatibility version")
	if !safe && !namesField && !namesFleet {
		f.anomaly("upgrade-check refuses the rollback to %s without naming %s or the servers' minimum compatibility version:\n%s", to, path, out)
	}

	s := &server{id: "safety-refused", port: ports.Free(f.t), dataDir: filepath.Join(f.dir, "server-refused"), binary: to}
	if member != nil {
		f.stop(member, f.rng.IntN(2) == 0)
		s = &server{id: member.id, port: member.port, dataDir: member.dataDir, proxy: member.proxy, binary: to}
	} else {
		var urls []string
		for _, m := range f.members {
			urls = append(urls, m.clientURL)
		}
		s.proxy = tcpgate.New(f.t, urls...)
	}
	leaseKey := "/registry/coordination.k8s.io/leases/kube-system/" + s.id
	leaseBefore := f.modRevision(leaseKey)
	f.fault(fmt.Sprintf("start %s as %s, below the fleet's minimum compatibility version", s.id, to))
	_ = os.Remove(s.kubeconfig()) // written once ready
	p := startProc(f.t, f.dir, s.id, concordBinary(f.t), s.args(f.dir)...)
	refused := false
	waitRunning(f.t, p, s.id+" of "+to+" to exit or be ready", func() bool {
		if p.exited() {
			data, _ := os.ReadFile(p.log)
			refused = strings.Contains(string(data), joinRefusal)
			return true
		}
		_, err := os.Stat(s.kubeconfig())
		return err == nil
	})
	if !p.exited() {
		p.stop(f.t, false)
		f.anomaly("a server of %s joined a fleet whose minimum compatibility version is above it (log %s)", to, p.log)
	} else if !refused {
		f.anomaly("a server of %s beside the fleet exited, but not because the fleet's minimum compatibility version is above it: %v (log %s)", to, p.err, p.log)
	}
	if after := f.modRevision(leaseKey); after != 0 && after != leaseBefore { // (a peer may collect it)
		f.anomaly("the refused server of %s wrote its identity lease (mod revision %d, before %d)", to, after, leaseBefore)
	}
	if member != nil {
		f.restart(member, release{binary: member.binary, emulation: member.emulation, minCompat: member.minCompat})
	}
	f.settleFields("the refused join of a server of " + to)
	n := f.storedWith(path)
	if n == 0 {
		f.anomaly("%s is no longer in etcd after a server of %s was refused", path, to)
	}
	f.fields.mu.Lock()
	f.fields.notes = append(f.fields.notes, fmt.Sprintf("refusal of %s: upgrade-check refused=%v (names the field %v, the fleet's minimum compatibility version %v); a server of %s refused to join=%v; %s still in etcd in %d objects",
		to, !safe, namesField, namesFleet, to, refused, path, n))
	f.fields.mu.Unlock()
}

// modRevision is the mod revision of key in etcd (0: absent).
func (f *fleet) modRevision(key string) int64 {
	ctx, cancel := context.WithTimeout(f.t.Context(), 5*time.Second)
	defer cancel()
	resp, err := f.etcd.Get(ctx, key)
	if err != nil {
		f.t.Fatalf("reading %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].ModRevision
}

// expectedLosses is how many losses a refusal foretold so far.
func (l *fieldLedger) expectedLosses() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats.expectedLosses
}

// waitFor polls cond every 100ms until it holds (true) or timeout passes (false).
func waitFor(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// migratePodTemplates creates a StorageVersionMigration of the PodTemplates by hand
// (as upgrade-check prints one) and waits until it has ended: the migration rewrites
// every PodTemplate through a server, which must keep every field (a rewrite whose
// bytes are those stored is not made; one that drops a field is, and the checker sees
// it).
func (f *fleet) migratePodTemplates() {
	f.t.Helper()
	f.fault("a migration of podtemplates, made by hand")
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": migrationapi.StorageVersionMigrations.GroupVersion().String(), "kind": "StorageVersionMigration",
		"metadata": map[string]any{"generateName": "podtemplates-"},
		"spec":     map[string]any{"resource": map[string]any{"group": "", "resource": "podtemplates"}},
	}}
	var name string
	waitUntil(f.t, 60*time.Second, "a migration of podtemplates to be created", func() bool {
		created, err := f.randomLive(f.rng).dynamicClients.Resource(migrationapi.StorageVersionMigrations).Create(f.t.Context(), m, metav1.CreateOptions{})
		if err != nil {
			f.t.Logf("creating a migration of podtemplates: %v", err)
			return false
		}
		name = created.GetName()
		return true
	})
	var phase string
	waitUntil(f.t, 2*time.Minute, "the migration "+name+" to end", func() bool {
		u, err := f.randomLive(f.rng).dynamicClients.Resource(migrationapi.StorageVersionMigrations).Get(f.t.Context(), name, metav1.GetOptions{})
		if err != nil || !ended(u) {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["status"] == "True" {
				phase += fmt.Sprintf("%s (%v: %v) ", c["type"], c["reason"], c["message"])
			}
		}
		return true
	})
	f.t.Logf("the migration %s of podtemplates ended: %s", name, phase)
}
