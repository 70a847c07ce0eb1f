package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/identity"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/test/binary"
	"github.com/concordproject/concord/test/logbuf"
	"github.com/concordproject/concord/test/ports"
	"github.com/concordproject/concord/test/tcpgate"
	"github.com/concordproject/concord/versionskew"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Every built-in resource has a StorageVersion named <group>.<resource> ("core" for the
// legacy group) with one entry per server: the storage version the compatibility rule
// chose, every version the binary knows (newest first) as decodable, the served ones as
// served; the common version set and the condition saying so. Only the servers may
// write these objects; everyone may read them; Kubernetes' validation applies.
func TestStorageVersionObjects(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithStorageMigration(), withTokens(t, "reader-token,reader,reader-uid\n"))
	s0, s1 := c.Servers[0], c.Servers[1]
	admin := svClient(t, s0.Config())
	ids := svIDs(s0, s1)
	compat := s0.Compatibility

	names := svNames(s0)
	if names[schema.GroupResource{Resource: "configmaps"}] != "core.configmaps" {
		t.Fatalf("configmaps are reported as %q, want core.configmaps", names[schema.GroupResource{Resource: "configmaps"}])
	}
	for gr, name := range names {
		sv, _ := svWait(t, admin, name, "both servers' entries", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
			return len(svEncodings(sv)) == 2
		})
		apiVersion := func(v string) string { return schema.GroupVersion{Group: gr.Group, Version: v}.String() }
		var decodable, served []string
		storage, _ := compat.StorageVersion(gr)
		if gr == migrationapi.StorageVersionMigrations.GroupResource() {
			// Concord's own definition, the same in every release (package builtin).
			storage = "v1"
			decodable = []string{apiVersion("v1"), apiVersion("v1beta1")}
			served = decodable
		} else if gr == versionskew.GroupResource {
			// Concord's own too.
			storage = versionskew.GroupVersion.Version
			decodable = []string{versionskew.GroupVersion.String()}
			served = decodable
		} else if cat := compat.Catalog.Resource(gr.Group, gr.Resource); cat != nil {
			for _, v := range cat.Versions { // newest first
				decodable = append(decodable, apiVersion(v.Name))
				if compat.Served(gr.WithVersion(v.Name)) {
					served = append(served, apiVersion(v.Name))
				}
			}
		} else { // customresourcedefinitions, not a catalog resource
			storage, decodable, served = "v1", []string{apiVersion("v1")}, []string{apiVersion("v1")}
		}
		for _, id := range ids {
			e := svEntry(sv, id)
			if e == nil || e.EncodingVersion != apiVersion(storage) || !slices.Equal(e.DecodableVersions, decodable) || !slices.Equal(e.ServedVersions, served) {
				t.Errorf("%s: entry of %s is %+v; want encoding %s, decodable %v, served %v", name, id, e, apiVersion(storage), decodable, served)
			}
		}
		if !svAgreeOn(sv, apiVersion(storage), ids...) {
			t.Errorf("%s: commonEncodingVersion %v, want %s", name, sv.Status.CommonEncodingVersion, apiVersion(storage))
		}
		if len(sv.Status.Conditions) != 1 {
			t.Fatalf("%s: conditions %+v", name, sv.Status.Conditions)
		}
		cond := sv.Status.Conditions[0]
		if cond.Type != "AllEncodingVersionsEqual" || cond.Status != "True" || cond.Reason != "CommonEncodingVersionSet" ||
			cond.Message != "Common encoding version set" || cond.ObservedGeneration != sv.Generation || cond.LastTransitionTime.IsZero() {
			t.Errorf("%s: condition %+v", name, cond)
		}
	}

	// The JSON shape: spec is an empty object, the version strings are apiVersions.
	code, _, _, body := svHTTP(t, s1.Config(), http.MethodGet, svPath("core.configmaps"), nil)
	var shape map[string]interface{}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &shape) != nil {
		t.Fatalf("GET core.configmaps: %d %s", code, body)
	}
	if spec, ok := shape["spec"].(map[string]interface{}); !ok || len(spec) != 0 || shape["apiVersion"] != "internal.apiserver.k8s.io/v1alpha1" || shape["kind"] != "StorageVersion" {
		t.Errorf("core.configmaps: %s", body)
	}
	if !strings.Contains(body, `"encodingVersion":"v1"`) || !strings.Contains(body, `"commonEncodingVersion":"v1"`) {
		t.Errorf("core.configmaps does not report v1: %s", body)
	}

	// Readers read (once a role lets them); nobody but the servers writes, admins
	// included.
	grantRead(t, s0.Clientset(t), "reader", "internal.apiserver.k8s.io", "storageversions")
	reader := svWithToken(s0.Config(), "reader-token")
	eventually(t, "a reader lists storageversions", func() error {
		if code, _, _, body := svHTTP(t, reader, http.MethodGet, svPath(""), nil); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	newSV := map[string]interface{}{"apiVersion": "internal.apiserver.k8s.io/v1alpha1", "kind": "StorageVersion", "metadata": map[string]interface{}{"name": "example.com.gadgets"}}
	current, err := admin.InternalV1alpha1().StorageVersions().Get(t.Context(), "core.configmaps", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		body         interface{}
	}{
		{http.MethodPost, svPath(""), newSV},
		{http.MethodPut, svPath("core.configmaps"), current},
		{http.MethodPut, svPath("core.configmaps") + "/status", current},
		{http.MethodPatch, svPath("core.configmaps"), map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]string{"a": "b"}}}},
		{http.MethodPatch, svPath("core.configmaps") + "/status", map[string]interface{}{"status": map[string]interface{}{"commonEncodingVersion": nil}}},
		{http.MethodDelete, svPath("core.configmaps"), nil},
		{http.MethodDelete, svPath(""), nil},
	} {
		code, st, _, body := svHTTP(t, s0.Config(), tc.method, tc.path, tc.body)
		if code != http.StatusForbidden || st == nil || !strings.Contains(st.Message, "only the API servers write StorageVersions") {
			t.Errorf("admin %s %s: %d %s, want 403", tc.method, tc.path, code, body)
		}
	}
	if code, _, _, _ := svHTTP(t, reader, http.MethodPost, svPath(""), newSV); code != http.StatusForbidden {
		t.Errorf("a reader created a StorageVersion: %d", code)
	}

	// The servers' own identity writes, through Kubernetes' validation.
	loop := svClient(t, s0.LoopbackConfig())
	svs := loop.InternalV1alpha1().StorageVersions()
	_, err = svs.Create(t.Context(), &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: "widgets"}}, metav1.CreateOptions{})
	svExpectInvalid(t, err, `metadata.name: Invalid value: "widgets": name must be in the form of <group>.<resource>`)
	created, err := svs.Create(t.Context(), &apiserverinternalv1alpha1.StorageVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "example.com.gadgets"},
		Status: apiserverinternalv1alpha1.StorageVersionStatus{StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{
			{APIServerID: s0.ServerID, EncodingVersion: "example.com/v1", DecodableVersions: []string{"example.com/v1"}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Status.StorageVersions) != 0 {
		t.Errorf("a creation kept the status: %+v", created.Status)
	}
	v1 := []string{"example.com/v1"}
	entry := func(id, enc string, dec, served []string) apiserverinternalv1alpha1.ServerStorageVersion {
		return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: enc, DecodableVersions: dec, ServedVersions: served}
	}
	for _, tc := range []struct {
		status apiserverinternalv1alpha1.StorageVersionStatus
		want   string
	}{
		{apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry(s0.ServerID, "example.com/v1", []string{"example.com/v2"}, nil)},
			CommonEncodingVersion: ptrTo("example.com/v1")},
			"decodableVersions must include encodingVersion example.com/v1"},
		{apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry(s0.ServerID, "example.com/v1", v1, []string{"example.com/v2"})},
			CommonEncodingVersion: ptrTo("example.com/v1")},
			`status.storageVersions[0].servedVersions[0]: Invalid value: "example.com/v2": individual served version : example.com/v2 must be included in decodableVersions : [example.com/v1]`},
		{apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "example.com/v1", v1, v1), entry("a", "example.com/v1", v1, v1)},
			CommonEncodingVersion: ptrTo("example.com/v1")},
			`status.storageVersions[1].apiServerID: Duplicate value: "a"`},
		{apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry(s0.ServerID, "example.com/v1", v1, v1)},
			CommonEncodingVersion: ptrTo("example.com/v2")},
			"the actual common encoding version is example.com/v1"},
		{apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{entry(s0.ServerID, "example.com/v1", v1, v1)}},
			"the common encoding version is example.com/v1"},
		{apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{
				entry(s0.ServerID, "example.com/v1", v1, v1), entry(s1.ServerID, "example.com/v2", []string{"example.com/v2"}, nil)},
			CommonEncodingVersion: ptrTo("example.com/v1")},
			"should be nil if servers do not agree on the same encoding version, or if there is no server reporting the supported versions yet"},
		{apiserverinternalv1alpha1.StorageVersionStatus{Conditions: []apiserverinternalv1alpha1.StorageVersionCondition{
			{Type: "AllEncodingVersionsEqual", Status: "False", Message: "m"}}},
			"status[0].reason: Required value"}, // Kubernetes' path, without "conditions"
		{apiserverinternalv1alpha1.StorageVersionStatus{Conditions: []apiserverinternalv1alpha1.StorageVersionCondition{
			{Type: "AllEncodingVersionsEqual", Status: "False", Reason: "r"}}},
			"status[0].message: Required value"},
	} {
		next := created.DeepCopy()
		next.Status = tc.status
		_, err := svs.UpdateStatus(t.Context(), next, metav1.UpdateOptions{})
		svExpectInvalid(t, err, tc.want)
	}
	unconditional := created.DeepCopy()
	unconditional.ResourceVersion = ""
	unconditional.Labels = map[string]string{"a": "b"}
	_, err = svs.Update(t.Context(), unconditional, metav1.UpdateOptions{})
	svExpectInvalid(t, err, "metadata.resourceVersion: Invalid value: 0: must be specified for an update")
	if err := svs.Delete(t.Context(), created.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("the loopback identity cannot delete: %v", err)
	}

	// kubectl's Table.
	table := getTable(t, s0, svPath(""))
	var cols []string
	for _, col := range table.ColumnDefinitions {
		cols = append(cols, strings.ToUpper(col.Name))
	}
	if !slices.Equal(cols, []string{"NAME", "COMMONENCODINGVERSION", "STORAGEVERSIONS", "AGE"}) {
		t.Errorf("Table columns %v", cols)
	}
	cells := tableCells(t, table, "core.configmaps")
	if cells["CommonEncodingVersion"] != "v1" {
		t.Errorf("core.configmaps row: %v", cells)
	}
	for _, s := range []*harness.Server{s0, s1} {
		if got, _ := cells["StorageVersions"].(string); !strings.Contains(got, s.ServerID+"=v1") {
			t.Errorf("STORAGEVERSIONS %q lacks %s=v1", got, s.ServerID)
		}
	}

	// Health and metrics.
	for _, check := range []string{storageversion.UpdaterHook, identity.LeaseControllerHook, identity.LeaseCollectorHook} {
		for _, ep := range []string{"/healthz", "/livez", "/readyz"} {
			if code, _, _, body := svHTTP(t, s1.Config(), http.MethodGet, ep+"/poststarthook/"+check, nil); code != http.StatusOK {
				t.Errorf("%s/poststarthook/%s: %d %s", ep, check, code, body)
			}
		}
	}
	_, _, _, metrics := svHTTP(t, s1.Config(), http.MethodGet, "/metrics", nil)
	for _, m := range []string{"apiserver_storage_version_registration_seconds ", "apiserver_storage_version_update_duration_seconds_count{result=\"success\"}",
		"apiserver_storage_version_update_conflicts_total", "apiserver_storage_version_update_retries_total", "apiserver_storage_version_agreement_seconds_count",
		`kubernetes_healthcheck{name="poststarthook/built-in-resources-storage-version-updater",type="readyz"} 1`} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// svWithToken returns cfg with another bearer token.
