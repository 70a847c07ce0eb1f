package podconnect

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// ErrNoKubeletProxy is Concord's answer where kube would proxy to a reachable
// kubelet.
var ErrNoKubeletProxy = errors.New("this server does not proxy to kubelets")

// errNoKubeletProxy is ErrNoKubeletProxy as a 503.
var errNoKubeletProxy = apierrors.NewServiceUnavailable(ErrNoKubeletProxy.Error())

// streamOptions are a stream subresource's options, kube's internal type: the
// container they name (named: whether the subresource names one at all), the query
// kube sends the kubelet, and the streams a WebSocket client asks for (translate:
// whether kube translates its WebSockets to the kubelet's SPDY).
type streamOptions struct {
	obj       runtime.Object
	path      string // of the kubelet's endpoint
	container func() (name string, named bool)
	query     func() url.Values
	streams   func() (proxy.Options, bool)
}

// streamQuery is the kubelet's query for the streams a client asks for.
func streamQuery(s proxy.Options) url.Values {
	q := url.Values{}
	for param, on := range map[string]bool{core.ExecStdinParam: s.Stdin, core.ExecStdoutParam: s.Stdout,
		core.ExecStderrParam: s.Stderr, core.ExecTTYParam: s.Tty} {
		if on {
			q.Add(param, "1")
		}
	}
	return q
}

func execOptions() streamOptions {
	o := &core.PodExecOptions{}
	streams := func() (proxy.Options, bool) {
		return proxy.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}, true
	}
	return streamOptions{obj: o, path: "exec", streams: streams,
		container: func() (string, bool) { return o.Container, true },
		query: func() url.Values {
			s, _ := streams()
			q := streamQuery(s)
			for _, c := range o.Command {
				q.Add("command", c)
			}
			return q
		}}
}

func attachOptions() streamOptions {
	o := &core.PodAttachOptions{}
	streams := func() (proxy.Options, bool) {
		return proxy.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}, true
	}
	return streamOptions{obj: o, path: "attach", streams: streams,
		container: func() (string, bool) { return o.Container, true },
		query:     func() url.Values { s, _ := streams(); return streamQuery(s) }}
}

func portForwardOptions() streamOptions {
	o := &core.PodPortForwardOptions{}
	return streamOptions{obj: o, path: "portForward",
		container: func() (string, bool) { return "", false },
		streams:   func() (proxy.Options, bool) { return proxy.Options{}, false },
		query: func() url.Values {
			q := url.Values{}
			if len(o.Ports) > 0 {
				ports := make([]string, len(o.Ports))
				for i, p := range o.Ports {
					ports[i] = strconv.FormatInt(int64(p), 10)
				}
				q.Add(core.PortHeader, strings.Join(ports, ","))
			}
			return q
		}}
}

// stream returns the Serve of a stream subresource (exec, attach, portforward) whose
// options newOptions makes: kube's checks of the options, the Pod and its container
// and its node, then the node's kubelet, reached as kube reaches it (see connectNode).
func (c *Connector) stream(newOptions func() streamOptions) func(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	return func(w http.ResponseWriter, r *http.Request, namespace, name string) error {
		opts := newOptions()
		if err := decodeOptions(r, opts.obj); err != nil {
			return err
		}
		pod, err := c.pod(r.Context(), namespace, name)
		if err != nil {
			return err
		}
		ctr := ""
		if named, names := opts.container(); names {
			if ctr, err = container(pod, named); err != nil {
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
		path := fmt.Sprintf("/%s/%s/%s", opts.path, pod.Namespace, pod.Name)
		if ctr != "" {
			path += "/" + ctr
		}
		loc := &url.URL{Scheme: "https", Host: hostport, Path: path, RawQuery: opts.query().Encode()}
		return c.connectNode(w, r, loc, opts)
	}
}

// connectNode reaches the kubelet at loc for a stream, as kube does: a WebSocket
// client of exec or attach (under TranslateStreamCloseWebsocketRequests) through
// kube's own translation to the kubelet's SPDY, which answers in the stream when the
// kubelet cannot be reached; any other request must ask for an upgrade (kube's 400),
// and one that cannot dial the kubelet is kube's 500. A kubelet that answers is not
// proxied to (503).
func (c *Connector) connectNode(w http.ResponseWriter, r *http.Request, loc *url.URL, opts streamOptions) error {
	if streams, translated := opts.streams(); translated && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) &&
		c.sem.FeatureGate().Enabled(features.TranslateStreamCloseWebsocketRequests) {
		proxy.NewStreamTranslatorHandler(loc, nil, 0, streams).ServeHTTP(w, r)
		return nil
	}
	if !httpstream.IsUpgradeRequest(r) {
		return apierrors.NewBadRequest("Upgrade request required")
	}
	if err := Dial(r.Context(), loc.Host); err != nil {
		return unknown(fmt.Errorf("error dialing backend: %w", err))
	}
	return errNoKubeletProxy
}
