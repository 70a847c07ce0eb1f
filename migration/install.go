package migration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/retry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// ErrNotEstablished means a definition EnsureCRDs installed was not served in time,
// or its names were refused.
var ErrNotEstablished = errors.New("definition not established")

// establishTimeout bounds each wait for a definition to be established, then served.
const establishTimeout = time.Minute

// EnsureCRDs installs the StorageState definition, and the StorageVersionMigration
// definition unless the server serves storagemigration.k8s.io/v1
// storageversionmigrations itself, and returns once they are established and the
// server of cfg serves them. It is idempotent and safe when several callers, of
// several releases, run it at once: a missing definition is created (AlreadyExists
// means another caller won); one that differs from the embedded manifest is updated
// under optimistic concurrency (conflicts are read again and retried) unless it
// carries a higher migrationapi.RevisionAnnotation, which a newer release wrote and an
// older one leaves alone (so two releases never take turns rewriting it); one that
// matches is left alone.
func EnsureCRDs(ctx context.Context, cfg *rest.Config) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	want := []*apiextensionsv1.CustomResourceDefinition{migrationapi.StorageStateCRD()}
	// A server that serves the API itself (every Concord server) owns it: a definition
	// installed beside it would only conflict.
	builtin, err := servesMigrations(cfg)
	if err != nil {
		return err
	}
	if !builtin {
		want = append(want, migrationapi.StorageVersionMigrationCRD())
	}
	for _, crd := range want {
		if err := ensureCRD(ctx, cs, dyn, crd); err != nil {
			return fmt.Errorf("installing %s: %w", crd.Name, err)
		}
	}
	return nil
}

// servesMigrations reports whether the server serves storagemigration.k8s.io/v1
// storageversionmigrations.
func servesMigrations(cfg *rest.Config) (bool, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := disc.ServerResourcesForGroupVersion(migrationapi.StorageVersionMigrations.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == migrationapi.StorageVersionMigrations.Resource {
			return true, nil
		}
	}
	return false, nil
}

// ensureCRD creates or updates one definition and waits until it is established.
func ensureCRD(ctx context.Context, cs apiextensionsclient.Interface, dyn dynamic.Interface, want *apiextensionsv1.CustomResourceDefinition) error {
	client := cs.ApiextensionsV1().CustomResourceDefinitions()
	defaulted := want.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(defaulted)
	err := retry.OnConflict(ctx, func(ctx context.Context) error {
		cur, err := client.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = client.Create(ctx, want, metav1.CreateOptions{FieldManager: migrationapi.FieldManager})
			if apierrors.IsAlreadyExists(err) {
				// Another caller created it meanwhile: compare with theirs.
				return apierrors.NewConflict(migrationapi.CustomResourceDefinitions.GroupResource(), want.Name, err)
			}
			if err == nil {
				klog.FromContext(ctx).Info("Definition installed", "crd", want.Name)
			}
			return err
		}
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(cur.Spec, defaulted.Spec) && annotationsContain(cur.Annotations, want.Annotations) {
			return nil
		}
		if theirs, ours := revision(cur), revision(want); theirs > ours {
			klog.FromContext(ctx).V(2).Info("Definition left to a newer release", "crd", want.Name, "revision", theirs, "ours", ours)
			return nil
		}
		next := cur.DeepCopy()
		next.Spec = want.Spec
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		for k, v := range want.Annotations {
			next.Annotations[k] = v
		}
		if _, err := client.Update(ctx, next, metav1.UpdateOptions{FieldManager: migrationapi.FieldManager}); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Definition updated", "crd", want.Name)
		return nil
	})
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, establishTimeout, true, func(ctx context.Context) (bool, error) {
		cur, err := client.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range cur.Status.Conditions {
			switch {
			case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
				return true, nil
			case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
				return false, fmt.Errorf("%w: names not accepted: %s", ErrNotEstablished, c.Message)
			}
		}
		last = fmt.Sprint(cur.Status.Conditions)
		return false, nil
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotEstablished) {
		return fmt.Errorf("%w within %v (conditions %s): %w", ErrNotEstablished, establishTimeout, last, err)
	}
	if err != nil {
		return err
	}
	// Established is written by one server; this one may take a moment more to serve
	// the resource.
	v := want.Spec.Versions[0].Name
	for _, ver := range want.Spec.Versions {
		if ver.Storage {
			v = ver.Name
		}
	}
	gvr := schema.GroupVersionResource{Group: want.Spec.Group, Version: v, Resource: want.Spec.Names.Plural}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, establishTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// revision is the definition revision crd carries (0 if none or malformed).
func revision(crd *apiextensionsv1.CustomResourceDefinition) int {
	n, err := strconv.Atoi(crd.Annotations[migrationapi.RevisionAnnotation])
	if err != nil {
		return 0
	}
	return n
}

func annotationsContain(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// shadowedMigrationCRD returns Concord's StorageVersionMigration definition if it is
// installed and not being deleted already (nil otherwise). A definition of that name
// that Concord did not install (no migrationapi.RevisionAnnotation) is not returned.
// The caller knows a built-in API serves the resource, which the definition then only
// shadows.
func shadowedMigrationCRD(ctx context.Context, cs apiextensionsclient.Interface) (*apiextensionsv1.CustomResourceDefinition, error) {
	name := migrationapi.StorageVersionMigrationCRD().Name
	cur, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case cur.DeletionTimestamp != nil:
		return nil, nil
	case cur.Annotations[migrationapi.RevisionAnnotation] == "":
		klog.FromContext(ctx).V(2).Info("A StorageVersionMigration definition Concord did not install is left alone", "crd", name)
		return nil, nil
	}
	return cur, nil
}

// deleteMigrationCRD deletes crd, preconditioned on its uid. Deleting the definition
// deletes the migrations recorded in it: the server's custom resource cleanup reads
// them from storage, not through the built-in API that shadows them.
func deleteMigrationCRD(ctx context.Context, cs apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	uid := crd.UID
	err := cs.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone or replaced meanwhile: the next probe looks again
	}
	return err
}
