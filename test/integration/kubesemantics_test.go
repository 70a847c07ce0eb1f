package integration

import (
	"fmt"
	"sync"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// trustBundleTemplate is a PodTemplate whose pod projects a ClusterTrustBundle
// (projected.sources[].clusterTrustBundle, behind the ClusterTrustBundleProjection
// gate: off at 1.36, on at 1.37).
func trustBundleTemplate(name string) *corev1.PodTemplate {
	return &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "nginx"}},
			Volumes: []corev1.Volume{{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{
					SignerName: ptr.To("example.com/signer"), Path: "bundle.pem",
				}}},
			}}}},
		}},
	}
}

func hasTrustBundle(t *corev1.PodTemplate) bool {
	for _, v := range t.Template.Spec.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ClusterTrustBundle != nil {
					return true
				}
			}
		}
	}
	return false
}

// Two servers of one binary in one process, one emulating 1.37 and one 1.36, write
// PodTemplates at once. Kubernetes' own field dropping (pkg/api/pod) follows each
// server's emulated release, as kube-apiserver --emulated-version does: the 1.36
// server drops a gated-off field from a new object, and keeps it on an update of an
// object that already has it; the 1.37 server keeps it. Each server's requests see
// its own feature gates however the two interleave.
func TestKubeFieldDroppingFollowsEmulation(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 1 {
			o.Compatibility.EmulationVersion = []string{"1.36"}
		}
	}))
	ctx := t.Context()
	clients := []kubernetes.Interface{c.Servers[0].Clientset(t), c.Servers[1].Clientset(t)}
	const each = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for s, cs := range clients {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("s%d-%d", s, i)
				got, err := cs.CoreV1().PodTemplates("default").Create(ctx, trustBundleTemplate(name), metav1.CreateOptions{})
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s: %w", name, err)
				case hasTrustBundle(got) != (s == 0):
					errs <- fmt.Errorf("%s created through the server emulating %s: clusterTrustBundle kept %v", name, []string{"1.37", "1.36"}[s], hasTrustBundle(got))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// An update through the 1.36 server of an object that has the field keeps it.
	tpl, err := clients[1].CoreV1().PodTemplates("default").Get(ctx, "s0-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tpl.Labels = map[string]string{"touched": "yes"}
	upd, err := clients[1].CoreV1().PodTemplates("default").Update(ctx, tpl, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasTrustBundle(upd) || upd.Generation != 1 {
		t.Fatalf("update through the 1.36 server: clusterTrustBundle kept %v, generation %d; want kept, 1 (the template did not change)", hasTrustBundle(upd), upd.Generation)
	}
	// Kubernetes' validation answers in kube's words, through either server.
	bad := trustBundleTemplate("bad")
	bad.Template.Spec.Containers[0].Name = "Bad_Name"
	_, err = clients[1].CoreV1().PodTemplates("default").Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || len(err.(apierrors.APIStatus).Status().Details.Causes) != 1 ||
		err.(apierrors.APIStatus).Status().Details.Causes[0].Field != "template.spec.containers[0].name" {
		t.Fatalf("invalid container name: %v, want 422 at template.spec.containers[0].name", err)
	}
}
