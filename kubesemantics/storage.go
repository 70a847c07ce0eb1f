package kubesemantics

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	storageapi "k8s.io/kubernetes/pkg/api/storage"
	"k8s.io/kubernetes/pkg/apis/storage"
	storagevalidation "k8s.io/kubernetes/pkg/apis/storage/validation"
	"k8s.io/kubernetes/pkg/features"

	_ "k8s.io/kubernetes/pkg/apis/storage/install" // storage's types, defaults and conversions
)

func init() { groups = append(groups, storageKinds) }

// tokenInSecretsWarning is kube's advice to a CSIDriver that requests service
// account tokens without saying where they go.
const tokenInSecretsWarning = "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"

// storageKinds are the strategies of group storage.k8s.io.
func storageKinds() map[schema.GroupResource]strategy {
	group := func(r string) schema.GroupResource {
		return schema.GroupResource{Group: storage.GroupName, Resource: r}
	}
	return map[schema.GroupResource]strategy{
		group("storageclasses"):          storageClassKind().erase(),
		group("csidrivers"):              csiDriverKind().erase(),
		group("csinodes"):                csiNodeKind().erase(),
		group("csistoragecapacities"):    csiStorageCapacityKind().erase(),
		group("volumeattachments"):       volumeAttachmentKind().erase(),
		group("volumeattributesclasses"): volumeAttributesClassKind().erase(),
	}
}

func storageClassKind() kind[*storage.StorageClass] {
	return kind[*storage.StorageClass]{
		validate: func(_ context.Context, sc *storage.StorageClass) field.ErrorList {
			return storagevalidation.ValidateStorageClass(sc)
		},
		warnCreate: func(_ context.Context, sc *storage.StorageClass) []string {
			return storageapi.GetWarningsForStorageClass(sc)
		},
		validateUpdate: func(_ context.Context, sc, old *storage.StorageClass) field.ErrorList {
			return append(storagevalidation.ValidateStorageClass(sc), storagevalidation.ValidateStorageClassUpdate(sc, old)...)
		},
		warnUpdate: func(_ context.Context, sc, _ *storage.StorageClass) []string {
			return storageapi.GetWarningsForStorageClass(sc)
		},
	}
}

func csiDriverKind() kind[*storage.CSIDriver] {
	return kind[*storage.CSIDriver]{
		prepareCreate: func(_ context.Context, d *storage.CSIDriver) { dropCSIDriverFields(&d.Spec, nil) },
		validate: func(_ context.Context, d *storage.CSIDriver) field.ErrorList {
			return storagevalidation.ValidateCSIDriver(d)
		},
		warnCreate: func(_ context.Context, d *storage.CSIDriver) []string { return tokenRequestWarnings(&d.Spec, nil) },
		prepareUpdate: func(_ context.Context, d, old *storage.CSIDriver) {
			dropCSIDriverFields(&d.Spec, &old.Spec)
			if !apiequality.Semantic.DeepEqual(d.Spec, old.Spec) {
				d.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, d, old *storage.CSIDriver) field.ErrorList {
			return storagevalidation.ValidateCSIDriverUpdate(d, old)
		},
		warnUpdate: func(_ context.Context, d, old *storage.CSIDriver) []string {
			return tokenRequestWarnings(&d.Spec, &old.Spec)
		},
	}
}

// dropCSIDriverFields clears the CSIDriver fields whose gate is off, unless the
// stored spec (old, nil on create) sets them.
func dropCSIDriverFields(spec, old *storage.CSIDriverSpec) {
	if old == nil {
		old = &storage.CSIDriverSpec{}
	}
	if !gateOrInUse(features.SELinuxMountReadWriteOncePod, old.SELinuxMount != nil) {
		spec.SELinuxMount = nil
	}
	if !gateOrInUse(features.MutableCSINodeAllocatableCount, old.NodeAllocatableUpdatePeriodSeconds != nil) {
		spec.NodeAllocatableUpdatePeriodSeconds = nil
	}
	if !gateOrInUse(features.CSIServiceAccountTokenSecrets, old.ServiceAccountTokenInSecrets != nil) {
		spec.ServiceAccountTokenInSecrets = nil
	}
	if !gateOrInUse(features.VolumeLimitScaling, old.PreventPodSchedulingIfMissing != nil) {
		spec.PreventPodSchedulingIfMissing = nil
	}
}

// tokenRequestWarnings warns of a CSIDriver that requests tokens (newly, on update:
// old non-nil) without serviceAccountTokenInSecrets.
func tokenRequestWarnings(spec, old *storage.CSIDriverSpec) []string {
	if !utilfeature.DefaultFeatureGate.Enabled(features.CSIServiceAccountTokenSecrets) ||
		len(spec.TokenRequests) == 0 || spec.ServiceAccountTokenInSecrets != nil {
		return nil
	}
	if old != nil && apiequality.Semantic.DeepEqual(spec.TokenRequests, old.TokenRequests) {
		return nil
	}
	return []string{tokenInSecretsWarning}
}

func csiNodeKind() kind[*storage.CSINode] {
	return kind[*storage.CSINode]{
		prepareCreate: func(_ context.Context, n *storage.CSINode) {
			n.Status = storage.CSINodeStatus{}
			dropStorageHealth(n, nil)
		},
		validate: func(_ context.Context, n *storage.CSINode) field.ErrorList {
			return storagevalidation.ValidateCSINode(n)
		},
		prepareUpdate: func(_ context.Context, n, old *storage.CSINode) {
			n.Status = old.Status
			dropStorageHealth(n, old)
		},
		validateUpdate: func(_ context.Context, n, old *storage.CSINode) field.ErrorList {
			return storagevalidation.ValidateCSINodeUpdate(n, old)
		},
		prepareStatus: func(_ context.Context, n, old *storage.CSINode) {
			n.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&n.ObjectMeta, &old.ObjectMeta)
			dropStorageHealth(n, old)
		},
		validateStatus: func(_ context.Context, n, old *storage.CSINode) field.ErrorList {
			return storagevalidation.ValidateCSINodeStatusUpdate(n, old)
		},
	}
}

