package kubesemantics

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kubernetes/pkg/apis/storage"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
)

func TestStorageClasses(t *testing.T) {
	g := rigHand(t, nil, "storage.k8s.io", "v1", "StorageClass", "storageclasses", false, false)
	const manifest = `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/csi
`
	sc, errs, _ := g.create("v1", manifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, sc, "reclaimPolicy", "Delete") // kube's defaults
	rigWant(t, sc, "volumeBindingMode", "Immediate")

	_, errs, _ = g.create("v1", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: x}\nprovisioner: \"\"\nreclaimPolicy: Keep\n")
	rigWantErrs(t, "invalid", errs, "provisioner: Required value", "reclaimPolicy: Unsupported value")

	_, _, warnings := g.create("v1", `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: old}
provisioner: example.com/csi
allowedTopologies: [{matchLabelExpressions: [{key: failure-domain.beta.kubernetes.io/zone, values: [a]}]}]
`)
	rigWantWarnings(t, "deprecated topology label", warnings, "allowedTopologies[0].matchLabelExpressions[0].key")

	stored := g.mustCreate("v1", manifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { o["provisioner"] = "example.com/other" })
	rigWantErrs(t, "provisioner change", errs, "provisioner: Invalid value")
}

const csiDriverManifest = `
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi.example.com}
spec:
  attachRequired: true
  tokenRequests: [{audience: example}]
`

func TestCSIDrivers(t *testing.T) {
	g := rigHand(t, nil, "storage.k8s.io", "v1", "CSIDriver", "csidrivers", false, false)
	d, errs, warnings := g.create("v1", csiDriverManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, d, "metadata.generation", nil)
	rigWant(t, d, "spec.podInfoOnMount", false) // kube's defaults
	rigWant(t, d, "spec.fsGroupPolicy", "ReadWriteOnceWithFSType")
	rigWantWarnings(t, "token requests", warnings, "spec.serviceAccountTokenInSecrets is unset")

	_, errs, _ = g.create("v1", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: csi.example.com}\nspec: {attachRequired: true, volumeLifecycleModes: [Forever]}\n")
	rigWantErrs(t, "invalid", errs, "spec.volumeLifecycleModes: Unsupported value")

	stored := g.mustCreate("v1", csiDriverManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.attachRequired", false) })
	rigWantErrs(t, "attachRequired change", errs, "spec.attachedRequired: Invalid value") // sic: kube's path
	up, errs, warnings := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.requiresRepublish", true) })
	rigWantErrs(t, "requiresRepublish change", errs)
	rigWant(t, up, "metadata.generation", 1)
	rigWantWarnings(t, "token requests unchanged", warnings)
}

func TestCSIDriverFields(t *testing.T) {
	full := storage.CSIDriverSpec{
		SELinuxMount: ptr.To(true), NodeAllocatableUpdatePeriodSeconds: ptr.To[int64](60),
		ServiceAccountTokenInSecrets: ptr.To(true), PreventPodSchedulingIfMissing: ptr.To(true),
	}
	// Two of the gates are locked on at 1.37.
	off := rigGatesAt(t, "1.35", map[string]bool{
		string(features.MutableCSINodeAllocatableCount): false, string(features.CSIServiceAccountTokenSecrets): false,
		string(features.VolumeLimitScaling): false, string(features.SELinuxMountReadWriteOncePod): true,
	})
	spec := full.DeepCopy()
	off.Do(func() { dropCSIDriverFields(spec, nil) })
	if spec.NodeAllocatableUpdatePeriodSeconds != nil || spec.ServiceAccountTokenInSecrets != nil || spec.PreventPodSchedulingIfMissing != nil {
		t.Errorf("fields of disabled gates kept: %+v", spec)
	}
	if spec.SELinuxMount == nil {
		t.Error("seLinuxMount dropped with SELinuxMountReadWriteOncePod on")
	}
	spec = full.DeepCopy()
	off.Do(func() { dropCSIDriverFields(spec, full.DeepCopy()) })
	if spec.NodeAllocatableUpdatePeriodSeconds == nil || spec.ServiceAccountTokenInSecrets == nil || spec.PreventPodSchedulingIfMissing == nil {
		t.Errorf("fields the stored driver sets dropped: %+v", spec)
	}

	withTokens := &storage.CSIDriverSpec{TokenRequests: []storage.TokenRequest{{Audience: "a"}}}
	var create, unchanged, changed, off2 []string
	rigGates(t, nil).Do(func() {
		create = tokenRequestWarnings(withTokens, nil)
		unchanged = tokenRequestWarnings(withTokens, withTokens)
		changed = tokenRequestWarnings(withTokens, &storage.CSIDriverSpec{})
	})
	off.Do(func() { off2 = tokenRequestWarnings(withTokens, nil) })
	if len(create) != 1 || len(unchanged) != 0 || len(changed) != 1 || len(off2) != 0 {
		t.Errorf("token warnings: create %q, unchanged %q, changed %q, gate off %q", create, unchanged, changed, off2)
	}
}

const csiNodeManifest = `
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec:
  drivers: [{name: csi.example.com, nodeID: node-1, topologyKeys: [zone]}]
`

func TestCSINodes(t *testing.T) {
	g := rigCatalog(t, nil, "storage.k8s.io", "csinodes")
	n, errs, _ := g.create("v1", csiNodeManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, n, "status", map[string]any{})

	_, errs, _ = g.create("v1", "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: node-1}\nspec: {drivers: [{name: csi.example.com, nodeID: \"\"}, {name: csi.example.com, nodeID: node-2}]}\n")
	rigWantErrs(t, "invalid", errs, "spec.drivers[0].nodeID: Required value", "spec.drivers[1].name: Duplicate value")

	stored := g.mustCreate("v1", csiNodeManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) {
		rigSet(o, "spec.drivers", []any{map[string]any{"name": "csi.example.com", "nodeID": "other", "topologyKeys": []any{"zone"}}})
	})
	rigWantErrs(t, "nodeID change", errs, "spec.drivers: Invalid value")
	up, errs, _ := g.update("v1", "status", stored, func(o map[string]any) { rigSet(o, "metadata.labels", map[string]any{"a": "b"}) })
	rigWantErrs(t, "status update", errs)
	rigWant(t, up, "metadata.labels", nil)
}

