package integration

import (
	"net/http"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const protobuf = "application/vnd.kubernetes.protobuf"

// A client that accepts only protobuf gets built-in kinds, their lists, their watch
// events and every error in protobuf, as from Kubernetes; custom resources have no
// protobuf form, so such a client gets 406 for them, and one that offers JSON as well
// gets JSON.
func TestProtobufAnswers(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	var contentTypes []string
	cfg := rest.CopyConfig(c.Servers[0].Config())
	cfg.AcceptContentTypes, cfg.ContentType = protobuf, protobuf
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				contentTypes = append(contentTypes, resp.Header.Get("Content-Type"))
			}
			return resp, err
		})
	}
	cms := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default")

	before, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion, FieldSelector: fields.OneTermEqualSelector("metadata.name", "pb").String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := cms.Create(ctx, configMap("pb", map[string]string{"k": "v"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok || cm.Data["k"] != "v" || cm.ResourceVersion != created.ResourceVersion {
			t.Fatalf("watch event %s %#v, want ADDED of the created ConfigMap", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	got, err := cms.Get(ctx, "pb", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" || got.UID != created.UID {
		t.Fatalf("get: %v %+v", err, got)
	}
	if _, err := cms.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing ConfigMap: %v, want NotFound", err)
	}
	for _, ct := range contentTypes {
		if ct != protobuf && ct != protobuf+";stream=watch" {
			t.Errorf("answered %q to a client that accepts only protobuf", ct)
		}
	}

	// A custom resource: 406 to protobuf alone, JSON when JSON is offered too.
	crd, err := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, cronTabCRD("pb.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitServedEverywhere(t, c, gvrOf(crd, "v1"), time.Now())
	path := "/apis/pb.example.com/v1/namespaces/default/crontabs"
	raw := kubernetes.NewForConfigOrDie(c.Servers[0].Config()).Discovery().RESTClient()
	res := raw.Get().AbsPath(path).SetHeader("Accept", protobuf).Do(ctx)
	var code int
	if res.StatusCode(&code); code != http.StatusNotAcceptable {
		t.Errorf("custom resources to a protobuf-only client: %d %v, want 406", code, res.Error())
	}
	body, err := raw.Get().AbsPath(path).SetHeader("Accept", protobuf+",application/json").DoRaw(ctx)
	if err != nil || len(body) == 0 || body[0] != '{' {
		t.Errorf("custom resources to a client offering JSON too: %v %q", err, body)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
