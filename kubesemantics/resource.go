package kubesemantics

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/resourceclaimspec"
	"k8s.io/kubernetes/pkg/apis/resource"
	resourcevalidation "k8s.io/kubernetes/pkg/apis/resource/validation"
	"k8s.io/kubernetes/pkg/features"

	_ "k8s.io/kubernetes/pkg/apis/resource/install" // resource's types, defaults and conversions
)

func init() { groups = append(groups, resourceKinds) }

// resourceKinds are the strategies of group resource.k8s.io.
func resourceKinds() map[schema.GroupResource]strategy {
	group := func(r string) schema.GroupResource {
		return schema.GroupResource{Group: resource.GroupName, Resource: r}
	}
	return map[schema.GroupResource]strategy{
		group("deviceclasses"):              deviceClassKind().erase(),
		group("resourceclaims"):             resourceClaimKind().erase(),
		group("resourceclaimtemplates"):     resourceClaimTemplateKind().erase(),
		group("resourceslices"):             resourceSliceKind().erase(),
		group("devicetaintrules"):           deviceTaintRuleKind().erase(),
		group("resourcepoolstatusrequests"): resourcePoolStatusRequestKind().erase(),
	}
}

// normalized is declarative validation's configuration of the resource.k8s.io kinds
// whose versions differ in shape: errors are reported at the paths of the version
// requested.
func normalized() rest.DeclarativeValidationConfig {
	return rest.DeclarativeValidationConfig{NormalizationRules: resourcevalidation.ResourceNormalizationRules}
}

func deviceClassKind() kind[*resource.DeviceClass] {
	return kind[*resource.DeviceClass]{
		prepareCreate: func(_ context.Context, c *resource.DeviceClass) {
			c.Generation = 1
			dropExtendedResourceName(c, nil)
		},
		validate: func(_ context.Context, c *resource.DeviceClass) field.ErrorList {
			return resourcevalidation.ValidateDeviceClass(c)
		},
		prepareUpdate: func(_ context.Context, c, old *resource.DeviceClass) {
			dropExtendedResourceName(c, old)
			if !apiequality.Semantic.DeepEqual(c.Spec, old.Spec) {
				c.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, c, old *resource.DeviceClass) field.ErrorList {
			return resourcevalidation.ValidateDeviceClassUpdate(c, old)
		},
	}
}

// dropExtendedResourceName clears a DeviceClass's extendedResourceName while
// DRAExtendedResource is off, unless the stored class (old, nil on create) has one.
func dropExtendedResourceName(c, old *resource.DeviceClass) {
	if !gateOrInUse(features.DRAExtendedResource, old != nil && old.Spec.ExtendedResourceName != nil) {
		c.Spec.ExtendedResourceName = nil
	}
}

// ResourceClaims. kube's strategy also refuses adminAccess in a namespace without
// the admin label, and status changes the user may not make (binding, drivers'
// device status); those need the cluster's namespaces and authorizer, which a
// strategy here does not have.
func resourceClaimKind() kind[*resource.ResourceClaim] {
	return kind[*resource.ResourceClaim]{
		prepareCreate: func(_ context.Context, c *resource.ResourceClaim) {
			c.Status = resource.ResourceClaimStatus{}
			resourceclaimspec.DropDisabledFields(&c.Spec, nil)
		},
		validate: func(_ context.Context, c *resource.ResourceClaim) field.ErrorList {
			return resourcevalidation.ValidateResourceClaim(c)
		},
		prepareUpdate: func(_ context.Context, c, old *resource.ResourceClaim) {
			c.Status = old.Status
			resourceclaimspec.DropDisabledFields(&c.Spec, &old.Spec)
		},
		validateUpdate: func(_ context.Context, c, old *resource.ResourceClaim) field.ErrorList {
			return resourcevalidation.ValidateResourceClaimUpdate(c, old)
		},
		prepareStatus: func(_ context.Context, c, old *resource.ResourceClaim) {
			c.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&c.ObjectMeta, &old.ObjectMeta)
			dropClaimStatusFields(c, old)
			dropDeallocatedDevices(c, old)
		},
		validateStatus: func(_ context.Context, c, old *resource.ResourceClaim) field.ErrorList {
			return resourcevalidation.ValidateResourceClaimStatusUpdate(c, old)
		},
		declarative: func(context.Context, *resource.ResourceClaim, *resource.ResourceClaim) rest.DeclarativeValidationConfig {
			return normalized()
		},
	}
}

