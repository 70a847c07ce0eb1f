package kubesemantics

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/apis/resource"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
)

const deviceClassManifest = `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
`

func TestDeviceClasses(t *testing.T) {
	g := rigHand(t, nil, "resource.k8s.io", "v1", "DeviceClass", "deviceclasses", false, false)
	c, errs, _ := g.create("v1", deviceClassManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, c, "metadata.generation", 1)

	_, errs, _ = g.create("v1", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec: {selectors: [{cel: {expression: 'device.nosuch'}}]}\n")
	rigWantErrs(t, "bad CEL", errs, "spec.selectors[0].cel.expression: Invalid value")

	stored := g.mustCreate("v1", deviceClassManifest)
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) {
		rigSet(o, "spec.selectors", []any{map[string]any{"cel": map[string]any{"expression": "true"}}})
	})
	rigWantErrs(t, "selector change", errs)
	rigWant(t, up, "metadata.generation", 2)

	dc := &resource.DeviceClass{Spec: resource.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/gpu")}}
	rigGatesAt(t, "1.36", map[string]bool{string(features.DRAExtendedResource): false}).Do(func() { dropExtendedResourceName(dc, nil) })
	if dc.Spec.ExtendedResourceName != nil {
		t.Error("extendedResourceName kept with DRAExtendedResource off")
	}
}

const resourceClaimManifest = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
status: {reservedFor: [{resource: pods, name: p, uid: "1"}]}
`

const resourceClaimAllocation = `{"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}, "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}`

func TestResourceClaims(t *testing.T) {
	g := rigHand(t, nil, "resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", true, true)
	c, errs, _ := g.create("v1", resourceClaimManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, c, "status", map[string]any{})
	rigWant(t, c, "spec.devices.requests", []any{map[string]any{"name": "gpu", "exactly": map[string]any{"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": int64(1)}}})

	_, errs, _ = g.create("v1", "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: gpu, namespace: default}\nspec: {devices: {requests: [{name: Not_A_Name, exactly: {deviceClassName: gpu}}]}}\n")
	rigWantErrs(t, "bad request name", errs, "spec.devices.requests[0].name: Invalid value")

	stored := g.mustCreate("v1", resourceClaimManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) {
		rigSet(o, "spec.devices.requests", []any{map[string]any{"name": "other", "exactly": map[string]any{"deviceClassName": "gpu"}}})
	})
	rigWantErrs(t, "spec change", errs, "spec: Invalid value")
	_, errs, _ = g.update("v1", "status", stored, func(o map[string]any) {
		rigSet(o, "status.reservedFor", []any{map[string]any{"resource": "pods", "name": "p", "uid": "1"}})
	})
	rigWantErrs(t, "reserved without allocation", errs, "status.reservedFor: Forbidden")
	var allocation map[string]any
	if err := json.Unmarshal([]byte(resourceClaimAllocation), &allocation); err != nil {
		t.Fatal(err)
	}
	up, errs, _ := g.update("v1", "status", stored, func(o map[string]any) {
		rigSet(o, "status.allocation", allocation)
		rigSet(o, "status.reservedFor", []any{map[string]any{"resource": "pods", "name": "p", "uid": "1"}})
		rigSet(o, "metadata.labels", map[string]any{"a": "b"})
	})
	rigWantErrs(t, "status update", errs)
	rigWant(t, up, "status.reservedFor", []any{map[string]any{"resource": "pods", "name": "p", "uid": "1"}})
	rigWant(t, up, "metadata.labels", nil)
}

func TestResourceClaimTemplates(t *testing.T) {
	g := rigHand(t, nil, "resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", true, false)
	const manifest = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu, namespace: default}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
`
	_, errs, _ := g.create("v1", manifest)
	rigWantErrs(t, "valid", errs)
	_, errs, _ = g.create("v1", "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: gpu, namespace: default}\nspec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: \"\"}}]}}}\n")
	rigWantErrs(t, "no class", errs, "spec.spec.devices.requests[0].exactly.deviceClassName: Required value")
	stored := g.mustCreate("v1", manifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.metadata", map[string]any{"labels": map[string]any{"a": "b"}}) })
	rigWantErrs(t, "spec change", errs, "spec: Invalid value")
}

const resourceSliceManifest = `
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices: [{name: gpu-0}]
`

func TestResourceSlices(t *testing.T) {
	g := rigHand(t, nil, "resource.k8s.io", "v1", "ResourceSlice", "resourceslices", false, false)
	s, errs, warnings := g.create("v1", resourceSliceManifest)
	rigWantErrs(t, "valid", errs)
	rigWantWarnings(t, "valid", warnings)
	rigWant(t, s, "metadata.generation", 1)

	_, errs, _ = g.create("v1", `
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec: {driver: gpu.example.com, pool: {name: p, generation: 1, resourceSliceCount: 0}, devices: [{name: gpu-0}]}
`)
	if len(errs) == 0 {
		t.Error("a slice with no node choice and a pool of 0 slices was accepted")
	}

	stored := g.mustCreate("v1", resourceSliceManifest)
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.pool.generation", int64(2)) })
	rigWantErrs(t, "pool generation", errs)
	rigWant(t, up, "metadata.generation", 2)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.driver", "other.example.com") })
	rigWantErrs(t, "driver change", errs, "spec.driver: Invalid value")

	if w := driverNameWarnings(&resource.ResourceSlice{Spec: resource.ResourceSliceSpec{Driver: "GPU.example.com"}}); len(w) != 1 {
		t.Errorf("capitals in the driver name: warnings %q, want one", w)
	}
}

