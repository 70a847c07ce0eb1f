package podconnect

import (
	"errors"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"
)

// A request's container is its only one, one it names, or kube's 400.
func TestContainer(t *testing.T) {
	pod := func(names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	for _, c := range []struct {
		pod       *corev1.Pod
		named     string
		want, err string
	}{
		{pod("c"), "", "c", ""},
		{pod("c"), "init", "init", ""},
		{pod("a", "b"), "b", "b", ""},
		{pod("a", "b"), "", "", "a container name must be specified for pod p, choose one of: [init a b]"},
		{pod(), "", "", "a container name must be specified for pod p"},
		{pod("c"), "zz", "", "container zz is not valid for pod p"},
	} {
		got, err := container(c.pod, c.named)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%q of %v: %q, %v; want %q", c.named, c.pod.Spec.Containers, got, err, c.want)
		case c.err != "" && (!apierrors.IsBadRequest(err) || err.Error() != c.err):
			t.Errorf("%q of %v: %v; want the 400 %q", c.named, c.pod.Spec.Containers, err, c.err)
		}
	}
}

// The query kube sends a kubelet for a log, in kube's order of parameters (sorted, as
// url.Values encodes them).
func TestLogQuery(t *testing.T) {
	opts := &core.PodLogOptions{Follow: true, Timestamps: true, TailLines: ptr.To[int64](3), LimitBytes: ptr.To[int64](10), Stream: ptr.To(core.LogStreamStdout)}
	if got, want := logQuery(opts, false).Encode(), "follow=true&limitBytes=10&tailLines=3&timestamps=true"; got != want {
		t.Errorf("without split streams: %s, want %s", got, want)
	}
	if got, want := logQuery(opts, true).Encode(), "follow=true&limitBytes=10&stream=Stdout&tailLines=3&timestamps=true"; got != want {
		t.Errorf("with split streams: %s, want %s", got, want)
	}
}

// An error that is no API status is kube's bare 500: its text, no reason.
func TestUnknown(t *testing.T) {
	cause := errors.New("no preferred addresses found; known addresses: []")
	err := unknown(cause)
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusInternalServerError ||
		status.Status().Reason != "" || status.Status().Message != cause.Error() {
		t.Errorf("an error kube gives no status: %v", err)
	}
}