func svWithToken(cfg *rest.Config, token string) *rest.Config {
	out := *cfg
	out.BearerToken = token
	out.BearerTokenFile = ""
	return &out
}

func svExpectInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want 422 Invalid with %q", err, want)
	}
}

// The write barrier, as upstream's bootstrap test has it but black-box: a server whose
// registration of configmaps and CustomResourceDefinitions keeps failing (their
// StorageVersions hold an invalid condition its writes cannot get past) refuses writes
// to them with 503, Kubernetes' message and Retry-After, and says why in readyz; custom
// resources, StorageVersions, TokenReviews and reads pass; every other resource is
// writable. Once the objects are repaired the server registers again (it follows them) and
// everything passes.
func TestStorageVersionBarrier(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithStorageMigration())
	a := c.Servers[0]
	crd := svCRD("gizmos", "v1")
	crds := crdClient(t, a)
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCRD(t, crds, crd.Name, "established", established)
	if _, err := a.Clientset(t).CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Poison two objects behind the servers' back.
	originals := map[string][]byte{}
	for _, name := range []string{"core.configmaps", "apiextensions.k8s.io.customresourcedefinitions", "core.events"} {
		key := "/registry/internal.apiserver.k8s.io/storageversions/" + name
		resp, err := c.EtcdClient.Get(t.Context(), key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading %s: %v", key, err)
		}
		originals[key] = resp.Kvs[0].Value
		var obj map[string]interface{}
		if err := json.Unmarshal(resp.Kvs[0].Value, &obj); err != nil {
			t.Fatal(err)
		}
		status := obj["status"].(map[string]interface{})
		status["conditions"] = append(status["conditions"].([]interface{}),
			map[string]interface{}{"type": "Poisoned", "status": "True", "reason": "", "message": "written behind the servers' back"})
		b, _ := json.Marshal(obj)
		if _, err := c.EtcdClient.Put(t.Context(), key, string(b)); err != nil {
			t.Fatal(err)
		}
	}

	b := c.AddServer(t)
	cfg := b.Config()
	cm := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "new"}}
	for _, tc := range []struct {
		method, path string
		body         interface{}
		resource     string
	}{
		{http.MethodPost, "/api/v1/namespaces/default/configmaps", cm, "configmaps"},
		{http.MethodDelete, "/api/v1/namespaces/default/configmaps/old", nil, "configmaps"},
		{http.MethodPatch, "/api/v1/namespaces/default/configmaps/old", map[string]interface{}{"data": map[string]string{"a": "b"}}, "configmaps"},
		{http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", svCRD("sprockets", "v1"), "customresourcedefinitions.apiextensions.k8s.io"},
		// The storage-migration fast path writes configmaps too: the same barrier holds
		// it (it once sat outside the handler chain).
		{http.MethodPost, "/concord/v1/rewrite/core/configmaps", nil, "configmaps"},
		// events.k8s.io Events are core Events: the core resource's gate holds them.
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", svEvent("held"), "events.events.k8s.io"},
	} {
		code, st, hdr, body := svHTTP(t, cfg, tc.method, tc.path, tc.body)
		prefix := "wait for storage version registration to complete for resource: " + tc.resource + ", last seen error: "
		if code != http.StatusServiceUnavailable || st == nil || st.Reason != metav1.StatusReasonServiceUnavailable || st.Status != metav1.StatusFailure ||
			!strings.HasPrefix(st.Message, prefix) || !strings.Contains(st.Message, "reason: Required value") || hdr.Get("Retry-After") != "1" {
			t.Errorf("%s %s: %d Retry-After=%q %s; want 503 %q", tc.method, tc.path, code, hdr.Get("Retry-After"), body, prefix+"...reason: Required value")
		}
	}
	for _, tc := range []struct {
		name         string
		cfg          *rest.Config
		method, path string
		body         interface{}
	}{
		{"custom resource create", cfg, http.MethodPost, "/apis/example.com/v1/namespaces/default/gizmos",
			map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": map[string]interface{}{"name": "g"}}},
		{"StorageVersion create", b.LoopbackConfig(), http.MethodPost, svPath(""),
			map[string]interface{}{"apiVersion": "internal.apiserver.k8s.io/v1alpha1", "kind": "StorageVersion", "metadata": map[string]interface{}{"name": "example.com.bootstrap"}}},
		{"TokenReview", cfg, http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews",
			map[string]interface{}{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": map[string]interface{}{"token": "x"}}},
		{"namespace list", cfg, http.MethodGet, "/api/v1/namespaces", nil},
		{"configmap get", cfg, http.MethodGet, "/api/v1/namespaces/default/configmaps/old", nil},
		{"other resource", cfg, http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/default/leases",
			map[string]interface{}{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]interface{}{"name": "l"}}},
	} {
		if code, _, _, body := svHTTP(t, tc.cfg, tc.method, tc.path, tc.body); code == http.StatusServiceUnavailable || code >= 500 {
			t.Errorf("%s: %d %s; want it to pass the barrier", tc.name, code, body)
		}
	}
	code, _, _, body := svHTTP(t, cfg, http.MethodGet, "/readyz/poststarthook/"+storageversion.UpdaterHook, nil)
	if code != http.StatusInternalServerError || !strings.Contains(body, "not finished") ||
		!strings.Contains(body, "core.configmaps: ") || !strings.Contains(body, "apiextensions.k8s.io.customresourcedefinitions: ") {
		t.Errorf("readyz hook: %d %s", code, body)
	}
	if code, _, _, body := svHTTP(t, cfg, http.MethodGet, "/readyz", nil); code != http.StatusInternalServerError ||
		!strings.Contains(body, "[-]poststarthook/"+storageversion.UpdaterHook+" failed") {
		t.Errorf("readyz: %d %s", code, body)
	}
	// The barrier's answer is negotiated like every error.
	if code, hdr, body := svHTTPAccept(t, cfg, http.MethodPost, "/concord/v1/rewrite/core/configmaps", "application/yaml"); code != http.StatusServiceUnavailable ||
		hdr.Get("Content-Type") != "application/yaml" || !strings.Contains(body, "reason: ServiceUnavailable") {
		t.Errorf("a refused rewrite asking for YAML: %d %q %s", code, hdr.Get("Content-Type"), body)
	}
	_, _, _, metrics := svHTTP(t, cfg, http.MethodGet, "/metrics", nil)
	if !strings.Contains(metrics, `apiserver_storage_version_barrier_rejections_total{resource="configmaps"} 5`) {
		t.Errorf("/metrics does not count the 5 rejected configmap writes")
	}

	// Repair: the server registers at once (it follows the objects) and lets writes
	// through.
	repaired := time.Now()
	for key, value := range originals {
		if _, err := c.EtcdClient.Put(t.Context(), key, string(value)); err != nil {
			t.Fatal(err)
		}
	}
	took, ok := svPoll(t, 10*time.Second, func() (bool, error) {
		code, _, _, _ := svHTTP(t, cfg, http.MethodGet, "/readyz", nil)
		return code == http.StatusOK, nil
	})
	if !ok {
		_, _, _, body := svHTTP(t, cfg, http.MethodGet, "/readyz?verbose", nil)
		t.Fatalf("not ready 10s after the repair: %s", body)
	}
	t.Logf("ready %v after the repair (%v since)", took, time.Since(repaired))
	for _, tc := range []struct {
		method, path string
		body         interface{}
	}{
		{http.MethodPost, "/api/v1/namespaces/default/configmaps", cm},
		{http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", svCRD("sprockets", "v1")},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", svEvent("passed")},
	} {
		if code, _, _, body := svHTTP(t, cfg, tc.method, tc.path, tc.body); code != http.StatusCreated {
			t.Errorf("%s %s after the repair: %d %s", tc.method, tc.path, code, body)
		}
	}
	if code, _, _, _ := svHTTP(t, cfg, http.MethodGet, "/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz: %d after registration", code)
	}
}

// svCRD is a CustomResourceDefinition of example.com/<plural> with the given versions,
// the last one stored, all served, any content preserved.
func svCRD(plural string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	kind := strings.ToUpper(plural[:1]) + strings.TrimSuffix(plural[1:], "s")
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	svSetVersions(crd, versions...)
	return crd
}

func svSetVersions(crd *apiextensionsv1.CustomResourceDefinition, versions ...string) {
	crd.Spec.Versions = nil
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == len(versions)-1,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: ptrTo(true)}},
		})
	}
}

