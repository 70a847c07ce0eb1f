package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/concordproject/concord/harness"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestSecrets: core Secrets behave as in Kubernetes (stringData, types, immutability,
// field selectors, kubectl's columns), and nobody reads them without a grant: not a
// reader bound to view, not in AuthenticatedRead mode.
func TestSecrets(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, withTokens(t, rbacTokens))
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	secrets := admin.CoreV1().Secrets("default")

	s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Data: map[string][]byte{"user": []byte("admin")}, StringData: map[string]string{"password": "s3cret", "user": "root"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeOpaque || string(s.Data["password"]) != "s3cret" || string(s.Data["user"]) != "root" || s.StringData != nil {
		t.Errorf("created secret: type %q data %q stringData %v, want Opaque, stringData merged and dropped", s.Type, s.Data, s.StringData)
	}
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   string
	}{
		{"tls without its keys", &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"x": nil}}, "data[tls.crt]: Required value"},
		{"bad key", &corev1.Secret{Data: map[string][]byte{"a/b": []byte("x")}}, `data[a/b]: Invalid value: "a/b"`},
		{"docker config that is not JSON", &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}}, "data[.dockerconfigjson]: Invalid value"},
		{"service account token without its account", &corev1.Secret{Type: corev1.SecretTypeServiceAccountToken}, "kubernetes.io/service-account.name"},
		{"too large", &corev1.Secret{Data: map[string][]byte{"big": make([]byte, 1<<20+1)}}, "data: Too long"},
	} {
		tc.secret.GenerateName = "bad-"
		if _, err := secrets.Create(ctx, tc.secret, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want 422 with %q", tc.name, err, tc.want)
		}
	}

	s.Type = corev1.SecretTypeBasicAuth
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "type: Invalid value") {
		t.Errorf("changing the type: %v, want 422", err)
	}
	frozen, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Immutable: ptr.To(true), Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frozen.Data["k"] = []byte("w")
	if _, err := secrets.Update(ctx, frozen, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable when `immutable` is set") {
		t.Errorf("changing an immutable secret: %v, want 422", err)
	}
	if err := secrets.Delete(ctx, "frozen", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting an immutable secret: %v", err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "tls" {
		t.Errorf("secrets of type tls: %v %v", list, err)
	}

	// A user bound to view reads configmaps but not secrets; edit reads secrets.
	alice := kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), "alice-token"))
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, roleBinding("default", "alice-view", "ClusterRole", "view", userSubject("alice")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice reads configmaps", func() error {
		_, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	})
	for _, read := range []func() error{
		func() error {
			_, err := alice.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{})
			return err
		},
		func() error { _, err := alice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); return err },
		func() error { _, err := alice.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err },
		func() error { _, err := alice.CoreV1().Secrets("default").Watch(ctx, metav1.ListOptions{}); return err },
	} {
		if err := read(); !apierrors.IsForbidden(err) {
			t.Errorf("alice with view reads secrets: %v, want 403", err)
		}
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, roleBinding("default", "alice-edit", "ClusterRole", "edit", userSubject("alice")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice with edit reads a secret", func() error {
		_, err := alice.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{})
		return err
	})

	kubectl := kubectlOrSkip(t, c.Servers[0])
	if out, err := kubectl("create", "secret", "generic", "from-kubectl", "--from-literal=a=b", "--from-literal=c=d"); err != nil {
		t.Fatalf("kubectl create secret: %s %v", out, err)
	}
	out, err := kubectl("get", "secrets", "from-kubectl")
	if err != nil || !strings.Contains(out, "TYPE") || !strings.Contains(out, "DATA") || !strings.Contains(out, "Opaque   2") {
		t.Errorf("kubectl get secrets:\n%s%v", out, err)
	}
}

// TestListAndWatchShapes: what the WatchList conformance specs rely on. JSON list
// items of built-in kinds carry no apiVersion and kind (typed clients decode them as
// the list's, so they equal what a create returned), custom resources' items do; a
// watch list asked for as Tables sends its bookmark as a Table of one row carrying
// the initial-events-end annotation, which a reflector cannot take for an object.
func TestListAndWatchShapes(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	s := c.Servers[0]
	ctx := t.Context()
	created, err := s.Clientset(t).CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"l": "x"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.Clientset(t).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{LabelSelector: "l=x"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	if diff := cmp.Diff(created, &list.Items[0]); diff != "" {
		t.Errorf("the listed secret differs from the created one:\n%s", diff)
	}
	_, body := do(t, s.Config(), http.MethodGet, "/api/v1/namespaces/default/secrets", nil)
	if !strings.Contains(body, `"items":[{"metadata":`) {
		t.Errorf("JSON items of secrets carry apiVersion or kind: %.200s", body)
	}
	crd := cronTabCRD("stable.example.com")
	if _, err := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := gvrOf(waitCRD(t, crdClient(t, s), crd.Name, "established", established), crd.Spec.Versions[0].Name)
	ct := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": gvr.GroupVersion().String(), "kind": crd.Spec.Names.Kind, "metadata": map[string]interface{}{"name": "ct"}}}
	eventually(t, "a crontab is created", func() error {
		_, err := dynamicFor(s.Dynamic(t), gvr, "default").Create(ctx, ct, metav1.CreateOptions{})
		return err
	})
	_, body = do(t, s.Config(), http.MethodGet, "/apis/"+gvr.GroupVersion().String()+"/namespaces/default/"+gvr.Resource, nil)
	if !strings.Contains(body, `"items":[{"apiVersion":"`+gvr.GroupVersion().String()+`"`) {
		t.Errorf("JSON items of custom resources lack apiVersion: %.300s", body)
	}

	tables := dynamic.ConfigFor(s.Config())
	tables.AcceptContentTypes = "application/json;as=Table;v=v1;g=meta.k8s.io"
	tables.GroupVersion = &corev1.SchemeGroupVersion
	rc, err := rest.RESTClientFor(tables)
	if err != nil {
		t.Fatal(err)
	}
	w, err := dynamic.New(rc).Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace("default").Watch(ctx,
		metav1.ListOptions{SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		u, _ := ev.Object.(*unstructured.Unstructured)
		if u == nil || u.GetKind() != "Table" {
			t.Fatalf("%s event of %T %v, want a Table", ev.Type, ev.Object, u)
		}
		if ev.Type != watch.Bookmark {
			continue
		}
		rows, _, _ := unstructured.NestedSlice(u.Object, "rows")
		if len(rows) != 1 {
			t.Fatalf("the bookmark Table has %d rows, want 1", len(rows))
		}
		annotations, _, _ := unstructured.NestedStringMap(rows[0].(map[string]interface{}), "object", "metadata", "annotations")
		if annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Errorf("the bookmark's row lacks the initial-events-end annotation: %v", rows[0])
		}
		return
	}
	t.Fatal("the watch ended without a bookmark")
}