func resourceClaimTemplateKind() kind[*resource.ResourceClaimTemplate] {
	return kind[*resource.ResourceClaimTemplate]{
		prepareCreate: func(_ context.Context, t *resource.ResourceClaimTemplate) {
			resourceclaimspec.DropDisabledFields(&t.Spec.Spec, nil)
		},
		validate: func(_ context.Context, t *resource.ResourceClaimTemplate) field.ErrorList {
			return resourcevalidation.ValidateResourceClaimTemplate(t)
		},
		prepareUpdate: func(_ context.Context, t, old *resource.ResourceClaimTemplate) {
			resourceclaimspec.DropDisabledFields(&t.Spec.Spec, &old.Spec.Spec)
		},
		validateUpdate: func(_ context.Context, t, old *resource.ResourceClaimTemplate) field.ErrorList {
			return append(resourcevalidation.ValidateResourceClaimTemplate(t), resourcevalidation.ValidateResourceClaimTemplateUpdate(t, old)...)
		},
		declarative: func(context.Context, *resource.ResourceClaimTemplate, *resource.ResourceClaimTemplate) rest.DeclarativeValidationConfig {
			return normalized()
		},
	}
}

func resourceSliceKind() kind[*resource.ResourceSlice] {
	return kind[*resource.ResourceSlice]{
		prepareCreate: func(_ context.Context, s *resource.ResourceSlice) {
			s.Generation = 1
			dropSliceFields(&s.Spec, nil)
		},
		validate: func(_ context.Context, s *resource.ResourceSlice) field.ErrorList {
			return resourcevalidation.ValidateResourceSlice(s)
		},
		warnCreate: func(_ context.Context, s *resource.ResourceSlice) []string { return driverNameWarnings(s) },
		prepareUpdate: func(_ context.Context, s, old *resource.ResourceSlice) {
			if !apiequality.Semantic.DeepEqual(s.Spec, old.Spec) {
				s.Generation = old.Generation + 1
			}
			dropSliceFields(&s.Spec, &old.Spec)
		},
		validateUpdate: func(_ context.Context, s, old *resource.ResourceSlice) field.ErrorList {
			return resourcevalidation.ValidateResourceSliceUpdate(s, old)
		},
		warnUpdate: func(_ context.Context, s, _ *resource.ResourceSlice) []string { return driverNameWarnings(s) },
		declarative: func(context.Context, *resource.ResourceSlice, *resource.ResourceSlice) rest.DeclarativeValidationConfig {
			c := gateOptions(features.DRAPartitionableDevicesType)
			c.NormalizationRules = resourcevalidation.ResourceNormalizationRules
			return c
		},
	}
}

// driverNameWarnings warns of a ResourceSlice whose driver name has capitals.
func driverNameWarnings(s *resource.ResourceSlice) []string {
	if s.Spec.Driver != strings.ToLower(s.Spec.Driver) {
		return []string{fmt.Sprintf("spec.driver: driver names should be lowercase; %q contains uppercase characters", s.Spec.Driver)}
	}
	return nil
}

func deviceTaintRuleKind() kind[*resource.DeviceTaintRule] {
	return kind[*resource.DeviceTaintRule]{
		prepareCreate: func(_ context.Context, r *resource.DeviceTaintRule) {
			r.Status, r.Generation = resource.DeviceTaintRuleStatus{}, 1
		},
		validate: func(_ context.Context, r *resource.DeviceTaintRule) field.ErrorList {
			return resourcevalidation.ValidateDeviceTaintRule(r)
		},
		prepareUpdate: func(_ context.Context, r, old *resource.DeviceTaintRule) {
			r.Status = old.Status
			restampTaint(&r.Spec.Taint, &old.Spec.Taint, time.Now())
			if !apiequality.Semantic.DeepEqual(r.Spec, old.Spec) {
				r.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, r, old *resource.DeviceTaintRule) field.ErrorList {
			return resourcevalidation.ValidateDeviceTaintRuleUpdate(r, old)
		},
		prepareStatus: func(_ context.Context, r, old *resource.DeviceTaintRule) {
			r.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&r.ObjectMeta, &old.ObjectMeta)
		},
		validateStatus: func(_ context.Context, r, old *resource.DeviceTaintRule) field.ErrorList {
			return resourcevalidation.ValidateDeviceTaintRuleStatusUpdate(r, old)
		},
	}
}

// restampTaint gives a taint whose effect changed, while its timeAdded did not, the
// time of the change (now, to the second): the new effect dates from now.
func restampTaint(t, old *resource.DeviceTaint, now time.Time) {
	if t.Effect != old.Effect && t.TimeAdded.Equal(old.TimeAdded) {
		t.TimeAdded = &metav1.Time{Time: now.Truncate(time.Second)}
	}
}