// Upstream's garbage collection scenarios, black-box: an entry of a server without an
// identity lease is collected; an entry of a live server is kept; deleting a server's
// lease removes its entry and the common version follows; deleting the last one
// deletes the object; an expired identity lease is collected.
func TestStorageVersionGarbageCollection(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, svLeases(2*time.Second, 250*time.Millisecond))
	s0 := c.Servers[0]
	loop := svClient(t, s0.LoopbackConfig())
	admin := svClient(t, s0.Config())
	leases := admin.CoordinationV1().Leases("kube-system")
	svs := loop.InternalV1alpha1().StorageVersions()
	entry := func(id, enc string) apiserverinternalv1alpha1.ServerStorageVersion {
		return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: enc,
			DecodableVersions: []string{"example.com/v2", "example.com/v1"}, ServedVersions: []string{"example.com/v2", "example.com/v1"}}
	}
	put := func(name string, common *string, entries ...apiserverinternalv1alpha1.ServerStorageVersion) {
		t.Helper()
		created, err := svs.Create(t.Context(), &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.StorageVersions, created.Status.CommonEncodingVersion = entries, common
		if _, err := svs.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fakeLease := func(name string, seconds int32, renewed time.Time) {
		t.Helper()
		_, err := leases.Create(t.Context(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{identity.LabelIdentity: identity.KubeAPIServer}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptrTo(name + "_x"), LeaseDurationSeconds: &seconds, RenewTime: &metav1.MicroTime{Time: renewed}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}

	// An entry of a server that has no lease goes, and with it the object.
	put("example.com.ghosts", ptrTo("example.com/v1"), entry("apiserver-nonexistent", "example.com/v1"))
	_, took := svWait(t, loop, "example.com.ghosts", "its only entry collected", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return sv == nil })
	t.Logf("entry of a server without a lease collected in %v", took)

	// An entry of a live server stays.
	put("example.com.living", ptrTo("example.com/v1"), entry(s0.ServerID, "example.com/v1"))
	time.Sleep(3 * time.Second) // more than a lease duration
	if sv, err := svGet(t.Context(), loop, "example.com.living"); err != nil || !svAgreeOn(sv, "example.com/v1", s0.ServerID) {
		t.Errorf("the entry of a live server: %s, %v", svDump(sv), err)
	}

	// Two servers disagree; deleting one's lease removes its entry and the other's
	// version becomes common; deleting the other's deletes the object.
	fakeLease("apiserver-fake-one", 3600, time.Now())
	fakeLease("apiserver-fake-two", 3600, time.Now())
	put("example.com.pair", nil, entry("apiserver-fake-one", "example.com/v1"), entry("apiserver-fake-two", "example.com/v2"))
	time.Sleep(500 * time.Millisecond)
	if sv, _ := svGet(t.Context(), loop, "example.com.pair"); sv == nil || len(sv.Status.StorageVersions) != 2 || sv.Status.CommonEncodingVersion != nil {
		t.Fatalf("entries of servers with live leases: %s", svDump(sv))
	}
	if err := leases.Delete(t.Context(), "apiserver-fake-one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sv, _ := svWait(t, loop, "example.com.pair", "the other server's version common", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
		return svAgreeOn(sv, "example.com/v2", "apiserver-fake-two")
	})
	if c := sv.Status.Conditions; len(c) != 1 || c[0].Status != "True" || c[0].Reason != "CommonEncodingVersionSet" {
		t.Errorf("condition after collection: %+v", c)
	}
	if err := leases.Delete(t.Context(), "apiserver-fake-two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	svWait(t, loop, "example.com.pair", "deleted with its last entry", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return sv == nil })

	// An expired identity lease is collected; a lease without the identity label is not.
	fakeLease("apiserver-expired", 1, time.Now().Add(-time.Minute))
	if _, err := leases.Create(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "not-an-identity"},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptrTo(int32(1)), RenewTime: &metav1.MicroTime{Time: time.Now().Add(-time.Minute)}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := svPoll(t, 10*time.Second, func() (bool, error) {
		_, err := leases.Get(t.Context(), "apiserver-expired", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); !ok {
		t.Error("an expired identity lease was not collected")
	}
	if _, err := leases.Get(t.Context(), "not-an-identity", metav1.GetOptions{}); err != nil {
		t.Errorf("a lease without the identity label: %v", err)
	}
}

// A rolling upgrade of three servers from binary N-1 to N: for every resource whose
// storage version differs between the releases, agreement is lost while the servers are
// mixed and regained once all are upgraded; the time from the last server being ready
// to agreement is measured.
func TestStorageVersionRollingUpgrade(t *testing.T) {
	t.Parallel()
	changed, oldV, newV := svUpgradeDiffs(t)
	c := harness.Start(t, 3, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Compatibility.BinaryVersion = oldV }))
	cs := svClient(t, c.Servers[0].Config())
	ids := svIDs(c.Servers...)
	for gr, v := range changed {
		svWait(t, cs, wire.StorageVersionName(gr), "agreement on "+v[0], func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
			return svAgreeOn(sv, v[0], ids...)
		})
	}
	for i, s := range c.Servers {
		s.Options.Compatibility.BinaryVersion = newV
		s.Restart(t)
		ready := time.Now()
		cs = svClient(t, s.Config())
		for gr, v := range changed {
			name := wire.StorageVersionName(gr)
			if i < len(c.Servers)-1 {
				sv, _ := svWait(t, cs, name, "disagreement", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
					return sv != nil && len(sv.Status.StorageVersions) == 3 && sv.Status.CommonEncodingVersion == nil
				})
				if e := svEntry(sv, s.ServerID); e == nil || e.EncodingVersion != v[1] {
					t.Errorf("%s: upgraded server reports %+v, want %s", name, e, v[1])
				}
				if cond := sv.Status.Conditions; len(cond) != 1 || cond[0].Status != "False" || cond[0].Reason != "CommonEncodingVersionUnset" || cond[0].Message != "Common encoding version unset" {
					t.Errorf("%s while mixed: conditions %+v", name, cond)
				}
				continue
			}
			_, took := svWait(t, cs, name, "agreement on "+v[1], func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
				return svAgreeOn(sv, v[1], ids...)
			})
			t.Logf("%s: agreement on %s %v after the last server was ready (%v since)", name, v[1], took, time.Since(ready))
		}
	}
}

