package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func get(t *testing.T, cfg *rest.Config, path string) (int, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(cfg.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// kubeHealthChecks are the checks kube-apiserver's /healthz, /livez and /readyz list,
// which Kubernetes' e2e spec "health handlers should contain necessary checks"
// requires (storage-readiness since WatchCacheInitializationPostStartHook is on by
// default, 1.36), each reported by the Concord component that does its job.
var kubeHealthChecks = []string{
	"ping", "log", "etcd",
	"poststarthook/start-apiserver-admission-initializer", "poststarthook/generic-apiserver-start-informers",
	"poststarthook/start-apiextensions-informers", "poststarthook/start-apiextensions-controllers",
	"poststarthook/crd-informer-synced", "poststarthook/bootstrap-controller",
	"poststarthook/start-system-namespaces-controller", "poststarthook/start-service-ip-repair-controllers",
	"poststarthook/scheduling/bootstrap-system-priority-classes",
	"poststarthook/start-cluster-authentication-info-controller", "poststarthook/start-kube-aggregator-informers",
	"poststarthook/apiservice-registration-controller", "poststarthook/apiservice-status-local-available-controller",
	"poststarthook/apiservice-status-remote-available-controller", "poststarthook/kube-apiserver-autoregistration",
	"autoregister-completion", "poststarthook/apiservice-openapi-controller", "poststarthook/storage-readiness",
}

func TestHealthVersionMetrics(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	cfg := c.Servers[0].Config()
	// autoregister-completion passes once the local APIServices' status is written,
	// which a started server may not have done yet.
	waitFor(t, "/readyz ok", func() (bool, error) {
		code, _ := get(t, cfg, "/readyz")
		return code == 200, nil
	})
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		want := kubeHealthChecks
		if path == "/readyz" {
			want = append(slices.Clone(want), "informer-sync", "poststarthook/start-kubernetes-service-cidr-controller")
		}
		code, body := get(t, cfg, path+"?verbose=1")
		for _, check := range want {
			if code != 200 || !slices.Contains(strings.Split(body, "\n"), "[+]"+check+" ok") {
				t.Fatalf("%s?verbose=1 lacks [+]%s ok: %d\n%s", path, check, code, body)
			}
		}
	}
	if code, body := get(t, cfg, "/readyz/etcd"); code != 200 || body != "ok" {
		t.Fatalf("/readyz/etcd: %d %q", code, body)
	}
	if code, _ := get(t, cfg, "/livez/nope"); code != 404 {
		t.Fatalf("/livez/nope: %d, want 404", code)
	}
	code, body := get(t, cfg, "/version")
	var info version.Info
	if code != 200 || json.Unmarshal([]byte(body), &info) != nil || info.Major != "1" || info.Minor == "" {
		t.Fatalf("/version: %d %s", code, body)
	}
	// Discovery through client-go agrees with /version.
	sv, err := c.Servers[0].Clientset(t).Discovery().ServerVersion()
	if err != nil || sv.GitVersion != info.GitVersion {
		t.Fatalf("ServerVersion: %v %v", sv, err)
	}
	if _, err := c.Servers[0].Clientset(t).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, cfg, "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/: %d %q", code, body)
	}
	code, body = get(t, cfg, "/metrics")
	for _, want := range []string{
		`apiserver_request_total{code="200",group="",resource="namespaces",subresource="",verb="list",version="v1"}`,
		`apiserver_request_duration_seconds_bucket{group="",resource="namespaces"`,
		`kubernetes_healthcheck{name="etcd",type="readyz"} 1`,
		`etcd_request_duration_seconds_bucket{operation="list",type="core/namespaces"`,
		`version_info{binary="1.37",component="kube",emulation="1.37",min_compat="1.36"} 1`,
		`kubernetes_feature_enabled{name="StorageVersionAPI",stage="BETA"} 1`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
}

func TestReadersMayReadButNotWrite(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, withTokens(t, "reader-token,reader,1001,\"dev,ops\"\n"),
		harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Serving.Profiling = false }))
	cfg := rest.CopyConfig(c.Servers[0].Config())
	cfg.BearerToken = "reader-token"
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("reader get without a grant: %v, want 403", err)
	}
	grantRead(t, c.Servers[0].Clientset(t), "reader", "", "namespaces")
	eventually(t, "reader gets once granted", func() error {
		_, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
		return err
	})
	_, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nope"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "reader" cannot create resource "configmaps"`) {
		t.Fatalf("reader create: %v, want 403 naming the user and verb", err)
	}
	if code, _ := get(t, cfg, "/api/v1/namespaces"); code != http.StatusOK {
		t.Fatalf("reader raw list: %d", code)
	}
	// Profiles are for administrators, and --profiling=false serves none.
	if code, body := get(t, cfg, "/debug/pprof/"); code != http.StatusForbidden || !strings.Contains(body, `User \"reader\" cannot get path \"/debug/pprof/\"`) {
		t.Fatalf("reader /debug/pprof/: %d %s, want 403", code, body)
	}
	if code, _ := get(t, c.Servers[0].Config(), "/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("admin /debug/pprof/ with --profiling=false: %d, want 404", code)
	}
}
