package podconnect

import (
	"context"
	"net"
	"strconv"

	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	nodeutil "k8s.io/kubernetes/pkg/util/node"
)

// preferredAddresses are the node address types kube-apiserver reaches a kubelet at,
// in its default order of preference (--kubelet-preferred-address-types).
var preferredAddresses = []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP,
	corev1.NodeExternalDNS, corev1.NodeExternalIP}

// kubelet returns the host:port of the kubelet of the node name, as kube finds it in
// the Node's status, or kube's answer when it finds none: a 404 for a Node that does
// not exist (kube names it a pod), a 500 for one without a usable address.
func (c *Connector) kubelet(ctx context.Context, name string) (string, error) {
	res := c.reg.Served(Nodes, "v1")
	if res == nil {
		return "", apierrors.NewInternalError(ErrNotServed)
	}
	obj, err := c.store.Get(ctx, store.Ref{Resource: res, Version: "v1", Name: name}, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", apierrors.NewNotFound(Pods, name)
	}
	if err != nil {
		return "", err
	}
	node := &corev1.Node{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, node); err != nil {
		return "", apierrors.NewInternalError(err)
	}
	host, port, err := KubeletAddress(node)
	if err != nil {
		return "", unknown(err)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// KubeletAddress returns the host and port kube-apiserver reaches node's kubelet at:
// its preferred address (kube's error when it has none) and the
// port its status names, else kube's default.
func KubeletAddress(node *corev1.Node) (string, int, error) {
	host, err := nodeutil.GetPreferredNodeAddress(node, preferredAddresses)
	if err != nil {
		return "", 0, err
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = kubeletPort
	}
	return host, port, nil
}

// Dial connects to the kubelet at hostport and hangs up: nil if it answers.
func Dial(ctx context.Context, hostport string) error {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return err
	}
	return conn.Close()
}
