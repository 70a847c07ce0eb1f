package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	migrationapi "github.com/concordproject/concord/migration/api"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientdiscovery "k8s.io/client-go/discovery"
)

// MigrationAPI says what serves storagemigration.k8s.io/v1 storageversionmigrations,
// the API the migration controllers record migrations in.
type MigrationAPI string

const (
	// MigrationAPINotServed means nothing serves it (Kubernetes before 1.37, or with
	// the API disabled or emulating an older release, and no definition installed).
	MigrationAPINotServed MigrationAPI = "NotServed"
	// MigrationAPIConcord means it is served as Concord defines it, by Concord's own
	// API server or by the CustomResourceDefinition Concord installs: status.progress
	// is kept.
	MigrationAPIConcord MigrationAPI = "Concord"
	// MigrationAPIBuiltIn means a server's built-in API serves it (Kubernetes 1.37 and
	// later), which keeps only Kubernetes' status: conditions and resourceVersion. It
	// shadows a definition of the same group-version, if one is installed.
	MigrationAPIBuiltIn MigrationAPI = "BuiltIn"
)

// KeepsProgress reports whether the API keeps Concord's status.progress.
func (a MigrationAPI) KeepsProgress() bool { return a == MigrationAPIConcord }

// tableAccept asks for a list as a meta.k8s.io/v1 Table.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// ProbeMigrationAPI tells what serves the StorageVersionMigration API of the server
// disc talks to.
//
// Discovery tells whether the resource is served, not by what: Kubernetes routes a
// group-version it serves built in to its own handler before any definition of the
// same name, and lists the resource alike. How the server prints the resource tells
// them apart: Concord's definition (migrationapi.StorageVersionMigrationCRD, the one
// Concord's server serves and the one it installs) has printer columns of
// status.progress, which a built-in API that drops status.progress cannot have. The
// probe lists at most one migration, as a Table without objects.
func ProbeMigrationAPI(ctx context.Context, disc clientdiscovery.DiscoveryInterface) (MigrationAPI, error) {
	gvr := migrationapi.StorageVersionMigrations
	list, err := disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return MigrationAPINotServed, nil
	case err != nil:
		return "", fmt.Errorf("discovery of %s: %w", gvr.GroupVersion(), err)
	case !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }):
		return MigrationAPINotServed, nil
	}
	data, err := disc.RESTClient().Get().AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).
		Param("limit", "1").Param("includeObject", string(metav1.IncludeNone)).
		SetHeader("Accept", tableAccept).Do(ctx).Raw()
	switch {
	case apierrors.IsNotFound(err):
		return MigrationAPINotServed, nil // gone since discovery answered
	case apierrors.IsNotAcceptable(err):
		return MigrationAPIBuiltIn, nil // no Table: not a definition, nor Concord's
	case err != nil:
		return "", fmt.Errorf("listing %s as a table: %w", gvr.GroupResource(), err)
	}
	var table metav1.Table
	if err := json.Unmarshal(data, &table); err != nil {
		return "", fmt.Errorf("decoding the table of %s: %w", gvr.GroupResource(), err)
	}
	progress := progressColumns()
	for _, c := range table.ColumnDefinitions {
		if progress[c.Name] {
			return MigrationAPIConcord, nil
		}
	}
	return MigrationAPIBuiltIn, nil
}

// progressColumns are the names of the printer columns of Concord's definition that
// print status.progress.
func progressColumns() map[string]bool {
	out := map[string]bool{}
	for _, v := range migrationapi.StorageVersionMigrationCRD().Spec.Versions {
		for _, c := range v.AdditionalPrinterColumns {
			if strings.HasPrefix(c.JSONPath, ".status.progress.") {
				out[c.Name] = true
			}
		}
	}
	return out
}