func TestDeviceTaintRules(t *testing.T) {
	g := rigHand(t, nil, "resource.k8s.io", "v1", "DeviceTaintRule", "devicetaintrules", false, true)
	const manifest = `
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: maintenance}
spec:
  deviceSelector: {driver: gpu.example.com}
  taint: {key: example.com/maintenance, effect: NoSchedule}
`
	r, errs, _ := g.create("v1", manifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, r, "metadata.generation", 1)
	_, errs, _ = g.create("v1", "apiVersion: resource.k8s.io/v1\nkind: DeviceTaintRule\nmetadata: {name: m}\nspec: {taint: {key: example.com/m, effect: Sometimes}}\n")
	rigWantErrs(t, "bad effect", errs, "spec.taint.effect: Unsupported value")

	stored := g.mustCreate("v1", manifest)
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.taint.effect", "NoExecute") })
	rigWantErrs(t, "effect change", errs)
	rigWant(t, up, "metadata.generation", 2)
	if ts, _, _ := unstructuredString(up.Object, "spec", "taint", "timeAdded"); ts == "" {
		t.Error("an effect change left timeAdded unset")
	}
}

func TestRestampTaint(t *testing.T) {
	then := &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	now := time.Date(2026, 2, 1, 0, 0, 0, 500, time.UTC)
	old := &resource.DeviceTaint{Effect: resource.DeviceTaintEffectNoSchedule, TimeAdded: then}
	for name, c := range map[string]struct {
		taint resource.DeviceTaint
		want  *metav1.Time
	}{
		"effect changed":          {resource.DeviceTaint{Effect: resource.DeviceTaintEffectNoExecute, TimeAdded: then}, &metav1.Time{Time: now.Truncate(time.Second)}},
		"effect and time changed": {resource.DeviceTaint{Effect: resource.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{}}, &metav1.Time{}},
		"effect unchanged":        {resource.DeviceTaint{Effect: resource.DeviceTaintEffectNoSchedule, TimeAdded: then}, then},
	} {
		restampTaint(&c.taint, old, now)
		if !c.taint.TimeAdded.Equal(c.want) {
			t.Errorf("%s: timeAdded %v, want %v", name, c.taint.TimeAdded, c.want)
		}
	}
}

func TestResourcePoolStatusRequests(t *testing.T) {
	g := rigHand(t, rigGates(t, map[string]bool{string(features.DRAResourcePoolStatus): true}),
		"resource.k8s.io", "v1alpha3", "ResourcePoolStatusRequest", "resourcepoolstatusrequests", false, true)
	const manifest = "apiVersion: resource.k8s.io/v1alpha3\nkind: ResourcePoolStatusRequest\nmetadata: {name: r}\nspec: {driver: gpu.example.com, defaultPartitionTypeAttribute: x}\n"
	r, errs, _ := g.create("v1alpha3", manifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, r, "spec.defaultPartitionTypeAttribute", nil) // DRAPartitionableDevicesType is off
	_, errs, _ = g.create("v1alpha3", "apiVersion: resource.k8s.io/v1alpha3\nkind: ResourcePoolStatusRequest\nmetadata: {name: r}\nspec: {driver: \"\"}\n")
	rigWantErrs(t, "no driver", errs, "spec.driver: Required value")
	stored := g.mustCreate("v1alpha3", manifest)
	_, errs, _ = g.update("v1alpha3", "", stored, func(o map[string]any) { rigSet(o, "spec.driver", "other.example.com") })
	if len(errs) == 0 {
		t.Error("a change of the request's driver was accepted")
	}
}

