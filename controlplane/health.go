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

// The post-start hooks of kube-apiserver's names that Concord's components finish,
// each once its component has really started (or synced, where kube-apiserver's
// waits for that).
const (
	// the admission chain (policies read, plugins initialized)
	hookAdmission = "start-apiserver-admission-initializer"
	// the informers the server starts before it serves (RBAC, service accounts)
	hookInformers = "generic-apiserver-start-informers"
)

// InformerSyncCheck is the readyz check that fails while an in-process informer the
// server runs has not synced.
const InformerSyncCheck = "informer-sync"

// hook returns the post-start hook named name that healthChecks created, or nil
// when this server has none of that name (its component is not part of it).
func (i *Instance) hook(name string) *health.PostStartHook { return i.parts.hooks[name] }

// finish marks the post-start hook named name Done, if the server has it.
func (i *Instance) finish(name string) {
	if h := i.hook(name); h != nil {
		h.Done()
	}
}

// newHooks creates the post-start hooks of names, in order, for healthChecks.
func (i *Instance) newHooks(names ...string) []health.Checker {
	if i.parts.hooks == nil {
		i.parts.hooks = map[string]*health.PostStartHook{}
	}
	out := make([]health.Checker, 0, len(names))
	for _, name := range names {
		h := health.NewPostStartHook(name)
		i.parts.hooks[name] = h
		out = append(out, h)
	}
	return out
}

// healthChecks builds /healthz, /livez and /readyz with the checks and post-start
// hooks of kube-apiserver's names that this server has, and starts the log check's
// flushes.
func (i *Instance) healthChecks(ctx context.Context) (*health.Endpoints, error) {
	checks := health.New(i.Metrics)
	etcdCheck := health.NamedCheck("etcd", func(r *http.Request) error {
		cctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		_, err := i.raw.CurrentRevision(cctx)
		return err
	})
	i.parts.log = health.NewLog(klog.Flush, 0, 0)
	all := []health.Checker{health.Ping(), i.parts.log, etcdCheck}
	all = append(all, i.newHooks(hookAdmission, hookInformers)...)
	if i.parts.flowControl != nil {
		all = append(all, i.parts.flowControl.Hooks()...)
	}
	all = append(all, i.parts.crds.Checks()...)
	all = append(all, i.parts.namespaces.Checks()...)
	if id := i.parts.identity; id != nil {
		all = append(all, id.Checks()...)
		all = append(all, i.parts.storageVersions.Checks()...)
	}
	all = append(all, i.parts.storageReadiness.Checks()...)
	if f := i.parts.rbacBootstrap; f != nil {
		all = append(all, f.Checks()...)
	}
	// kube-apiserver lists the system PriorityClasses' hook after the Service IP
	// repair controllers', before the kubernetes Service's.
	services := i.parts.services.Checks()
	all = append(all, slices.Insert(services, min(1, len(services)), i.parts.priorityClasses.Checks()...)...)
	for _, c := range i.Encryption.HealthChecks() {
		all = append(all, c)
	}
	if f := i.parts.aggregator; f != nil {
		all = append(all, f.Checks()...)
	}
	for _, add := range []func(...health.Checker) error{checks.AddHealthz, checks.AddLivez, checks.AddReadyz} {
		if err := add(all...); err != nil {
			return nil, err
		}
	}
	readyOnly := []health.Checker{health.NamedCheck(InformerSyncCheck, func(*http.Request) error { return i.informersSynced() })}
	if svm := i.parts.storageVersions.Manager(); svm != nil {
		// Ready only while writes are accepted, not just once they were at start-up.
		readyOnly = append(readyOnly, svm.WritesCheck())
	}
	if f := i.parts.migration; f != nil {
		readyOnly = append(readyOnly, f.ReadyCheck())
	}
	if err := checks.AddReadyz(readyOnly...); err != nil {
		return nil, err
	}
	i.parts.checks = checks
	return checks, i.start(ctx, lifecycle.Component{Name: "log-flush", Run: i.parts.log.Run})
}

// informersSynced is the informer-sync check: every shared informer the server
// answers requests from (startInformers'), and admission's, has synced.
func (i *Instance) informersSynced() error {
	errs := []error{i.parts.informers.Synced()}
	for _, ready := range i.parts.informerChecks {
		errs = append(errs, ready())
	}
	return errors.Join(errs...)
}
