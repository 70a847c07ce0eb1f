package controlplane

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"k8s.io/klog/v2"
)

// informersHook is kube-apiserver's post-start hook of the informers a server starts
// before it serves (here RBAC's and service accounts'), done when the controllers
// phase begins: they have synced by then.
const informersHook = "generic-apiserver-start-informers"

// healthChecks builds /healthz, /livez and /readyz with the checks of
// kube-apiserver's names that this server has, in kube-apiserver's order: ping, the
// log, etcd, then each feature's post-start hooks and checks; /readyz adds the
// informers' sync, the storage version barrier's writes and storage migration's
// definitions. It starts the log check's flushes.
func healthChecks(ctx context.Context, g *lifecycle.Group, c *core, fs *features, informers *health.PostStartHook) (*health.Endpoints, error) {
	etcdCheck := health.NamedCheck("etcd", func(r *http.Request) error {
		cctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		_, err := c.st.raw.CurrentRevision(cctx)
		return err
	})
	log := health.NewLog(klog.Flush, 0, 0)
	all := []health.Checker{health.Ping(), log, etcdCheck}
	for _, f := range feature.Present(fs.admission, feature.ChecksOnly{informers}, fs.flowControl, fs.crds, fs.namespaces,
		fs.identity, fs.storageVersions, fs.readiness, fs.rbac.Roles()) {
		all = append(all, f.Checks()...)
	}
	// kube-apiserver lists the system PriorityClasses' hook after the Service IP
	// repair controllers', before the kubernetes Service's.
	services := fs.services.Checks()
	all = append(all, slices.Insert(services, min(1, len(services)), fs.priorityClasses.Checks()...)...)
	for _, kms := range c.cr.encryption.HealthChecks() {
		all = append(all, kms)
	}
	all = append(all, fs.aggregator.Checks()...)
	checks := health.New(c.Metrics)
	for _, add := range []func(...health.Checker) error{checks.AddHealthz, checks.AddLivez, checks.AddReadyz} {
		if err := add(all...); err != nil {
			return nil, err
		}
	}
	readyOnly := slices.Concat([]health.Checker{c.Informers.Check(fs.admission.Synced)}, fs.storageVersions.ReadyChecks(),
		fs.migration.ReadyChecks())
	if err := checks.AddReadyz(readyOnly...); err != nil {
		return nil, err
	}
	return checks, g.Start(ctx, lifecycle.Component{Name: "log-flush", Run: log.Run})
}
