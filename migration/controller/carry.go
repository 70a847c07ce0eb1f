package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/guard"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// carry moves migration m's guard forward when its resource's StorageVersion object
// has moved from the resourceVersion the trigger recorded but every revision in
// between had the servers agree on the migration's hash (guard.Carried): the
// annotation is set to the object's resourceVersion now, in a JSON patch that first
// tests it still holds the old one. It returns true once moved; false, with nil, when
// the change cannot be vouched for and the migration must end as before; an error
// when the patch failed for a reason that may pass.
func (c *Controller) carry(ctx context.Context, w *statusWriter, m *migrationapi.StorageVersionMigration, kind string, gr schema.GroupResource) (bool, error) {
	from := m.Annotations[migrationapi.AnnotationStorageVersionResourceVersion]
	hash := m.Annotations[migrationapi.AnnotationStorageVersionHash]
	if from == "" || hash == "" {
		return false, nil
	}
	logger := klog.FromContext(ctx)
	sv, err := c.dyn.Resource(migrationapi.StorageVersions).Get(ctx, wire.StorageVersionName(gr), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	to := sv.GetResourceVersion()
	if err := guard.Carried(ctx, c.dyn, guard.Change{Resource: gr, Kind: kind, Hash: hash, From: from, To: to}); err != nil {
		logger.Info("The StorageVersion object changed under the migration", "from", from, "to", to, "reason", err.Error())
		return false, nil
	}
	path := "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(migrationapi.AnnotationStorageVersionResourceVersion, "~", "~0"), "/", "~1")
	patch, err := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": from},
		{"op": "replace", "path": path, "value": to},
	})
	if err != nil {
		return false, err
	}
	client := c.dyn.Resource(migrationapi.StorageVersionMigrations)
	u, err := client.Patch(ctx, m.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		if transientError(err) {
			return false, err
		}
		// The test fails when this run started from a cached migration older than a
		// move already made (by an earlier run): the migration is queued again by the
		// informer's update, and runs from the newer resourceVersion.
		if now, gerr := client.Get(ctx, m.Name, metav1.GetOptions{}); gerr == nil && now.GetUID() == m.UID &&
			now.GetAnnotations()[migrationapi.AnnotationStorageVersionResourceVersion] != from {
			logger.V(2).Info("The migration's StorageVersion guard had moved already", "from", from)
			return true, nil
		}
		logger.Info("Could not move the migration's StorageVersion guard", "from", from, "to", to, "err", err.Error())
		return false, nil
	}
	m.Annotations[migrationapi.AnnotationStorageVersionResourceVersion] = to
	w.obj = u
	logger.Info("StorageVersion guard moved forward: every revision in between agreed on the migration's version", "from", from, "to", to)
	c.recorder.Eventf(u, nil, "Normal", EventGuardMoved, "Migrate",
		"The resource's StorageVersion object moved from resourceVersion %s to %s; every revision in between had the API servers agree on %s, so the migration goes on from its checkpoint.",
		from, to, hashVersion(hash))
	return true, nil
}

// hashVersion is the version hash of a storage hash, for messages.
func hashVersion(h string) string {
	v, _ := wire.SplitStorageHash(h)
	return fmt.Sprintf("storage version hash %s", v)
}
