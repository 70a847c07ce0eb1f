package podconnect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"
)

// The resources: Pods, and the Nodes they run on.
var (
	Pods  = schema.GroupResource{Resource: "pods"}
	Nodes = schema.GroupResource{Resource: "nodes"}
)

// ErrNotServed means the registry serves no Pods or Nodes in v1.
var ErrNotServed = errors.New("pods or nodes are not served in v1")

// kubeletPort is the port of a node's kubelet when its status names none (kube's
// default --kubelet-port).
const kubeletPort = 10250

// dialTimeout bounds the connection to a node's kubelet.
const dialTimeout = 10 * time.Second

// Connector answers the connect subresources of the Pods of a registry's store.
type Connector struct {
	reg   *registry.Registry
	store *store.Store
	sem   *kubesemantics.Semantics
}

// New returns the Connector of the Pods and Nodes reg serves from st, under the
// server's feature gates (sem).
func New(reg *registry.Registry, st *store.Store, sem *kubesemantics.Semantics) *Connector {
	return &Connector{reg: reg, store: st, sem: sem}
}

// ConfigurePods gives Pods their log, exec, attach and portforward subresources.
func (c *Connector) ConfigurePods(res *registry.Resource) error {
	if res.Hooks == nil {
		res.Hooks = &registry.Hooks{}
	}
	if res.Hooks.Connects == nil {
		res.Hooks.Connects = map[string]registry.Connect{}
	}
	streams := []string{http.MethodGet, http.MethodPost}
	kind := func(k string) schema.GroupVersionKind { return schema.GroupVersionKind{Version: "v1", Kind: k} }
	res.Hooks.Connects["log"] = registry.Connect{Kind: kind("Pod"), Methods: []string{http.MethodGet}, Serve: c.serveLog}
	res.Hooks.Connects["exec"] = registry.Connect{Kind: kind("PodExecOptions"), Methods: streams, Verb: "create",
		Serve: c.stream(execOptions)}
	res.Hooks.Connects["attach"] = registry.Connect{Kind: kind("PodAttachOptions"), Methods: streams, Verb: "create",
		Serve: c.stream(attachOptions)}
	res.Hooks.Connects["portforward"] = registry.Connect{Kind: kind("PodPortForwardOptions"), Methods: streams, Verb: "create",
		Serve: c.stream(portForwardOptions)}
	return nil
}

// decodeOptions decodes r's query into into, one of kube's internal option types, as
// kube's parameter codec does (a 400 for what it cannot decode).
func decodeOptions(r *http.Request, into runtime.Object) error {
	if err := legacyscheme.ParameterCodec.DecodeParameters(r.URL.Query(), corev1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// pod reads the Pod name of namespace.
func (c *Connector) pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	res := c.reg.Served(Pods, "v1")
	if res == nil {
		return nil, apierrors.NewInternalError(ErrNotServed)
	}
	obj, err := c.store.Get(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace, Name: name}, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return pod, nil
}

// container returns the container of pod a request names (container, "" for its
// only one), or kube's 400 saying why there is none.
func container(pod *corev1.Pod, container string) (string, error) {
	if container != "" {
		found := false
		podv1.VisitContainers(&pod.Spec, podv1.AllFeatureEnabledContainers(), func(c *corev1.Container, _ podv1.ContainerType) bool {
			found = c.Name == container
			return !found
		})
		if !found {
			return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
		}
		return container, nil
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	var names []string
	podv1.VisitContainers(&pod.Spec, podv1.AllFeatureEnabledContainers(), func(c *corev1.Container, _ podv1.ContainerType) bool {
		names = append(names, c.Name)
		return true
	})
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
}

// unknown is kube's answer to an error that is no API status: a 500 with its text.
func unknown(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
}