// svUpgradeDiffs returns the resources whose storage version differs between binary
// N-1 and N of the built-in catalog (old and new version for each), and the
// --binary-version values of N-1 and N.
func svUpgradeDiffs(t testing.TB) (map[schema.GroupResource][2]string, string, string) {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	n := cat.BinaryVersion()
	oldV, newV := fmt.Sprintf("%d.%d", n.Major(), n.Minor()-1), fmt.Sprintf("%d.%d", n.Major(), n.Minor())
	oldC, err := (&compatibility.Options{BinaryVersion: oldV}).Complete(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	newC, err := (&compatibility.Options{}).Complete(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[schema.GroupResource][2]string{}
	for _, r := range cat.Resources() {
		gr := r.GroupResource()
		o, ok1 := oldC.StorageVersion(gr)
		nv, ok2 := newC.StorageVersion(gr)
		if ok1 && ok2 && o != nv {
			out[gr] = [2]string{schema.GroupVersion{Group: gr.Group, Version: o}.String(), schema.GroupVersion{Group: gr.Group, Version: nv}.String()}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no resource changes storage version from %s to %s", oldV, newV)
	}
	return out, oldV, "" // "": the catalog's own binary version, N
}

// A server killed with SIGKILL leaves its entries and lease behind; the garbage
// collector removes them once its identity lease expires: within the lease duration
// (plus the collector's reaction) of the kill.
func TestStorageVersionCrash(t *testing.T) {
	t.Parallel()
	// Long enough for a helper process starved by a loaded machine to renew its lease
	// while it starts (a lapse then has it register its entries again, and its start
	// waits on that).
	const lease = 5 * time.Second
	c := harness.Start(t, 1, svLeases(lease, 250*time.Millisecond))
	cs := svClient(t, c.Servers[0].Config())
	h := startHelper(t, c, svHelperOptions{LeaseDuration: lease, LeaseRenew: 250 * time.Millisecond})
	svWait(t, cs, "core.configmaps", "the helper's entry", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return svEntry(sv, h.ID) != nil })
	h.kill()
	// The lease can be judged expired from its last renewal on; a starved helper may
	// have renewed it well before the kill. (Already collected: nothing to bound.)
	var expires time.Time
	if l, err := cs.CoordinationV1().Leases("kube-system").Get(t.Context(), h.ID, metav1.GetOptions{}); err == nil && l.Spec.RenewTime != nil {
		expires = l.Spec.RenewTime.Add(lease)
	}
	killed := time.Now()
	svWaitCollected(t, cs, svNames(c.Servers[0]), h.ID)
	collected := time.Now()
	t.Logf("crashed server's entries and lease collected %v after SIGKILL (lease duration %v)", collected.Sub(killed), lease)
	// Never before the lease could have expired. (How soon after is measured, not
	// asserted: a loaded machine only delays it.)
	if collected.Before(expires) {
		t.Errorf("collected by %v, before the lease could have expired at %v", collected, expires)
	}
	sv, _ := svGet(t.Context(), cs, "core.configmaps")
	if !svAgreeOn(sv, "v1", c.Servers[0].ServerID) {
		t.Errorf("core.configmaps after collection: %s", svDump(sv))
	}
}

// A server that crashed and comes back (same ID) no longer serving a resource withdraws
// the entry its previous run left for it.
func TestStorageVersionStopsServing(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, svLeases(5*time.Second, 250*time.Millisecond))
	cs := svClient(t, c.Servers[0].Config())
	port := ports.Free(t)
	dir := t.TempDir()
	h := startHelper(t, c, svHelperOptions{DataDir: dir, Port: port, LeaseDuration: 5 * time.Second, LeaseRenew: 250 * time.Millisecond})
	svWait(t, cs, "batch.cronjobs", "the helper's entry", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return svEntry(sv, h.ID) != nil })
	h.kill()
	again := startHelper(t, c, svHelperOptions{DataDir: dir, Port: port, LeaseDuration: 5 * time.Second, LeaseRenew: 250 * time.Millisecond,
		RuntimeConfig: []string{"batch/v1=false"}})
	if again.ID != h.ID {
		t.Fatalf("the restarted server has ID %s, want %s", again.ID, h.ID)
	}
	sv, took := svWait(t, cs, "batch.cronjobs", "the stale entry withdrawn", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
		return svEntry(sv, h.ID) == nil
	})
	t.Logf("stale entry withdrawn %v after the restart", took)
	if svEntry(sv, c.Servers[0].ServerID) == nil {
		t.Errorf("the other server's entry went too: %s", svDump(sv))
	}
	if sv, _ := svGet(t.Context(), cs, "core.configmaps"); svEntry(sv, h.ID) == nil {
		t.Errorf("the restarted server's configmaps entry is missing: %s", svDump(sv))
	}
}