// dropStorageHealth clears a CSINode's status.storageHealth while CSIVolumeHealth is
// off, unless the stored node (old, nil on create) reports some.
func dropStorageHealth(n, old *storage.CSINode) {
	if !gateOrInUse(features.CSIVolumeHealth, old != nil && len(old.Status.StorageHealth) > 0) {
		n.Status.StorageHealth = nil
	}
}

func csiStorageCapacityKind() kind[*storage.CSIStorageCapacity] {
	return kind[*storage.CSIStorageCapacity]{
		validate: func(_ context.Context, c *storage.CSIStorageCapacity) field.ErrorList {
			return storagevalidation.ValidateCSIStorageCapacity(c, storagevalidation.CSIStorageCapacityValidateOptions{})
		},
		warnCreate: func(_ context.Context, c *storage.CSIStorageCapacity) []string {
			return storageapi.GetWarningsForCSIStorageCapacity(c)
		},
		validateUpdate: func(_ context.Context, c, old *storage.CSIStorageCapacity) field.ErrorList {
			opts := storagevalidation.CSIStorageCapacityValidateOptions{AllowInvalidLabelValueInSelector: hasInvalidTopologyLabelValue(old)}
			return append(storagevalidation.ValidateCSIStorageCapacity(c, opts), storagevalidation.ValidateCSIStorageCapacityUpdate(c, old)...)
		},
		warnUpdate: func(_ context.Context, c, _ *storage.CSIStorageCapacity) []string {
			return storageapi.GetWarningsForCSIStorageCapacity(c)
		},
	}
}

// hasInvalidTopologyLabelValue reports whether a stored capacity's nodeTopology
// selector has a label value strict validation refuses: its updates may keep it.
func hasInvalidTopologyLabelValue(c *storage.CSIStorageCapacity) bool {
	strict := metav1validation.LabelSelectorValidationOptions{}
	return len(metav1validation.ValidateLabelSelector(c.NodeTopology, strict, nil)) > 0
}

func volumeAttachmentKind() kind[*storage.VolumeAttachment] {
	validateUpdate := func(_ context.Context, va, old *storage.VolumeAttachment) field.ErrorList {
		return storagevalidation.ValidateVolumeAttachmentUpdate(va, old)
	}
	return kind[*storage.VolumeAttachment]{
		prepareCreate: func(_ context.Context, va *storage.VolumeAttachment) { va.Status = storage.VolumeAttachmentStatus{} },
		validate: func(_ context.Context, va *storage.VolumeAttachment) field.ErrorList {
			return storagevalidation.ValidateVolumeAttachment(va)
		},
		prepareUpdate:  func(_ context.Context, va, old *storage.VolumeAttachment) { va.Status = old.Status },
		validateUpdate: validateUpdate,
		prepareStatus: func(_ context.Context, va, old *storage.VolumeAttachment) {
			va.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&va.ObjectMeta, &old.ObjectMeta)
			dropErrorCode(va.Status.AttachError, old.Status.AttachError)
			dropErrorCode(va.Status.DetachError, old.Status.DetachError)
		},
		// kube's status strategy validates as an update of the whole object does.
		validateStatus: validateUpdate,
	}
}

// dropErrorCode clears a VolumeAttachment error's errorCode while
// MutableCSINodeAllocatableCount is off, unless the stored error (old) has one.
func dropErrorCode(e, old *storage.VolumeError) {
	if e != nil && !gateOrInUse(features.MutableCSINodeAllocatableCount, old != nil && old.ErrorCode != nil) {
		e.ErrorCode = nil
	}
}

func volumeAttributesClassKind() kind[*storage.VolumeAttributesClass] {
	return kind[*storage.VolumeAttributesClass]{
		validate: func(_ context.Context, c *storage.VolumeAttributesClass) field.ErrorList {
			return storagevalidation.ValidateVolumeAttributesClass(c)
		},
		validateUpdate: func(_ context.Context, c, old *storage.VolumeAttributesClass) field.ErrorList {
			return storagevalidation.ValidateVolumeAttributesClassUpdate(c, old)
		},
	}
}
