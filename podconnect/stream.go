package podconnect

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/streaming/pkg/httpstream"
)

// ErrNoKubeletProxy is Concord's answer where kube would proxy to a reachable
// kubelet.
var ErrNoKubeletProxy = errors.New("this server does not proxy to kubelets")

// errNoKubeletProxy is ErrNoKubeletProxy as a 503.
var errNoKubeletProxy = apierrors.NewServiceUnavailable(ErrNoKubeletProxy.Error())

// streamOptions are a stream subresource's options, kube's internal type, and the
// container they name (named: whether the subresource names one at all).
type streamOptions struct {
	obj       runtime.Object
	container func() (name string, named bool)
}

func execOptions() streamOptions {
	o := &core.PodExecOptions{}
	return streamOptions{obj: o, container: func() (string, bool) { return o.Container, true }}
}

func attachOptions() streamOptions {
	o := &core.PodAttachOptions{}
	return streamOptions{obj: o, container: func() (string, bool) { return o.Container, true }}
}

func portForwardOptions() streamOptions {
	return streamOptions{obj: &core.PodPortForwardOptions{}, container: func() (string, bool) { return "", false }}
}

// stream returns the Serve of a stream subresource (exec, attach, portforward) whose
// options newOptions makes: kube's checks of the options, the Pod and its container
// and its node, an upgrade asked for, then the node's kubelet.
func (c *Connector) stream(newOptions func() streamOptions) func(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	return func(_ http.ResponseWriter, r *http.Request, namespace, name string) error {
		opts := newOptions()
		if err := decodeOptions(r, opts.obj); err != nil {
			return err
		}
		pod, err := c.pod(r.Context(), namespace, name)
		if err != nil {
			return err
		}
		if ctr, named := opts.container(); named {
			if _, err := container(pod, ctr); err != nil {
				return err
			}
		}
		if pod.Spec.NodeName == "" {
			return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
		}
		hostport, err := c.kubelet(r.Context(), pod.Spec.NodeName)
		if err != nil {
			return err
		}
		if !httpstream.IsUpgradeRequest(r) {
			return apierrors.NewBadRequest("Upgrade request required")
		}
		if err := dial(r.Context(), hostport); err != nil {
			return unknown(fmt.Errorf("error dialing backend: %w", err))
		}
		return errNoKubeletProxy
	}
}