// TestCSINodeStatusNewIn137: at minimum compatibility 1.36, where a CSINode has no
// status, creates and updates write none (kube's type would write an empty one).
func TestCSINodeStatusNewIn137(t *testing.T) {
	// CSIVolumeHealth on, so that a status may hold something.
	g := rigCatalogAt(t, rigGates(t, map[string]bool{string(features.CSIVolumeHealth): true}), "storage.k8s.io", "csinodes", version.MustParse("1.36"))
	n := g.object(csiNodeManifest)
	if err := g.r.Default("v1", n); err != nil {
		t.Fatal(err)
	}
	if err := g.r.ValidateCreate(t.Context(), "v1", n); err != nil {
		t.Fatalf("creating a CSINode at minimum compatibility 1.36: %v", err)
	}
	rigWant(t, n, "status", nil)
	n.SetResourceVersion("1")
	up := n.DeepCopy()
	up.SetLabels(map[string]string{"a": "b"})
	if err := g.r.ValidateUpdate(t.Context(), "v1", "", up, n); err != nil {
		t.Fatalf("updating it: %v", err)
	}
	rigWant(t, up, "status", nil)
	st := g.object(csiNodeManifest + "status: {storageHealth: [{driverName: d}]}\n")
	st.SetResourceVersion("1")
	st.SetUID(n.GetUID())
	if err := g.r.ValidateUpdate(t.Context(), "v1", "status", st, n); err == nil || !strings.Contains(err.Error(), "status: Forbidden: storage.k8s.io/v1 field introduced in release 1.37") {
		t.Errorf("writing a status at minimum compatibility 1.36: %v, want it refused", err)
	}
}

func TestCSINodeStorageHealth(t *testing.T) {
	n := &storage.CSINode{Status: storage.CSINodeStatus{StorageHealth: []storage.StorageHealth{{}}}}
	old := n.DeepCopy()
	off := rigGates(t, map[string]bool{string(features.CSIVolumeHealth): false})
	off.Do(func() { dropStorageHealth(n, old) })
	if n.Status.StorageHealth == nil {
		t.Error("storage health the stored node reports dropped")
	}
	off.Do(func() { dropStorageHealth(n, nil) })
	if n.Status.StorageHealth != nil {
		t.Error("storage health kept with CSIVolumeHealth off")
	}
}

