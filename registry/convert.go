package registry

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NoneConverter is the None conversion strategy: converting an object changes its
// apiVersion and nothing else. It suits versions whose schemas are the same, and is
// what CRDs with `conversion.strategy: None` get.
type NoneConverter struct {
	// Group is the API group of the converted resource.
	Group string
}

// Convert sets apiVersion to group/toVersion on every object.
func (c NoneConverter) Convert(_ context.Context, objs []*unstructured.Unstructured, toVersion string) error {
	apiVersion := toVersion
	if c.Group != "" {
		apiVersion = c.Group + "/" + toVersion
	}
	for _, o := range objs {
		o.SetAPIVersion(apiVersion)
	}
	return nil
}

// converter returns the resource's converter (None when unset).
func (r *Resource) converter() Converter {
	if r.Converter != nil {
		return r.Converter
	}
	return NoneConverter{Group: r.Group}
}

// Convert converts objs (each in any decodable version of r) to version in place,
// calling the converter only for the objects not already there, in one batch.
func (r *Resource) Convert(ctx context.Context, objs []*unstructured.Unstructured, version string) error {
	want := r.APIVersion(version)
	var todo []*unstructured.Unstructured
	for _, o := range objs {
		switch av := o.GetAPIVersion(); {
		case av == want:
		case r.Shared != nil && av == r.Shared.Stored.GroupVersion().String():
			if err := r.Shared.FromStored(ctx, o, version); err != nil {
				return fmt.Errorf("%s from %s: %w", r.GroupResource(), r.Shared.Stored, err)
			}
		default:
			todo = append(todo, o)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	// Group conversions by source version is the converter's business; the None and
	// webhook strategies both accept mixed input.
	return r.converter().Convert(ctx, todo, version)
}
