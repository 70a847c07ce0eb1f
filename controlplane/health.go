package controlplane

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"k8s.io/klog/v2"
)

// informersHook is kube-apiserver's post-start hook of the informers a server starts
// before it serves (here RBAC's and service accounts'), done when the controllers
// phase begins: they have synced by then.
const informersHook = "generic-apiserver-start-informers"

// InformerSyncCheck is the readyz check that fails while an in-process informer the
// server runs has not synced.
const InformerSyncCheck = "informer-sync"

// healthChecks builds /healthz, /livez and /readyz with the checks of
// kube-apiserver's names that this server has, in kube-apiserver's order: ping, the
// log, etcd, then each feature's post-start hooks and checks; /readyz adds the
// informers' sync, the storage version barrier's writes and storage migration's
// definitions. It starts the log check's flushes.
func healthChecks(ctx context.Context, g *lifecycle.Group, c *core, cr *credentials, fs *features, informers *health.PostStartHook) (*health.Endpoints, error) {
	etcdCheck := health.NamedCheck("etcd", func(r *http.Request) error {
		cctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		_, err := c.raw.CurrentRevision(cctx)
		return err
	})
	log := health.NewLog(klog.Flush, 0, 0)
	all := []health.Checker{health.Ping(), log, etcdCheck}
	for _, f := range present(fs.admission, checksOnly{informers}, fs.flowControl, fs.crds, fs.namespaces, fs.identity,
		fs.storageVersions, fs.readiness, fs.roles) {
		all = append(all, f.Checks()...)
	}
	// kube-apiserver lists the system PriorityClasses' hook after the Service IP
	// repair controllers', before the kubernetes Service's.
	services := fs.services.Checks()
	all = append(all, slices.Insert(services, min(1, len(services)), fs.priorityClasses.Checks()...)...)
	for _, kms := range cr.encryption.HealthChecks() {
		all = append(all, kms)
	}
	if fs.aggregator != nil {
		all = append(all, fs.aggregator.Checks()...)
	}
	checks := health.New(c.metrics)
	for _, add := range []func(...health.Checker) error{checks.AddHealthz, checks.AddLivez, checks.AddReadyz} {
		if err := add(all...); err != nil {
			return nil, err
		}
	}
	synced := health.NamedCheck(InformerSyncCheck, func(*http.Request) error {
		return errors.Join(c.informers.Synced(), fs.admission.Synced())
	})
	readyOnly := []health.Checker{synced}
	if svm := fs.storageVersions.Manager(); svm != nil {
		// Ready only while writes are accepted, not just once they were at start-up.
		readyOnly = append(readyOnly, svm.WritesCheck())
	}
	if fs.migration != nil {
		readyOnly = append(readyOnly, fs.migration.ReadyCheck())
	}
	if err := checks.AddReadyz(readyOnly...); err != nil {
		return nil, err
	}
	return checks, g.Start(ctx, lifecycle.Component{Name: "log-flush", Run: log.Run})
}

// checksOnly is a feature of checks alone, which another phase marks done.
type checksOnly []health.Checker

func (c checksOnly) Checks() []health.Checker                    { return c }
func (checksOnly) Start(context.Context, *lifecycle.Group) error { return nil }