// TestSliceGates: each gated field of a ResourceSlice is dropped while its gate is
// off, and kept when the stored slice uses it.
func TestSliceGates(t *testing.T) {
	full := func() *resource.ResourceSliceSpec {
		return &resource.ResourceSliceSpec{
			SharedCounters: []resource.CounterSet{{Name: "c"}}, PartitionTypeAttribute: ptr.To(resource.FullyQualifiedName("a/b")),
			SkipNodeOperations: []resource.SkipNodeOperation{"x"},
			Devices: []resource.Device{{
				Name: "d", Taints: []resource.DeviceTaint{{Key: "k"}}, BindsToNode: ptr.To(true), AllowMultipleAllocations: ptr.To(true),
				Capacity:         map[resource.QualifiedName]resource.DeviceCapacity{"mem": {RequestPolicy: &resource.CapacityRequestPolicy{}}},
				ConsumesCounters: []resource.DeviceCounterConsumption{{CounterSet: "c", CompatibilityGroups: []string{"g"}}},
				Attributes:       map[resource.QualifiedName]resource.DeviceAttribute{"l": {IntValues: []int64{1}}, "s": {StringValue: ptr.To("v")}},
			}},
		}
	}
	// At 1.36 every gate here is off, by default or set so (the three not yet
	// there are off).
	gates := rigGatesAt(t, "1.36", map[string]bool{
		"DRADeviceTaints": false, "DRAPartitionableDevices": false, "DRADeviceBindingConditions": false, "DRAConsumableCapacity": false,
		"DRANodeAllocatableResources": false, "DRAListTypeAttributes": false,
	})
	for _, f := range []string{"DRADeviceCompatibilityGroups", "DRAOptionalNodeOperations", "DRAPartitionableDevicesType"} {
		if gates.Enabled(featuregate.Feature(f)) {
			t.Fatalf("%s is on at 1.36", f)
		}
	}
	s := full()
	gates.Do(func() { dropSliceFields(s, nil) })
	d := s.Devices[0]
	if s.SharedCounters != nil || s.PartitionTypeAttribute != nil || s.SkipNodeOperations != nil || d.Taints != nil || d.BindsToNode != nil ||
		d.AllowMultipleAllocations != nil || d.Capacity["mem"].RequestPolicy != nil || d.ConsumesCounters != nil || d.Attributes["l"].IntValues != nil {
		t.Errorf("gated fields kept with their gates off: %+v", s)
	}
	if d.Attributes["s"].StringValue == nil {
		t.Error("a scalar attribute was dropped")
	}
	s = full()
	gates.Do(func() { dropSliceFields(s, full()) })
	if s.SharedCounters == nil || s.Devices[0].Taints == nil || s.Devices[0].Attributes["l"].IntValues == nil || s.Devices[0].Capacity["mem"].RequestPolicy == nil {
		t.Errorf("gated fields the stored slice uses dropped: %+v", s)
	}
}

// TestClaimStatusGates: the gated fields of a claim's status, and the device status
// of devices no longer allocated.
func TestClaimStatusGates(t *testing.T) {
	share := types.UID("s1")
	claim := func() *resource.ResourceClaim {
		return &resource.ResourceClaim{Status: resource.ResourceClaimStatus{
			Allocation: &resource.AllocationResult{Devices: resource.DeviceAllocationResult{Results: []resource.DeviceRequestAllocationResult{{
				Driver: "d", Pool: "p", Device: "a", AdminAccess: ptr.To(true), ShareID: &share,
				BindingConditions: []string{"c"}, SkipNodeOperations: []resource.SkipNodeOperation{"x"},
			}}}},
			Devices: []resource.AllocatedDeviceStatus{{Driver: "d", Pool: "p", Device: "a", ShareID: ptr.To("s1")}},
		}}
	}
	// DRAAdminAccess is locked on at 1.36: its field stays.
	off := rigGatesAt(t, "1.36", map[string]bool{
		"DRAResourceClaimDeviceStatus": false, "DRAConsumableCapacity": false, "DRADeviceBindingConditions": false,
	})
	c := claim()
	off.Do(func() { dropClaimStatusFields(c, &resource.ResourceClaim{}) })
	r := c.Status.Allocation.Devices.Results[0]
	if c.Status.Devices != nil || r.AdminAccess == nil || r.ShareID != nil || r.BindingConditions != nil || r.SkipNodeOperations != nil {
		t.Errorf("gated status fields kept: %+v", c.Status)
	}
	c = claim()
	off.Do(func() { dropClaimStatusFields(c, claim()) })
	if r := c.Status.Allocation.Devices.Results[0]; c.Status.Devices == nil || r.ShareID == nil || r.BindingConditions == nil || r.SkipNodeOperations == nil {
		t.Errorf("gated status fields the stored claim uses dropped: %+v", c.Status)
	}

	// Deallocation: the status of device a (share s1) goes with its allocation; a
	// device still allocated keeps its status.
	old := claim()
	c = claim()
	c.Status.Allocation = nil
	c.Status.Devices = append(c.Status.Devices, resource.AllocatedDeviceStatus{Driver: "d", Pool: "p", Device: "b"})
	rigGates(t, nil).Do(func() { dropDeallocatedDevices(c, old) })
	if len(c.Status.Devices) != 1 || c.Status.Devices[0].Device != "b" {
		t.Errorf("device status after deallocation: %+v, want b's alone", c.Status.Devices)
	}
	c = claim()
	rigGates(t, nil).Do(func() { dropDeallocatedDevices(c, claim()) })
	if len(c.Status.Devices) != 1 {
		t.Errorf("device status of a device still allocated dropped: %+v", c.Status.Devices)
	}
}

// unstructuredString is the string at path of obj.
func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	cur := any(obj)
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[k]
	}
	s, ok := cur.(string)
	return s, ok, nil
}