func resourcePoolStatusRequestKind() kind[*resource.ResourcePoolStatusRequest] {
	return kind[*resource.ResourcePoolStatusRequest]{
		prepareCreate: func(_ context.Context, r *resource.ResourcePoolStatusRequest) {
			r.Status = nil
			dropDefaultPartitionType(r, nil)
		},
		validate: func(_ context.Context, r *resource.ResourcePoolStatusRequest) field.ErrorList {
			return resourcevalidation.ValidateResourcePoolStatusRequest(r)
		},
		prepareUpdate: func(_ context.Context, r, old *resource.ResourcePoolStatusRequest) {
			r.Status = old.Status
			dropDefaultPartitionType(r, old)
		},
		validateUpdate: func(_ context.Context, r, old *resource.ResourcePoolStatusRequest) field.ErrorList {
			return resourcevalidation.ValidateResourcePoolStatusRequestUpdate(r, old)
		},
		prepareStatus: func(_ context.Context, r, old *resource.ResourcePoolStatusRequest) {
			r.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&r.ObjectMeta, &old.ObjectMeta)
		},
		validateStatus: func(_ context.Context, r, old *resource.ResourcePoolStatusRequest) field.ErrorList {
			return resourcevalidation.ValidateResourcePoolStatusRequestStatusUpdate(r, old)
		},
		declarative: func(context.Context, *resource.ResourcePoolStatusRequest, *resource.ResourcePoolStatusRequest) rest.DeclarativeValidationConfig {
			return gateOptions(features.DRAPartitionableDevicesType)
		},
	}
}

// dropDefaultPartitionType clears a pool status request's
// defaultPartitionTypeAttribute while DRAPartitionableDevicesType is off, unless the
// stored request (old, nil on create) has one.
func dropDefaultPartitionType(r, old *resource.ResourcePoolStatusRequest) {
	if !gateOrInUse(features.DRAPartitionableDevicesType, old != nil && old.Spec.DefaultPartitionTypeAttribute != nil) {
		r.Spec.DefaultPartitionTypeAttribute = nil
	}
}

// gatedFields are fields behind a feature gate, in an object of type S: while the
// gate is off (enabled reports it), a write that does not update an object already
// using them (inUse of the stored one) has them dropped.
type gatedFields[S any] struct {
	enabled func() bool
	inUse   func(old *S) bool
	drop    func(s *S)
}

// dropGated drops the fields of each gate in s, old being the stored object (nil on
// create).
func dropGated[S any](gates []gatedFields[S], s, old *S) {
	for _, g := range gates {
		if !g.enabled() && (old == nil || !g.inUse(old)) {
			g.drop(s)
		}
	}
}

// enabled returns whether f is enabled, asked when called.
func enabled(fs ...featuregate.Feature) func() bool {
	return func() bool {
		for _, f := range fs {
			if !utilfeature.DefaultFeatureGate.Enabled(f) {
				return false
			}
		}
		return true
	}
}

// anyDevice reports whether some device of a slice satisfies f.
func anyDevice(s *resource.ResourceSliceSpec, f func(*resource.Device) bool) bool {
	for i := range s.Devices {
		if f(&s.Devices[i]) {
			return true
		}
	}
	return false
}

// eachDevice applies f to every device of a slice.
func eachDevice(s *resource.ResourceSliceSpec, f func(*resource.Device)) {
	for i := range s.Devices {
		f(&s.Devices[i])
	}
}

// dropSliceFields drops the ResourceSlice fields whose gate is off.
func dropSliceFields(s, old *resource.ResourceSliceSpec) { dropGated(sliceGates, s, old) }

