package upgradecheck

import (
	"context"
	"fmt"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/versionskew"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

// Observed is what a cluster holds about its persisted resources, read by Read.
type Observed struct {
	States          map[schema.GroupResource]State
	StorageVersions map[schema.GroupResource]Encodings
	CRDs            map[schema.GroupResource]CRD
	Migrations      map[schema.GroupResource]Migration
	// Skew is the servers' VersionSkew report (nil: the cluster keeps none).
	Skew *versionskew.VersionSkew
}

// Read lists the cluster's StorageStates, StorageVersions, CustomResourceDefinitions
// and StorageVersionMigrations. A resource the server does not serve (the StorageState
// definition not installed, the StorageVersionAPI feature off) reads as none.
func Read(ctx context.Context, dyn dynamic.Interface) (*Observed, error) {
	o := &Observed{States: map[schema.GroupResource]State{}, StorageVersions: map[schema.GroupResource]Encodings{},
		CRDs: map[schema.GroupResource]CRD{}, Migrations: map[schema.GroupResource]Migration{}}
	readers := []struct {
		gvr  schema.GroupVersionResource
		read func(*unstructured.Unstructured) error
	}{
		{migrationapi.StorageStates, o.addState},
		{migrationapi.StorageVersions, o.addStorageVersion},
		{migrationapi.CustomResourceDefinitions, o.addCRD},
		{migrationapi.StorageVersionMigrations, o.addMigration},
	}
	logger := klog.FromContext(ctx)
	for _, r := range readers {
		list, err := dyn.Resource(r.gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			logger.V(2).Info("Not served; read as none", "resource", r.gvr)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", r.gvr.GroupResource(), err)
		}
		for i := range list.Items {
			if err := r.read(&list.Items[i]); err != nil {
				return nil, err
			}
		}
	}
	skew, err := readSkew(ctx, dyn)
	if err != nil {
		return nil, err
	}
	o.Skew = skew
	logger.V(2).Info("Read the cluster", "storageStates", len(o.States), "storageVersions", len(o.StorageVersions), "crds", len(o.CRDs))
	return o, nil
}

func (o *Observed) addState(u *unstructured.Unstructured) error {
	s, err := migrationapi.StateFrom(u)
	if err != nil {
		return err
	}
	gr := schema.GroupResource{Group: s.Spec.Resource.Group, Resource: s.Spec.Resource.Resource}
	st := State{Heartbeat: s.Status.LastHeartbeatTime.Time}
	for _, h := range s.Status.PersistedStorageVersionHashes {
		if h == migrationapi.Unknown {
			st.Persisted = appendMissing(st.Persisted, h)
			st.PersistedKeys = appendMissing(st.PersistedKeys, h)
			continue
		}
		v, k := wire.SplitStorageHash(h)
		st.Persisted = appendMissing(st.Persisted, v)
		st.PersistedKeys = appendMissing(st.PersistedKeys, k)
	}
	st.Current, _ = wire.SplitStorageHash(s.Status.CurrentStorageVersionHash)
	o.States[gr] = st
	return nil
}

func (o *Observed) addStorageVersion(u *unstructured.Unstructured) error {
	gr, ok := wire.ParseStorageVersionName(u.GetName())
	if !ok {
		return nil // not a resource's
	}
	sv := &apiserverinternalv1alpha1.StorageVersion{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sv); err != nil {
		return fmt.Errorf("decoding StorageVersion %s: %w", u.GetName(), err)
	}
	keys, err := wire.ParseEncryptionKeys(u.GetAnnotations()[wire.AnnotationEncryptionKeys])
	if err != nil {
		return fmt.Errorf("StorageVersion %s: %w", u.GetName(), err)
	}
	e := Encodings{Servers: map[string]string{}, Keys: keys}
	if sv.Status.CommonEncodingVersion != nil {
		e.Common = *sv.Status.CommonEncodingVersion
	}
	for _, entry := range sv.Status.StorageVersions {
		e.Servers[entry.APIServerID] = entry.EncodingVersion
	}
	o.StorageVersions[gr] = e
	return nil
}

func (o *Observed) addCRD(u *unstructured.Unstructured) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return fmt.Errorf("decoding CustomResourceDefinition %s: %w", u.GetName(), err)
	}
	c := CRD{Kind: crd.Spec.Names.Kind, StoredVersions: crd.Status.StoredVersions}
	for _, v := range crd.Spec.Versions {
		c.Versions = append(c.Versions, v.Name)
		if v.Storage {
			c.StorageVersion = v.Name
		}
	}
	o.CRDs[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}] = c
	return nil
}

// addMigration keeps the latest migration of each resource (by creation, then name).
func (o *Observed) addMigration(u *unstructured.Unstructured) error {
	m, err := migrationapi.MigrationFrom(u)
	if err != nil {
		return err
	}
	gr := schema.GroupResource{Group: m.Spec.Resource.Group, Resource: m.Spec.Resource.Resource}
	created := m.CreationTimestamp.Time
	if prev, ok := o.Migrations[gr]; ok && (prev.created.After(created) || prev.created.Equal(created) && prev.Name > m.Name) {
		return nil
	}
	mig := Migration{Name: m.Name, Phase: m.Phase(), created: created}
	if m.Terminal() {
		if c := migrationapi.FindCondition(m.Status.Conditions, mig.Phase); c != nil {
			mig.Reason = c.Reason
		}
	}
	o.Migrations[gr] = mig
	return nil
}

// readSkew reads the VersionSkew report; nil when the cluster does not serve or keep
// one.
func readSkew(ctx context.Context, dyn dynamic.Interface) (*versionskew.VersionSkew, error) {
	u, err := dyn.Resource(versionskew.GroupVersion.WithResource(versionskew.GroupResource.Resource)).Get(ctx, versionskew.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the VersionSkew report: %w", err)
	}
	out := &versionskew.VersionSkew{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("reading the VersionSkew report: %w", err)
	}
	return out, nil
}
