package feature

import (
	"context"
	"reflect"
	"slices"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
)

// Feature is one feature as the composition root handles it: its checks are on
// /healthz, /livez and /readyz from the serving phase on, and Start starts its
// components in the controllers phase, in the order the composition root gives.
// Each feature package's NewFeature returns one.
type Feature interface {
	Checks() []health.Checker
	Start(ctx context.Context, g *lifecycle.Group) error
}

// Present returns those of fs that the server has: a feature the server does not
// run is a nil pointer (or a nil Func).
func Present(fs ...Feature) []Feature {
	return slices.DeleteFunc(fs, func(f Feature) bool {
		v := reflect.ValueOf(f)
		return !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Func) && v.IsNil()
	})
}

// Func is a feature that starts its components with a function, and has no checks
// of its own.
type Func func(ctx context.Context, g *lifecycle.Group) error

// Checks are none.
func (f Func) Checks() []health.Checker { return nil }

// Start calls f.
func (f Func) Start(ctx context.Context, g *lifecycle.Group) error { return f(ctx, g) }

// Component is the feature of one component and no checks.
func Component(comp lifecycle.Component) Feature {
	return Func(func(ctx context.Context, g *lifecycle.Group) error { return g.Start(ctx, comp) })
}

// ChecksOnly is a feature of checks alone, which the composition root marks done.
type ChecksOnly []health.Checker

// Checks are c.
func (c ChecksOnly) Checks() []health.Checker { return c }

// Start starts nothing.
func (ChecksOnly) Start(context.Context, *lifecycle.Group) error { return nil }
