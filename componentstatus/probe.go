package componentstatus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/concordproject/concord/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/probe"
	httpprobe "k8s.io/kubernetes/pkg/probe/http"
)

// GroupResource is the resource this package serves.
var GroupResource = schema.GroupResource{Resource: "componentstatuses"}

// notFoundResource names the resource in a 404, singular as kube names it there.
var notFoundResource = schema.GroupResource{Resource: "componentstatus"}

// probeTimeout bounds each probe, as kube bounds it.
const probeTimeout = 20 * time.Second

// ErrEtcd wraps the failure of the etcd probe.
var ErrEtcd = errors.New("error getting data from etcd")

// Prober probes the components of one server.
type Prober struct {
	etcd   *clientv3.Client
	prefix string
	http   httpprobe.Prober
	// components are the probes by component name.
	components map[string]func(context.Context) (probe.Result, string, error)
}

// New returns the Prober of a server whose etcd is client, its keys under prefix.
func New(client *clientv3.Client, prefix string) *Prober {
	p := &Prober{etcd: client, prefix: prefix,
		// The components serve self-signed certificates: kube does not verify them.
		http: httpprobe.NewWithTLSConfig(&tls.Config{InsecureSkipVerify: true}, true)} //nolint:gosec // kube's probe of /healthz
	p.components = map[string]func(context.Context) (probe.Result, string, error){
		"controller-manager": p.healthz(&url.URL{Scheme: "https", Host: "127.0.0.1:10257", Path: "/healthz"}),
		"scheduler":          p.healthz(&url.URL{Scheme: "https", Host: "127.0.0.1:10259", Path: "/healthz"}),
		"etcd-0":             p.probeEtcd,
	}
	return p
}

// Configure makes res, the componentstatuses resource, computed by p.
func (p *Prober) Configure(res *registry.Resource) error {
	if res.Hooks == nil {
		res.Hooks = &registry.Hooks{}
	}
	res.Hooks.Compute = p.compute
	return nil
}

// compute probes the component named name, or every component for "", at once.
func (p *Prober) compute(ctx context.Context, name string) ([]*unstructured.Unstructured, error) {
	names := slices.Sorted(maps.Keys(p.components))
	if name != "" {
		if _, ok := p.components[name]; !ok {
			return nil, apierrors.NewNotFound(notFoundResource, name)
		}
		names = []string{name}
	}
	out := make([]*unstructured.Unstructured, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			result, message, err := p.components[n](ctx)
			out[i] = status(n, result, message, err)
		})
	}
	wg.Wait()
	return out, nil
}

// healthz returns the probe of the /healthz endpoint u. An endpoint that cannot be
// reached fails, its error as the message, as kube's prober says.
func (p *Prober) healthz(u *url.URL) func(context.Context) (probe.Result, string, error) {
	return func(ctx context.Context) (probe.Result, string, error) {
		req, err := httpprobe.NewProbeRequest(u, nil)
		if err != nil {
			return probe.Unknown, "", fmt.Errorf("failed to construct probe request: %w", err)
		}
		deadline, _ := ctx.Deadline()
		result, output, err := p.http.Probe(req.WithContext(ctx), time.Until(deadline))
		if err != nil {
			return probe.Unknown, "", err
		}
		return result, output, nil
	}
}

// probeEtcd reads the key kube's etcd prober reads.
func (p *Prober) probeEtcd(ctx context.Context) (probe.Result, string, error) {
	if _, err := p.etcd.Get(ctx, path.Join("/", strings.TrimPrefix(p.prefix, "/"), "health")); err != nil {
		return probe.Failure, "", fmt.Errorf("%w: %w", ErrEtcd, err)
	}
	return probe.Success, "ok", nil
}

// status is the ComponentStatus of component name whose probe answered result,
// message and err.
func status(name string, result probe.Result, message string, err error) *unstructured.Unstructured {
	healthy := "Unknown"
	switch result {
	case probe.Success:
		healthy = "True"
	case probe.Failure:
		healthy = "False"
	}
	condition := map[string]interface{}{"type": "Healthy", "status": healthy}
	if message != "" {
		condition["message"] = message
	}
	if err != nil {
		condition["error"] = err.Error()
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ComponentStatus",
		"metadata":   map[string]interface{}{"name": name},
		"conditions": []interface{}{condition},
	}}
}
