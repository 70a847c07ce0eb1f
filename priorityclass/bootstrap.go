package priorityclass

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1client "k8s.io/client-go/kubernetes/typed/scheduling/v1"
	"k8s.io/klog/v2"
)

// BootstrapHook names the post-start hook of the system classes, kube-apiserver's.
const BootstrapHook = "scheduling/bootstrap-system-priority-classes"

// Bootstrap creates the system classes that are missing, as kube-apiserver does at
// start (an existing one is left as it is). Servers may run it at once: a creation
// another server made first is not an error.
func Bootstrap(ctx context.Context, client schedulingv1client.PriorityClassesGetter) error {
	for _, pc := range SystemClasses() {
		_, err := client.PriorityClasses().Get(ctx, pc.Name, metav1.GetOptions{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading PriorityClass %s: %w", pc.Name, err)
		}
		if _, err := client.PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PriorityClass %s: %w", pc.Name, err)
		}
		klog.FromContext(ctx).Info("Created the system PriorityClass", "priorityclass", pc.Name, "value", pc.Value)
	}
	return nil
}
