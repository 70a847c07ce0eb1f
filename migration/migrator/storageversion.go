package migrator

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// storageVersionsPath is where StorageVersion objects are served.
const storageVersionsPath = "/apis/internal.apiserver.k8s.io/v1alpha1/storageversions/"

// checkStorageVersion returns an error wrapping ErrStorageVersionChanged if the
// StorageVersion object of res is no longer at res.StorageVersion (or is gone); nil if
// it is, or if res names none.
func (m *Migrator) checkStorageVersion(ctx context.Context, res Resource) error {
	if res.StorageVersion == "" {
		return nil
	}
	name := wire.StorageVersionName(res.GroupResource())
	var rv string
	err := m.retry(ctx, func(ctx context.Context) error {
		data, err := send(ctx, m.client.Get().AbsPath(storageVersionsPath+name).MaxRetries(0))
		if err != nil {
			return err
		}
		rv, err = resourceVersionOf(data)
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: StorageVersion %s was deleted", ErrStorageVersionChanged, name)
	case err != nil:
		return fmt.Errorf("reading StorageVersion %s: %w", name, err)
	case rv != res.StorageVersion:
		return storageVersionChanged(name, res.StorageVersion, rv)
	}
	return nil
}

// storageVersionChanged is the error of a migration stopped because StorageVersion
// name moved from resourceVersion from (to now, if known).
func storageVersionChanged(name, from, now string) error {
	if now == "" {
		return fmt.Errorf("%w: StorageVersion %s is no longer at resourceVersion %s", ErrStorageVersionChanged, name, from)
	}
	return fmt.Errorf("%w: StorageVersion %s moved from resourceVersion %s to %s", ErrStorageVersionChanged, name, from, now)
}