// A server cut off from etcd for longer than its lease: its lease and entries are
// collected meanwhile, it refuses writes once its lease has expired, and when the
// network heals it recreates its lease (same name, same holder) and registers again.
func TestStorageVersionPartition(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	var proxy *tcpgate.Gate
	c := harness.Start(t, 3, svLeases(lease, 250*time.Millisecond), harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 2 {
			proxy = tcpgate.New(t, o.Etcd.Endpoints...)
			o.Etcd.Endpoints = []string{proxy.URL()}
		}
	}))
	a, cut := c.Servers[0], c.Servers[2]
	cs := svClient(t, a.Config())
	leases := cs.CoordinationV1().Leases("kube-system")
	before, err := leases.Get(t.Context(), cut.ServerID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svWait(t, cs, "core.configmaps", "three entries", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return len(svEncodings(sv)) == 3 })

	proxy.Cut()
	cutAt := time.Now()
	svWaitCollected(t, cs, svNames(a), cut.ServerID)
	t.Logf("cut-off server collected %v after the partition began", time.Since(cutAt))
	time.Sleep(time.Until(cutAt.Add(lease + 200*time.Millisecond)))
	code, st, _, body := svHTTP(t, cut.Config(), http.MethodPost, "/api/v1/namespaces/default/configmaps",
		map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "during"}})
	if code != http.StatusServiceUnavailable || st == nil || !strings.Contains(st.Message, "identity lease lapsed") {
		t.Errorf("a write to the cut-off server after its lease expired: %d %s", code, body)
	}

	proxy.Heal()
	healed := time.Now()
	// The server reconnects (etcd's client tries again within 5 s), recreates its lease
	// and registers its entries one resource after the other: waited for while the
	// entries come back.
	waitUnstalled(t, "the cut-off server to recreate its lease and register again", func() (bool, string, error) {
		list, err := cs.InternalV1alpha1().StorageVersions().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		registered, configmaps := 0, false
		for i := range list.Items {
			if svEntry(&list.Items[i], cut.ServerID) != nil {
				registered++
				configmaps = configmaps || list.Items[i].Name == "core.configmaps"
			}
		}
		l, lerr := leases.Get(t.Context(), cut.ServerID, metav1.GetOptions{})
		recreated := lerr == nil && l.UID != before.UID
		return recreated && configmaps, fmt.Sprintf("lease recreated: %v, entries registered: %d", recreated, registered), nil
	})
	t.Logf("lease recreated and entries registered %v after the network healed", time.Since(healed))
	after, err := leases.Get(t.Context(), cut.ServerID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *after.Spec.HolderIdentity != *before.Spec.HolderIdentity {
		t.Errorf("holder %s after the partition, want %s (same process)", *after.Spec.HolderIdentity, *before.Spec.HolderIdentity)
	}
	for name := range map[string]bool{"core.configmaps": true, "coordination.k8s.io.leases": true, "batch.cronjobs": true} {
		svWait(t, cs, name, "three entries again", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return len(svEncodings(sv)) == 3 })
	}
	if _, ok := svPoll(t, 10*time.Second, func() (bool, error) {
		code, _, _, _ := svHTTP(t, cut.Config(), http.MethodPost, "/api/v1/namespaces/default/configmaps",
			map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "after"}})
		return code == http.StatusCreated, nil
	}); !ok {
		t.Error("the server does not accept writes after the partition")
	}
}

// The servers keep their entries true by watching: an entry removed or altered by
// another writer, the whole object deleted, or the identity lease deleted, and the
// server has registered again (the time it takes is logged). A graceful shutdown removes the server's
// entries and lease before it exits.
func TestStorageVersionKeptTrue(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, svLeases(10*time.Second, time.Second))
	s0, s1 := c.Servers[0], c.Servers[1]
	loop := svClient(t, s0.LoopbackConfig())
	svs := loop.InternalV1alpha1().StorageVersions()
	ids := svIDs(s0, s1)
	name := "core.configmaps"
	svWait(t, loop, name, "both entries", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return svAgreeOn(sv, "v1", ids...) })
	restored := func(what string) {
		t.Helper()
		_, took := svWait(t, loop, name, "restored after "+what, func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
			e := svEntry(sv, s1.ServerID)
			return svAgreeOn(sv, "v1", ids...) && e != nil && slices.Equal(e.ServedVersions, []string{"v1"})
		})
		t.Logf("%s: restored in %v", what, took)
	}
	edit := func(f func(*apiserverinternalv1alpha1.StorageVersion)) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sv, err := svs.Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			f(sv)
			_, err = svs.UpdateStatus(t.Context(), sv, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	edit(func(sv *apiserverinternalv1alpha1.StorageVersion) {
		var kept []apiserverinternalv1alpha1.ServerStorageVersion
		for _, e := range sv.Status.StorageVersions {
			if e.APIServerID != s1.ServerID {
				kept = append(kept, e)
			}
		}
		sv.Status.StorageVersions = kept
	})
	restored("its entry removed")
	edit(func(sv *apiserverinternalv1alpha1.StorageVersion) { svEntry(sv, s1.ServerID).ServedVersions = nil })
	restored("its entry altered")
	if err := svs.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restored("the object deleted")

	leases := svClient(t, s0.Config()).CoordinationV1().Leases("kube-system")
	old, err := leases.Get(t.Context(), s1.ServerID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := leases.Delete(t.Context(), s1.ServerID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took, ok := svPoll(t, 20*time.Second, func() (bool, error) {
		l, err := leases.Get(t.Context(), s1.ServerID, metav1.GetOptions{})
		return err == nil && l.UID != old.UID, nil
	})
	if !ok {
		t.Fatalf("deleted identity lease not recreated after %v", took)
	}
	t.Logf("identity lease recreated in %v", took)
	svWait(t, loop, name, "entries intact", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return svAgreeOn(sv, "v1", ids...) })
	// The server re-checks every entry before it reopens writes (a 503 with Retry-After
	// meanwhile, which clients retry).
	var lastCode int
	var lastBody string
	took, ok = svPoll(t, 20*time.Second, func() (bool, error) {
		lastCode, _, _, lastBody = svHTTP(t, s1.Config(), http.MethodPost, "/api/v1/namespaces/default/configmaps",
			map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "after-lease"}})
		return lastCode == http.StatusCreated, nil
	})
	if !ok {
		t.Errorf("write after the lease was recreated: %d %s", lastCode, lastBody)
	}
	t.Logf("writes accepted again %v after the lease was recreated", took)

	// Graceful shutdown: entries and lease gone when Stop returns.
	s1.Stop(t)
	for _, n := range svNames(s0) {
		if sv, err := svGet(t.Context(), loop, n); err != nil || svEntry(sv, s1.ServerID) != nil || !svAgreeOn(sv, svEntry(sv, s0.ServerID).EncodingVersion, s0.ServerID) {
			t.Errorf("%s after a graceful shutdown: %s, %v", n, svDump(sv), err)
		}
	}
	if _, err := leases.Get(t.Context(), s1.ServerID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("identity lease after a graceful shutdown: %v", err)
	}
}