// sliceGates are the gated fields of a ResourceSlice's spec.
var sliceGates = []gatedFields[resource.ResourceSliceSpec]{
	{
		enabled: enabled(features.DRADeviceTaints),
		inUse: func(s *resource.ResourceSliceSpec) bool {
			return anyDevice(s, func(d *resource.Device) bool { return len(d.Taints) > 0 })
		},
		drop: func(s *resource.ResourceSliceSpec) { eachDevice(s, func(d *resource.Device) { d.Taints = nil }) },
	},
	{
		enabled: enabled(features.DRAPartitionableDevices),
		inUse: func(s *resource.ResourceSliceSpec) bool {
			return len(s.SharedCounters) > 0 || s.PerDeviceNodeSelection != nil || anyDevice(s, func(d *resource.Device) bool {
				return len(d.ConsumesCounters) > 0 || d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil
			})
		},
		drop: func(s *resource.ResourceSliceSpec) {
			s.SharedCounters, s.PerDeviceNodeSelection = nil, nil
			eachDevice(s, func(d *resource.Device) {
				d.ConsumesCounters, d.NodeName, d.NodeSelector, d.AllNodes = nil, nil, nil, nil
			})
		},
	},
	{
		// Binding conditions are reported in a claim's device status: both gates.
		enabled: enabled(features.DRADeviceBindingConditions, features.DRAResourceClaimDeviceStatus),
		inUse: func(s *resource.ResourceSliceSpec) bool {
			return anyDevice(s, func(d *resource.Device) bool {
				return len(d.BindingConditions) > 0 || len(d.BindingFailureConditions) > 0 || d.BindsToNode != nil
			})
		},
		drop: func(s *resource.ResourceSliceSpec) {
			eachDevice(s, func(d *resource.Device) {
				d.BindingConditions, d.BindingFailureConditions, d.BindsToNode = nil, nil, nil
			})
		},
	},
	{
		enabled: enabled(features.DRAConsumableCapacity),
		inUse: func(s *resource.ResourceSliceSpec) bool {
			return anyDevice(s, func(d *resource.Device) bool {
				if d.AllowMultipleAllocations != nil {
					return true
				}
				for _, c := range d.Capacity {
					if c.RequestPolicy != nil {
						return true
					}
				}
				return false
			})
		},
		drop: func(s *resource.ResourceSliceSpec) {
			eachDevice(s, func(d *resource.Device) {
				d.AllowMultipleAllocations = nil
				for name, c := range d.Capacity {
					c.RequestPolicy = nil
					d.Capacity[name] = c
				}
			})
		},
	},
	{
		enabled: enabled(features.DRADeviceCompatibilityGroups),
		inUse: func(s *resource.ResourceSliceSpec) bool {
			return anyDevice(s, func(d *resource.Device) bool {
				for _, c := range d.ConsumesCounters {
					if len(c.CompatibilityGroups) > 0 {
						return true
					}
				}
				return false
			})
		},
		drop: func(s *resource.ResourceSliceSpec) {
			eachDevice(s, func(d *resource.Device) {
				for j := range d.ConsumesCounters {
					d.ConsumesCounters[j].CompatibilityGroups = nil
				}
			})
		},
	},
	{
		enabled: enabled(features.DRANodeAllocatableResources),
		inUse: func(s *resource.ResourceSliceSpec) bool {
			return anyDevice(s, func(d *resource.Device) bool { return len(d.NodeAllocatableResources) > 0 })
		},
		drop: func(s *resource.ResourceSliceSpec) {
			eachDevice(s, func(d *resource.Device) { d.NodeAllocatableResources = nil })
		},
	},
	{
		enabled: enabled(features.DRAListTypeAttributes),
		inUse:   func(s *resource.ResourceSliceSpec) bool { return anyDevice(s, hasListAttribute) },
		drop:    func(s *resource.ResourceSliceSpec) { eachDevice(s, dropListAttributes) },
	},
	{
		enabled: enabled(features.DRAPartitionableDevicesType),
		inUse:   func(s *resource.ResourceSliceSpec) bool { return s.PartitionTypeAttribute != nil },
		drop:    func(s *resource.ResourceSliceSpec) { s.PartitionTypeAttribute = nil },
	},
	{
		enabled: enabled(features.DRAOptionalNodeOperations),
		inUse:   func(s *resource.ResourceSliceSpec) bool { return len(s.SkipNodeOperations) > 0 },
		drop:    func(s *resource.ResourceSliceSpec) { s.SkipNodeOperations = nil },
	},
}

// hasListAttribute reports whether a device has an attribute with a list value.
func hasListAttribute(d *resource.Device) bool {
	for _, a := range d.Attributes {
		if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
			return true
		}
	}
	return false
}

// dropListAttributes clears the list values of a device's attributes.
func dropListAttributes(d *resource.Device) {
	for name, a := range d.Attributes {
		if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
			a.BoolValues, a.IntValues, a.StringValues, a.VersionValues = nil, nil, nil, nil
			d.Attributes[name] = a
		}
	}
}

// dropClaimStatusFields drops the ResourceClaim status fields whose gate is off.
func dropClaimStatusFields(c, old *resource.ResourceClaim) { dropGated(claimStatusGates, c, old) }