func TestCSIStorageCapacities(t *testing.T) {
	g := rigHand(t, nil, "storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", true, false)
	const manifest = `
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: cap, namespace: default}
storageClassName: fast
nodeTopology: {matchLabels: {zone: a}}
capacity: 10Gi
`
	_, errs, _ := g.create("v1", manifest)
	rigWantErrs(t, "valid", errs)
	_, errs, _ = g.create("v1", "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: cap, namespace: default}\nstorageClassName: \"\"\ncapacity: -1Gi\n")
	rigWantErrs(t, "invalid", errs, "storageClassName: Invalid value", "capacity: Invalid value")
	stored := g.mustCreate("v1", manifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { o["storageClassName"] = "slow" })
	rigWantErrs(t, "class change", errs, "storageClassName: Invalid value")

	bad := &storage.CSIStorageCapacity{NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "not a value"}}}
	if !hasInvalidTopologyLabelValue(bad) || hasInvalidTopologyLabelValue(&storage.CSIStorageCapacity{}) {
		t.Error("hasInvalidTopologyLabelValue: wrong answer")
	}
}

const volumeAttachmentManifest = `
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va}
spec: {attacher: csi.example.com, nodeName: node-1, source: {persistentVolumeName: pv}}
status: {attached: true}
`

func TestVolumeAttachments(t *testing.T) {
	g := rigHand(t, nil, "storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", false, true)
	va, errs, _ := g.create("v1", volumeAttachmentManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, va, "status", map[string]any{"attached": false})

	_, errs, _ = g.create("v1", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va}\nspec: {attacher: \"\", nodeName: node-1, source: {}}\n")
	rigWantErrs(t, "invalid", errs, "spec.attacher: Required value", "spec.source: Required value")

	stored := g.mustCreate("v1", volumeAttachmentManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.nodeName", "node-2") })
	rigWantErrs(t, "spec change", errs, "spec: Invalid value")
	up, errs, _ := g.update("v1", "status", stored, func(o map[string]any) {
		rigSet(o, "status.attached", true)
		rigSet(o, "spec.nodeName", "ignored")
	})
	rigWantErrs(t, "status update", errs)
	rigWant(t, up, "status.attached", true)
	rigWant(t, up, "spec.nodeName", "node-1")
}

func TestVolumeAttachmentErrorCode(t *testing.T) {
	e := &storage.VolumeError{ErrorCode: ptr.To[int32](5)}
	off := rigGatesAt(t, "1.35", map[string]bool{string(features.MutableCSINodeAllocatableCount): false})
	off.Do(func() { dropErrorCode(e, &storage.VolumeError{ErrorCode: ptr.To[int32](1)}) })
	if e.ErrorCode == nil {
		t.Error("errorCode dropped though the stored error has one")
	}
	off.Do(func() { dropErrorCode(e, nil) })
	if e.ErrorCode != nil {
		t.Error("errorCode kept with MutableCSINodeAllocatableCount off")
	}
	off.Do(func() { dropErrorCode(nil, nil) }) // no error: nothing to do
}

func TestVolumeAttributesClasses(t *testing.T) {
	g := rigHand(t, nil, "storage.k8s.io", "v1", "VolumeAttributesClass", "volumeattributesclasses", false, false)
	const manifest = "apiVersion: storage.k8s.io/v1\nkind: VolumeAttributesClass\nmetadata: {name: gold}\ndriverName: csi.example.com\nparameters: {iops: \"100\"}\n"
	_, errs, _ := g.create("v1", manifest)
	rigWantErrs(t, "valid", errs)
	_, errs, _ = g.create("v1", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttributesClass\nmetadata: {name: gold}\ndriverName: \"\"\n")
	rigWantErrs(t, "invalid", errs, "driverName: Required value", "parameters: Required value")
	stored := g.mustCreate("v1", manifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "parameters.iops", "200") })
	rigWantErrs(t, "parameters change", errs, "parameters: Forbidden")
}