// Custom resources: the StorageVersion of a CRD is owned by it, reports every version
// as decodable and the storage version as encoding; ten storage flips under concurrent
// writers on three servers converge, and no custom resource is ever written in a
// version its server did not report at that moment (checked against etcd's history);
// a second CRD is not held up; deleting the CRD deletes its StorageVersion.
func TestStorageVersionCustomResources(t *testing.T) {
	t.Parallel()
	// The writers' label names the server that wrote each object, which a storage
	// migration's rewrite (done by the migration leader) would belie: no migrations here.
	c := harness.Start(t, 3, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.DisableStorageMigration = true }))
	cs := svClient(t, c.Servers[0].Config())
	crds := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions()
	ids := svIDs(c.Servers...)
	crd, err := crds.Create(t.Context(), svCRD("flips", "v1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "example.com.flips"
	sv, _ := svWait(t, cs, name, "every server on v1", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
		return svAgreeOn(sv, "example.com/v1", ids...)
	})
	if refs := sv.OwnerReferences; len(refs) != 1 || refs[0].UID != crd.UID || refs[0].Kind != "CustomResourceDefinition" || refs[0].Name != crd.Name || refs[0].APIVersion != "apiextensions.k8s.io/v1" {
		t.Errorf("owner references %+v, want the CRD (uid %s)", sv.OwnerReferences, crd.UID)
	}

	// Writers on every server, then ten flips. etcd's history is followed from the
	// StorageVersion as it stands now.
	svKey := "/registry/internal.apiserver.k8s.io/storageversions/" + name
	start, err := c.EtcdClient.Get(t.Context(), svKey)
	if err != nil || len(start.Kvs) != 1 {
		t.Fatalf("reading %s: %v", svKey, err)
	}
	var initial apiserverinternalv1alpha1.StorageVersion
	if err := json.Unmarshal(start.Kvs[0].Value, &initial); err != nil {
		t.Fatal(err)
	}
	history := c.EtcdClient.Watch(clientv3.WithRequireLeader(t.Context()), "/registry/", clientv3.WithPrefix(), clientv3.WithRev(start.Header.Revision+1))
	stop := make(chan struct{})
	stopWriters := sync.OnceFunc(func() { close(stop) })
	var wg sync.WaitGroup
	// On a failure too, the writers stop before the servers do (cleanups run last
	// registered first), not failing the test once it has ended.
	t.Cleanup(func() { stopWriters(); wg.Wait() })
	var writes, failures atomic.Int64
	for i, s := range c.Servers {
		dyn := s.Dynamic(t).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "flips"}).Namespace("default")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Flip", "spec": map[string]interface{}{"n": int64(n)}}}
				obj.SetName(fmt.Sprintf("w%d-%d", i, n%20))
				obj.SetLabels(map[string]string{"writer": fmt.Sprint(i)})
				var err error
				if n < 20 {
					_, err = dyn.Create(context.Background(), obj, metav1.CreateOptions{})
				} else {
					_, err = dyn.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"n":%d}}`, n)), metav1.PatchOptions{})
				}
				writes.Add(1)
				if err != nil {
					failures.Add(1)
					t.Errorf("writer %d: %v", i, err)
					return
				}
			}
		}()
	}
	versions := []string{"v1"}
	for k := 2; k <= 11; k++ {
		versions = append(versions, fmt.Sprintf("v%d", k))
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			svSetVersions(cur, versions...)
			_, err = crds.Update(t.Context(), cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if k == 6 {
			// One flip settles: every server encodes v6 before the writes go on, so
			// that the history holds a third version however slow the machine is.
			svWait(t, cs, name, "every server on v6", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
				return svAgreeOn(sv, "example.com/v6", ids...)
			})
		}
		writesAfter(t, &writes, &failures, "the flip to v"+fmt.Sprint(k))
	}
	var decodable []string
	for k := 11; k >= 1; k-- {
		decodable = append(decodable, fmt.Sprintf("example.com/v%d", k))
	}
	sv, took := svWait(t, cs, name, "every server on v11", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
		return svAgreeOn(sv, "example.com/v11", ids...)
	})
	t.Logf("agreement on v11 %v after the last flip", took)
	for _, id := range ids {
		if e := svEntry(sv, id); !slices.Equal(e.DecodableVersions, decodable) || !slices.Equal(e.ServedVersions, decodable) {
			t.Errorf("entry of %s: %+v, want decodable and served %v", id, e, decodable)
		}
	}
	writesAfter(t, &writes, &failures, "every server's move to v11")
	stopWriters()
	wg.Wait()

	// Replay etcd's history: every custom resource write is in the encoding version its
	// server reported at that revision.
	end, err := c.EtcdClient.Get(t.Context(), "/registry/probe")
	if err != nil {
		t.Fatal(err)
	}
	reported := svEncodings(&initial)
	crWrites, bad := 0, 0
	versionsSeen := map[string]int{}
	for resp := range history {
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		done := false
		for _, ev := range resp.Events {
			key := string(ev.Kv.Key)
			switch {
			case key == svKey && ev.Type == clientv3.EventTypePut:
				var obj apiserverinternalv1alpha1.StorageVersion
				if err := json.Unmarshal(ev.Kv.Value, &obj); err != nil {
					t.Fatal(err)
				}
				reported = svEncodings(&obj)
			case key == svKey:
				reported = map[string]string{}
			case strings.HasPrefix(key, "/registry/example.com/flips/") && ev.Type == clientv3.EventTypePut:
				var obj unstructured.Unstructured
				if err := json.Unmarshal(ev.Kv.Value, &obj.Object); err != nil {
					t.Fatal(err)
				}
				var writer int
				fmt.Sscan(obj.GetLabels()["writer"], &writer)
				crWrites++
				versionsSeen[obj.GetAPIVersion()]++
				if id := ids[writer]; reported[id] != obj.GetAPIVersion() {
					bad++
					if bad <= 5 {
						t.Errorf("%s written by server %d in %s at revision %d, while it reported %q", key, writer, obj.GetAPIVersion(), ev.Kv.ModRevision, reported[id])
					}
				}
			}
			done = done || ev.Kv.ModRevision >= end.Header.Revision
		}
		if done {
			break
		}
	}
	t.Logf("%d writes attempted, %d custom resource writes in etcd, by version %v; %d in an unreported version", writes.Load(), crWrites, versionsSeen, bad)
	if crWrites < 20 || len(versionsSeen) < 3 {
		t.Errorf("too few writes to say anything: %d over %d versions", crWrites, len(versionsSeen))
	}

	// A second CRD is served while the first one's history is large.
	if _, err := crds.Create(t.Context(), svCRD("others", "v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svWait(t, cs, "example.com.others", "registered", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
		return svAgreeOn(sv, "example.com/v1", ids...)
	})

	if err := crds.Delete(t.Context(), crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The definition's clean-up deletes its objects before the entries go, a step that
	// is slow on a loaded machine: the objects left count as movement.
	waitUnstalled(t, "StorageVersion "+name+" deleted with its CRD", func() (bool, string, error) {
		sv, err := svGet(t.Context(), cs, name)
		if err != nil || sv == nil {
			return sv == nil, "", err
		}
		left, err := c.EtcdClient.Get(t.Context(), "/registry/example.com/flips/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("%d objects left; resourceVersion %s: %s", left.Count, sv.ResourceVersion, svDump(sv)), nil
	})
}

// Enablement: StorageVersionAPI needs APIServerIdentity; disabled, a server neither
// serves the API nor holds writes, and the objects stay; enabled again, it registers
// and the objects are right.
func TestStorageVersionEnablement(t *testing.T) {
	t.Parallel()
	o := controlplane.NewOptions()
	o.Compatibility.FeatureGates = []string{"APIServerIdentity=false", "StorageVersionAPI=true"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "StorageVersionAPI") || !strings.Contains(err.Error(), "APIServerIdentity") {
		t.Errorf("StorageVersionAPI without APIServerIdentity: %v", err)
	}
	o = controlplane.NewOptions()
	o.Compatibility.RuntimeConfig = []string{"internal.apiserver.k8s.io/v1alpha1=false"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "StorageVersionAPI") {
		t.Errorf("StorageVersionAPI without its API: %v", err)
	}

	c := harness.Start(t, 2)
	a, b := c.Servers[0], c.Servers[1]
	cs := svClient(t, a.Config())
	ids := svIDs(a, b)
	svWait(t, cs, "core.configmaps", "both entries", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return svAgreeOn(sv, "v1", ids...) })

	b.Options.Compatibility.FeatureGates = []string{"StorageVersionAPI=false"}
	b.Restart(t)
	if code, _, _, _ := svHTTP(t, b.Config(), http.MethodGet, svPath(""), nil); code != http.StatusNotFound {
		t.Errorf("a server with StorageVersionAPI off serves storageversions: %d", code)
	}
	if code, _, _, body := svHTTP(t, b.Config(), http.MethodGet, "/readyz?verbose", nil); code != http.StatusOK || strings.Contains(body, storageversion.UpdaterHook) {
		t.Errorf("readyz with StorageVersionAPI off: %d %s", code, body)
	}
	if sv, _ := svGet(t.Context(), cs, "core.configmaps"); !svAgreeOn(sv, "v1", a.ServerID) {
		t.Errorf("objects with one server disabled: %s", svDump(sv))
	}
	if _, err := b.Clientset(t).CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("write on a server with StorageVersionAPI off: %v", err)
	}
	_, _, _, metrics := svHTTP(t, b.Config(), http.MethodGet, "/metrics", nil)
	if strings.Contains(metrics, "apiserver_storage_version_barrier_rejections_total") {
		t.Error("a server with StorageVersionAPI off has a barrier")
	}

	// Both disabled: nothing registers; what is in etcd stays in etcd.
	a.Options.Compatibility.FeatureGates = []string{"StorageVersionAPI=false"}
	a.Restart(t)
	keys, err := c.EtcdClient.Get(t.Context(), "/registry/internal.apiserver.k8s.io/storageversions/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d StorageVersions in etcd with the API disabled everywhere", keys.Count)
	leftover := `{"apiVersion":"internal.apiserver.k8s.io/v1alpha1","kind":"StorageVersion","metadata":{"name":"core.configmaps","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{},"status":{"storageVersions":[{"apiServerID":"apiserver-long-gone","encodingVersion":"v1","decodableVersions":["v1"]}],"commonEncodingVersion":"v1"}}`
	if _, err := c.EtcdClient.Put(t.Context(), "/registry/internal.apiserver.k8s.io/storageversions/core.configmaps", leftover); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if resp, err := c.EtcdClient.Get(t.Context(), "/registry/internal.apiserver.k8s.io/storageversions/core.configmaps"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != leftover {
		t.Errorf("an object changed while the API is disabled everywhere: %v", err)
	}

	// Enabled again: both register, the stale entry is collected, the objects agree.
	for _, s := range []*harness.Server{a, b} {
		s.Options.Compatibility.FeatureGates = nil
		s.Restart(t)
	}
	cs = svClient(t, a.Config())
	for _, name := range svNames(a) {
		svWait(t, cs, name, "both servers and nobody else", func(sv *apiserverinternalv1alpha1.StorageVersion) bool {
			return sv != nil && len(sv.Status.StorageVersions) == 2 && svEntry(sv, a.ServerID) != nil && svEntry(sv, b.ServerID) != nil &&
				sv.Status.CommonEncodingVersion != nil
		})
	}
}

// Time from the last server of a rolling upgrade (three servers, binary N-1 to N) being
// ready to every changed resource's StorageVersion agreeing on N's version; also the
// time from the last server's stop. Upstream: a 1-minute SLO for the update, re-run
// every 10 minutes, stale entries kept for 1-2 hours (the unset common version with
// them). Goal: under 1 s.
func BenchmarkAgreementAfterRollingUpgrade(b *testing.B) {
	changed, oldV, newV := svUpgradeDiffs(b)
	var afterReady, afterStop time.Duration
	for range b.N {
		c := harness.Start(b, 3, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Compatibility.BinaryVersion = oldV }))
		cs := svClient(b, c.Servers[0].Config())
		ids := svIDs(c.Servers...)
		var stopped, ready time.Time
		for _, s := range c.Servers {
			s.Options.Compatibility.BinaryVersion = newV
			stopped = time.Now()
			s.Restart(b)
			ready = time.Now()
		}
		_, ok := svPoll(b, 20*time.Second, func() (bool, error) {
			for gr, v := range changed {
				sv, err := svGet(context.Background(), cs, wire.StorageVersionName(gr))
				if err != nil || !svAgreeOn(sv, v[1], ids...) {
					return false, err
				}
			}
			return true, nil
		})
		if !ok {
			b.Fatal("no agreement after the upgrade")
		}
		afterReady += time.Since(ready)
		afterStop += time.Since(stopped)
		for _, s := range c.Servers {
			s.Stop(b)
		}
	}
	b.ReportMetric(afterReady.Seconds()/float64(b.N), "s-after-ready")
	b.ReportMetric(afterStop.Seconds()/float64(b.N), "s-after-last-stop")
}