// claimStatusGates are the gated fields of a ResourceClaim's status (a gate's use
// may show in the spec too).
var claimStatusGates = []gatedFields[resource.ResourceClaim]{
	{
		enabled: enabled(features.DRAResourceClaimDeviceStatus),
		inUse:   func(c *resource.ResourceClaim) bool { return len(c.Status.Devices) > 0 },
		drop:    func(c *resource.ResourceClaim) { c.Status.Devices = nil },
	},
	{
		enabled: enabled(features.DRAAdminAccess),
		inUse: func(c *resource.ResourceClaim) bool {
			return resourceclaimspec.DRAAdminAccessFeatureInUse(&c.Spec) ||
				anyResult(c, func(r *resource.DeviceRequestAllocationResult) bool { return r.AdminAccess != nil })
		},
		drop: func(c *resource.ResourceClaim) {
			eachResult(c, func(r *resource.DeviceRequestAllocationResult) { r.AdminAccess = nil })
		},
	},
	{
		enabled: enabled(features.DRAConsumableCapacity),
		inUse: func(c *resource.ResourceClaim) bool {
			if resourceclaimspec.DRAConsumableCapacityFeatureInUse(&c.Spec) ||
				anyResult(c, func(r *resource.DeviceRequestAllocationResult) bool {
					return r.ShareID != nil || r.ConsumedCapacity != nil
				}) {
				return true
			}
			for _, d := range c.Status.Devices {
				if d.ShareID != nil {
					return true
				}
			}
			return false
		},
		drop: func(c *resource.ResourceClaim) {
			eachResult(c, func(r *resource.DeviceRequestAllocationResult) { r.ShareID, r.ConsumedCapacity = nil, nil })
			for i := range c.Status.Devices {
				c.Status.Devices[i].ShareID = nil
			}
		},
	},
	{
		enabled: enabled(features.DRADeviceBindingConditions),
		inUse: func(c *resource.ResourceClaim) bool {
			return anyResult(c, func(r *resource.DeviceRequestAllocationResult) bool {
				return r.BindingConditions != nil || r.BindingFailureConditions != nil
			})
		},
		drop: func(c *resource.ResourceClaim) {
			eachResult(c, func(r *resource.DeviceRequestAllocationResult) {
				r.BindingConditions, r.BindingFailureConditions = nil, nil
			})
		},
	},
	{
		enabled: enabled(features.DRAOptionalNodeOperations),
		inUse: func(c *resource.ResourceClaim) bool {
			return anyResult(c, func(r *resource.DeviceRequestAllocationResult) bool { return len(r.SkipNodeOperations) > 0 })
		},
		drop: func(c *resource.ResourceClaim) {
			eachResult(c, func(r *resource.DeviceRequestAllocationResult) { r.SkipNodeOperations = nil })
		},
	},
}

// anyResult reports whether some allocation result of a claim satisfies f.
func anyResult(c *resource.ResourceClaim, f func(*resource.DeviceRequestAllocationResult) bool) bool {
	if c.Status.Allocation == nil {
		return false
	}
	for i := range c.Status.Allocation.Devices.Results {
		if f(&c.Status.Allocation.Devices.Results[i]) {
			return true
		}
	}
	return false
}

// eachResult applies f to every allocation result of a claim.
func eachResult(c *resource.ResourceClaim, f func(*resource.DeviceRequestAllocationResult)) {
	if c.Status.Allocation == nil {
		return
	}
	for i := range c.Status.Allocation.Devices.Results {
		f(&c.Status.Allocation.Devices.Results[i])
	}
}

// allocatedDevice names one allocated device (or share of one).
type allocatedDevice struct{ driver, pool, device, share string }

// dropDeallocatedDevices removes from a claim's device status the devices its
// stored allocation had and its new one no longer has: their status goes with them.
// Nothing while the device status is disabled and unused.
func dropDeallocatedDevices(c, old *resource.ResourceClaim) {
	if !gateOrInUse(features.DRAResourceClaimDeviceStatus, len(old.Status.Devices) > 0) {
		return
	}
	gone := map[allocatedDevice]bool{}
	eachResult(old, func(r *resource.DeviceRequestAllocationResult) { gone[resultDevice(r)] = true })
	eachResult(c, func(r *resource.DeviceRequestAllocationResult) { delete(gone, resultDevice(r)) })
	kept := c.Status.Devices[:0]
	for _, d := range c.Status.Devices {
		share := ""
		if d.ShareID != nil {
			share = *d.ShareID
		}
		if !gone[allocatedDevice{d.Driver, d.Pool, d.Device, share}] {
			kept = append(kept, d)
		}
	}
	c.Status.Devices = kept
	if len(kept) == 0 {
		c.Status.Devices = nil
	}
}

// resultDevice is the device an allocation result names.
func resultDevice(r *resource.DeviceRequestAllocationResult) allocatedDevice {
	d := allocatedDevice{driver: r.Driver, pool: r.Pool, device: r.Device}
	if r.ShareID != nil {
		d.share = string(*r.ShareID)
	}
	return d
}
