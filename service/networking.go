package service

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/concordproject/concord/registry"
)

// ConfigureIPAddresses gives networking.k8s.io IPAddresses Kubernetes' validation:
// the name is an IP address in canonical form, the parentRef names a resource and an
// object, and does not change. (Every version has that shape.)
func ConfigureIPAddresses(res *registry.Resource) error {
	res.Hooks = &registry.Hooks{
		ValidateName: func(name string, _ bool) []string {
			var msgs []string
			for _, e := range validation.IsValidIP(field.NewPath(""), name) {
				msgs = append(msgs, e.Detail)
			}
			return msgs
		},
		Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
			ip := &networkingv1.IPAddress{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ip); err != nil {
				return field.ErrorList{field.Invalid(specPath, nil, err.Error())}
			}
			return validateParentRef(ip.Spec.ParentRef, specPath.Child("parentRef"))
		},
		ValidateUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			now, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "parentRef")
			was, _, _ := unstructured.NestedFieldNoCopy(old.Object, "spec", "parentRef")
			return apimachineryvalidation.ValidateImmutableField(now, was, specPath.Child("parentRef"))
		},
	}
	if res.HasPrinterColumns(ipAddressColumns) {
		res.Hooks.TableCells = ipAddressCells
	}
	return nil
}

// validateParentRef is Kubernetes' validation of an IPAddress's parentRef.
func validateParentRef(ref *networkingv1.ParentReference, path *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(path.Child("group"), ref.Group, msg))
		}
	}
	for _, f := range []struct {
		name, value string
		required    bool
	}{{"resource", ref.Resource, true}, {"name", ref.Name, true}, {"namespace", ref.Namespace, false}} {
		if f.value == "" {
			if f.required {
				errs = append(errs, field.Required(path.Child(f.name), ""))
			}
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value, msg))
		}
	}
	return errs
}

// ConfigureServiceCIDRs gives networking.k8s.io ServiceCIDRs Kubernetes' validation:
// one or two CIDRs, one per IP family; they do not change, but a single-stack one may
// gain its second family. (Every version has that shape.)
func ConfigureServiceCIDRs(res *registry.Resource) error {
	cidrsPath := specPath.Child("cidrs")
	res.Hooks = &registry.Hooks{
		Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
			cidrs, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "cidrs")
			return validateCIDRs(cidrs, cidrsPath)
		},
		ValidateUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			now, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "cidrs")
			was, _, _ := unstructured.NestedStringSlice(old.Object, "spec", "cidrs")
			switch {
			case len(now) == len(was):
				var errs field.ErrorList
				for i := range was {
					if was[i] != now[i] {
						errs = append(errs, field.Invalid(cidrsPath.Index(i), now[i], apimachineryvalidation.FieldImmutableErrorMsg))
					}
				}
				return errs
			case len(was) == 1 && len(now) == 2:
				var errs field.ErrorList
				if now[0] != was[0] {
					errs = append(errs, field.Invalid(cidrsPath.Index(0), now[0], apimachineryvalidation.FieldImmutableErrorMsg))
				}
				return append(errs, validateCIDRs(now, cidrsPath)...)
			}
			return field.ErrorList{field.Invalid(cidrsPath, now, apimachineryvalidation.FieldImmutableErrorMsg)}
		},
	}
	if res.HasPrinterColumns(serviceCIDRColumns) {
		res.Hooks.TableCells = serviceCIDRCells
	}
	return nil
}

// validateCIDRs is Kubernetes' validation of a ServiceCIDR's spec.cidrs.
func validateCIDRs(cidrs []string, path *field.Path) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(path, "at least one CIDR required")}
	case len(cidrs) > 2:
		return field.ErrorList{field.Invalid(path, cidrs, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDR(path.Index(i), c)...)
	}
	if len(cidrs) == 2 && netutils.IPFamilyOfCIDRString(cidrs[0]) == netutils.IPFamilyOfCIDRString(cidrs[1]) &&
		netutils.IPFamilyOfCIDRString(cidrs[0]) != netutils.IPFamilyUnknown {
		errs = append(errs, field.Invalid(path, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
	}
	return errs
}