// Time from SIGKILL of a server to its StorageVersion entries and identity lease being
// collected, with a 2 s identity lease (the default is 30 s; collection follows the
// lease, so it scales with it). Upstream: 1-2 hours (3600 s leases, an hourly
// collector). Goal: under lease duration + 1 s.
func BenchmarkStaleEntryRemovalAfterCrash(b *testing.B) {
	const lease = 2 * time.Second
	c := harness.Start(b, 1, svLeases(lease, 250*time.Millisecond))
	cs := svClient(b, c.Servers[0].Config())
	var total time.Duration
	for range b.N {
		h := startHelper(b, c, svHelperOptions{LeaseDuration: lease, LeaseRenew: 250 * time.Millisecond})
		svWait(b, cs, "core.configmaps", "the helper's entry", func(sv *apiserverinternalv1alpha1.StorageVersion) bool { return svEntry(sv, h.ID) != nil })
		h.kill()
		took, ok := svPoll(b, 20*time.Second, func() (bool, error) {
			for _, name := range svNames(c.Servers[0]) {
				sv, err := svGet(context.Background(), cs, name)
				if err != nil || svEntry(sv, h.ID) != nil {
					return false, err
				}
			}
			_, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), h.ID, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if !ok {
			b.Fatal("the crashed server's entries were not collected")
		}
		total += took
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-removal")
	b.ReportMetric(lease.Seconds(), "s-lease")
}

// Helpers of the storage version and identity tests.

// svLeases gives every server of a cluster short identity leases.
func svLeases(duration, renew time.Duration) harness.Option {
	return harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.IdentityLease.LeaseDuration, o.IdentityLease.RenewInterval = duration, renew
	})
}

