// Package componentstatus serves ComponentStatuses (core/v1, deprecated since 1.19 but
// still served) as kube-apiserver computes them: on every read, by probing the
// components a control plane of kube's layout has beside the API server, and never
// storing anything.
//
// # What it owns
//
//   - Prober.Configure: makes the componentstatuses resource computed
//     (registry.Hooks.Compute). A get probes the one component it names (an unknown
//     name is kube's 404, "componentstatus \"x\" not found"); a list probes all of
//     them at once.
//   - The components and their probes, kube's: "controller-manager" and "scheduler"
//     are asked for /healthz over HTTPS on 127.0.0.1 at their default secure ports
//     (10257, 10259), with kube's HTTP prober (k8s.io/kubernetes/pkg/probe/http), its
//     certificate unverified; "etcd-0" is the server's etcd, read as kube's etcd
//     prober reads it (the key "health" under the server's prefix, "ok" when
//     answered). Each answers one Healthy condition: True, False or Unknown, the
//     probe's output as message and its error as error.
//
// Concord runs its own controllers in each server: a healthy "controller-manager"
// here means a kube-controller-manager answers on this machine, as it means for kube.
//
// # What it must not touch
//
// It writes nothing, to etcd or elsewhere, and serves no other resource.
package componentstatus