// svClient returns a typed clientset for cfg, without client-side rate limits.
func svClient(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// svGet reads a StorageVersion; nil when there is none.
func svGet(ctx context.Context, cs kubernetes.Interface, name string) (*apiserverinternalv1alpha1.StorageVersion, error) {
	sv, err := cs.InternalV1alpha1().StorageVersions().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return sv, err
}

// svWaitCollected waits until no StorageVersion of names holds an entry of server id
// and its identity lease is gone, for as long as the collector removes entries: it
// fails when none has gone for 20 s.
func svWaitCollected(t testing.TB, cs kubernetes.Interface, names map[schema.GroupResource]string, id string) {
	t.Helper()
	waitUnstalled(t, "server "+id+"'s entries and lease to be collected", func() (bool, string, error) {
		held := 0
		for _, name := range names {
			sv, err := svGet(t.Context(), cs, name)
			if err != nil {
				return false, "", err
			}
			if svEntry(sv, id) != nil {
				held++
			}
		}
		_, err := cs.CoordinationV1().Leases("kube-system").Get(t.Context(), id, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		leaseGone := apierrors.IsNotFound(err)
		return held == 0 && leaseGone, fmt.Sprintf("%d entries held, lease gone: %v", held, leaseGone), nil
	})
}

// svPoll polls cond every 10 ms for up to timeout and reports whether it held, and
// when (measured from the call).
func svPoll(t testing.TB, timeout time.Duration, cond func() (bool, error)) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return time.Since(start), true
		}
		if time.Since(start) > timeout {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// svWait waits until the StorageVersion name satisfies cond (which gets nil when the
// object does not exist), and returns it and how long that took. It fails when the
// object has not changed for 20 s (each server's write to it is a step towards cond).
func svWait(t testing.TB, cs kubernetes.Interface, name, what string, cond func(*apiserverinternalv1alpha1.StorageVersion) bool) (*apiserverinternalv1alpha1.StorageVersion, time.Duration) {
	t.Helper()
	var last *apiserverinternalv1alpha1.StorageVersion
	start := time.Now()
	waitUnstalled(t, fmt.Sprintf("StorageVersion %s: %s", name, what), func() (bool, string, error) {
		sv, err := svGet(context.Background(), cs, name)
		if err != nil {
			return false, "", err
		}
		last = sv
		if cond(sv) {
			return true, "", nil
		}
		mark := "<none>"
		if sv != nil {
			mark = "resourceVersion " + sv.ResourceVersion + ": " + svDump(sv)
		}
		return false, mark, nil
	})
	return last, time.Since(start)
}

func svDump(sv *apiserverinternalv1alpha1.StorageVersion) string {
	if sv == nil {
		return "<none>"
	}
	b, _ := json.Marshal(sv.Status)
	return string(b)
}

// svEntry returns the entry of server id, or nil.
func svEntry(sv *apiserverinternalv1alpha1.StorageVersion, id string) *apiserverinternalv1alpha1.ServerStorageVersion {
	if sv == nil {
		return nil
	}
	for i := range sv.Status.StorageVersions {
		if sv.Status.StorageVersions[i].APIServerID == id {
			return &sv.Status.StorageVersions[i]
		}
	}
	return nil
}

// svEncodings returns server ID → encoding version.
func svEncodings(sv *apiserverinternalv1alpha1.StorageVersion) map[string]string {
	out := map[string]string{}
	if sv != nil {
		for _, e := range sv.Status.StorageVersions {
			out[e.APIServerID] = e.EncodingVersion
		}
	}
	return out
}

// svAgreeOn reports whether the servers ids (and only they) report encoding and
// commonEncodingVersion says so.
func svAgreeOn(sv *apiserverinternalv1alpha1.StorageVersion, encoding string, ids ...string) bool {
	if sv == nil || len(sv.Status.StorageVersions) != len(ids) || sv.Status.CommonEncodingVersion == nil || *sv.Status.CommonEncodingVersion != encoding {
		return false
	}
	for _, id := range ids {
		if e := svEntry(sv, id); e == nil || e.EncodingVersion != encoding {
			return false
		}
	}
	return true
}

// svIDs returns the IDs of servers.
func svIDs(servers ...*harness.Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.ServerID
	}
	return out
}

// svHTTP sends one request with cfg's credentials and no retries (client-go would
// retry a 503 with Retry-After), and returns the code, the Status if the body is one,
// the headers and the body.
func svHTTP(t testing.TB, cfg *rest.Config, method, path string, body interface{}) (int, *metav1.Status, http.Header, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, cfg.Host+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st *metav1.Status
	var probe metav1.Status
	if json.Unmarshal(b, &probe) == nil && probe.Kind == "Status" {
		st = &probe
	}
	return resp.StatusCode, st, resp.Header, string(b)
}

// svHTTPAccept sends a request without a body, asking for accept.
func svHTTPAccept(t testing.TB, cfg *rest.Config, method, path, accept string) (int, http.Header, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// svPath is the REST path of a StorageVersion (or the collection, name "").
func svPath(name string) string {
	p := "/apis/internal.apiserver.k8s.io/v1alpha1/storageversions"
	if name != "" {
		p += "/" + name
	}
	return p
}

// svNames returns the StorageVersion names of the built-in resources s serves.
func svNames(s *harness.Server) map[schema.GroupResource]string {
	out := map[schema.GroupResource]string{}
	for _, res := range s.Registry.Resources() {
		if res.Owner == nil && res.StoresOwn() {
			out[res.GroupResource()] = wire.StorageVersionName(res.GroupResource())
		}
	}
	return out
}

// svEvent is an events.k8s.io/v1 Event named name, in default.
func svEvent(name string) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "events.k8s.io/v1", "kind": "Event",
		"metadata":  map[string]interface{}{"name": name, "namespace": "default"},
		"eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/test", "reportingInstance": "i-1",
		"action": "Held", "reason": "Held", "type": "Normal", "regarding": map[string]interface{}{"kind": "Pod", "name": "p", "namespace": "default"}}
}

// svHelperEnv carries the options of a server run in a child process (the test binary
// itself, running TestStorageVersionHelperProcess), so that it can be killed with
// SIGKILL: a crash, with no graceful shutdown.
const svHelperEnv = "CONCORD_SV_HELPER_OPTIONS"

type svHelperOptions struct {
	DataDir       string
	Port          int
	Etcd          []string
	LeaseDuration time.Duration
	LeaseRenew    time.Duration
	RuntimeConfig []string
	ReadyFile     string
}

// svHelper is a server in a child process.
type svHelper struct {
	cmd *exec.Cmd
	out *logbuf.Buffer
	// ID and URL are the server's, once ready.
	ID, URL string
	done    chan struct{}
}

// startHelper starts a server in a child process sharing c's etcd and waits until it
// serves. opts.DataDir, Etcd and ReadyFile are filled in when empty.
func startHelper(t testing.TB, c *harness.Cluster, opts svHelperOptions) *svHelper {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if len(opts.Etcd) == 0 {
		opts.Etcd = c.Etcd.Endpoints()
	}
	opts.ReadyFile = filepath.Join(opts.DataDir, fmt.Sprintf("ready-%d", time.Now().UnixNano()))
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &svHelper{out: &logbuf.Buffer{}, done: make(chan struct{})}
	h.cmd = exec.Command(os.Args[0], "-test.run=^TestStorageVersionHelperProcess$", "-test.count=1", "-test.timeout=10m")
	h.cmd.Env = append(os.Environ(), svHelperEnv+"="+string(raw))
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(h.kill)
	// The helper is waited for as long as it logs or uses CPU.
	waitUnstalled(t, "the helper server to serve", func() (bool, string, error) {
		if b, err := os.ReadFile(opts.ReadyFile); err == nil && strings.Count(string(b), "\n") == 2 {
			lines := strings.Split(string(b), "\n")
			h.ID, h.URL = lines[0], lines[1]
			return true, "", nil
		}
		select {
		case <-h.done:
			return false, "", fmt.Errorf("the helper server exited before serving:\n%s", h.out.String())
		default:
		}
		return false, fmt.Sprintf("%d bytes of log, %d ticks of CPU", h.out.Len(), binary.CPUTicks(h.cmd.Process.Pid)), nil
	})
	return h
}

// kill sends SIGKILL and waits for the process to be gone.
func (h *svHelper) kill() {
	_ = h.cmd.Process.Kill()
	<-h.done
}

// TestStorageVersionHelperProcess is not a test: it is the body of the child processes
// startHelper runs, a server that stops only when killed.
func TestStorageVersionHelperProcess(t *testing.T) {
	t.Parallel()
	raw := os.Getenv(svHelperEnv)
	if raw == "" {
		t.Skip("the body of the crash tests' child process")
	}
	var h svHelperOptions
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatal(err)
	}
	o := controlplane.NewOptions()
	o.DataDir, o.Serving.SecurePort, o.Etcd.Endpoints = h.DataDir, h.Port, h.Etcd
	o.IdentityLease.LeaseDuration, o.IdentityLease.RenewInterval = h.LeaseDuration, h.LeaseRenew
	o.Compatibility.RuntimeConfig = h.RuntimeConfig
	inst, err := controlplane.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.ReadyFile+".tmp", []byte(inst.ServerID+"\n"+inst.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(h.ReadyFile+".tmp", h.ReadyFile); err != nil {
		t.Fatal(err)
	}
	select {}
}

// writesAfter waits until the writers have made six more writes (two rounds of the
// three) since what: writes paced by the writers' progress, not by the clock.
func writesAfter(t *testing.T, writes, failures *atomic.Int64, what string) {
	t.Helper()
	before := writes.Load()
	waitFor(t, "writes after "+what, func() (bool, error) {
		return writes.Load() >= before+6 || failures.Load() > 0, nil
	})
}
