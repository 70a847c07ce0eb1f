package kubesemantics

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// kind is Concord's strategy for one built-in resource: the steps kube-apiserver's
// registry takes around validation, on kube's internal type T, each a call of kube's
// own functions. Every step is optional: a missing prepare changes nothing, a
// missing validation finds nothing but metadata's and declarative validation's.
type kind[T runtime.Object] struct {
	// prepareCreate normalizes a new object before validation: status reset,
	// generation, fields whose feature gate is off dropped.
	prepareCreate func(ctx context.Context, obj T)
	// validate checks a new object.
	validate func(ctx context.Context, obj T) field.ErrorList
	// warnCreate returns warnings for a valid new object.
	warnCreate func(ctx context.Context, obj T) []string
	// prepareUpdate normalizes an update of old; validateUpdate and warnUpdate as
	// above.
	prepareUpdate  func(ctx context.Context, obj, old T)
	validateUpdate func(ctx context.Context, obj, old T) field.ErrorList
	warnUpdate     func(ctx context.Context, obj, old T) []string
	// prepareStatus, validateStatus and warnStatus are the status subresource's
	// update.
	prepareStatus  func(ctx context.Context, obj, old T)
	validateStatus func(ctx context.Context, obj, old T) field.ErrorList
	warnStatus     func(ctx context.Context, obj, old T) []string
	// subresources are the updates of the whole object through subresources that
	// write part of it (a CertificateSigningRequest's approval, a Pod's ephemeral
	// containers and resize), by name.
	subresources map[string]subresource[T]
	// canonicalize puts a valid object in its canonical form.
	canonicalize func(obj T)
	// declarative gives declarative validation, which every kube strategy runs, its
	// options for a request (old is the zero T on create); nil: none.
	declarative func(ctx context.Context, obj, old T) rest.DeclarativeValidationConfig
	// review marks a review (a SubjectAccessReview, ...): created, answered, never
	// stored. kube checks its own rules only, not the metadata every stored object's
	// creation checks (a review has no name).
	review bool
	// binding marks a kind with a binding subresource (a Pod's), which writes the
	// object as kube's binding writes it to storage: without preparation or validation
	// (the Binding was validated).
	binding bool
}

// subresource is the update of an object through one subresource that writes part of
// it, served as get, patch and update of the whole object: the steps of kube's
// strategy for it, which warns of nothing.
type subresource[T runtime.Object] struct {
	// prepare keeps of obj what the subresource writes, the rest from old.
	prepare func(ctx context.Context, obj, old T)
	// validate checks the update.
	validate func(ctx context.Context, obj, old T) field.ErrorList
	// gate, if set, is the feature gate under which kube serves the subresource.
	gate featuregate.Feature
}

// strategy is a kind with its type erased, as the registry's table holds it.
type strategy struct {
	prepareCreate                  func(ctx context.Context, obj runtime.Object)
	canonicalize                   func(obj runtime.Object)
	validate                       func(ctx context.Context, obj runtime.Object) field.ErrorList
	warnCreate                     func(ctx context.Context, obj runtime.Object) []string
	prepareUpdate, prepareStatus   func(ctx context.Context, obj, old runtime.Object)
	validateUpdate, validateStatus func(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// subresources are the kind's, their types erased.
	subresources map[string]subresource[runtime.Object]
	// review and binding are the kind's.
	review, binding        bool
	warnUpdate, warnStatus func(ctx context.Context, obj, old runtime.Object) []string
	declarative            func(ctx context.Context, obj, old runtime.Object) rest.DeclarativeValidationConfig
}

// erase returns k as a strategy.
func (k kind[T]) erase() strategy {
	return strategy{
		prepareCreate: with1(k.prepareCreate),
		canonicalize: func(obj runtime.Object) {
			if k.canonicalize != nil {
				k.canonicalize(obj.(T))
			}
		},
		validate:       errs1(k.validate),
		warnCreate:     warn1(k.warnCreate),
		prepareUpdate:  with2(k.prepareUpdate),
		prepareStatus:  with2(k.prepareStatus),
		validateUpdate: errs2(k.validateUpdate),
		validateStatus: errs2(k.validateStatus),
		subresources:   eraseSubresources(k.subresources),
		review:         k.review,
		binding:        k.binding,
		warnUpdate:     warn2(k.warnUpdate),
		warnStatus:     warn2(k.warnStatus),
		declarative: func(ctx context.Context, obj, old runtime.Object) rest.DeclarativeValidationConfig {
			if k.declarative == nil {
				return rest.DeclarativeValidationConfig{}
			}
			o, _ := old.(T)
			return k.declarative(ctx, obj.(T), o)
		},
	}
}

// eraseSubresources returns subs with their types erased.
func eraseSubresources[T runtime.Object](subs map[string]subresource[T]) map[string]subresource[runtime.Object] {
	if len(subs) == 0 {
		return nil
	}
	out := make(map[string]subresource[runtime.Object], len(subs))
	for name, sub := range subs {
		out[name] = subresource[runtime.Object]{prepare: with2(sub.prepare), validate: errs2(sub.validate), gate: sub.gate}
	}
	return out
}

func with1[T runtime.Object](f func(context.Context, T)) func(context.Context, runtime.Object) {
	return func(ctx context.Context, obj runtime.Object) {
		if f != nil {
			f(ctx, obj.(T))
		}
	}
}

func with2[T runtime.Object](f func(context.Context, T, T)) func(context.Context, runtime.Object, runtime.Object) {
	return func(ctx context.Context, obj, old runtime.Object) {
		if f != nil {
			f(ctx, obj.(T), old.(T))
		}
	}
}

func errs1[T runtime.Object](f func(context.Context, T) field.ErrorList) func(context.Context, runtime.Object) field.ErrorList {
	return func(ctx context.Context, obj runtime.Object) field.ErrorList {
		if f == nil {
			return nil
		}
		return f(ctx, obj.(T))
	}
}

func errs2[T runtime.Object](f func(context.Context, T, T) field.ErrorList) func(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
		if f == nil {
			return nil
		}
		return f(ctx, obj.(T), old.(T))
	}
}

func warn1[T runtime.Object](f func(context.Context, T) []string) func(context.Context, runtime.Object) []string {
	return func(ctx context.Context, obj runtime.Object) []string {
		if f == nil {
			return nil
		}
		return f(ctx, obj.(T))
	}
}

func warn2[T runtime.Object](f func(context.Context, T, T) []string) func(context.Context, runtime.Object, runtime.Object) []string {
	return func(ctx context.Context, obj, old runtime.Object) []string {
		if f == nil {
			return nil
		}
		return f(ctx, obj.(T), old.(T))
	}
}

// adapter presents a strategy as kube's rest.RESTCreateStrategy,
// RESTUpdateStrategy and DeclarativeValidationStrategy, so that rest.ValidateCreate and
// rest.ValidateUpdate, kube's own sequence of metadata, strategy and declarative
// validation, run it.
type adapter struct {
	rest.DeclarativeValidation // the scheme: an ObjectTyper, and declarative validation
	names.NameGenerator
	s           *strategy
	namespaced  bool
	subresource string // of an update: "", "status" or one of the strategy's subresources
}

func newAdapter(s *strategy, namespaced bool, subresource string) *adapter {
	return &adapter{
		DeclarativeValidation: rest.DeclarativeValidation{Scheme: legacyscheme.Scheme},
		NameGenerator:         names.SimpleNameGenerator,
		s:                     s, namespaced: namespaced, subresource: subresource,
	}
}

func (a *adapter) NamespaceScoped() bool                         { return a.namespaced }
func (a *adapter) AllowCreateOnUpdate(context.Context) bool      { return false }
func (a *adapter) AllowUnconditionalUpdate(context.Context) bool { return true }
func (a *adapter) Canonicalize(obj runtime.Object)               { a.s.canonicalize(obj) }

func (a *adapter) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	a.s.prepareCreate(ctx, obj)
}

func (a *adapter) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return a.s.validate(ctx, obj)
}

func (a *adapter) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	return a.s.warnCreate(ctx, obj)
}

func (a *adapter) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	if sub, ok := a.s.subresources[a.subresource]; ok {
		sub.prepare(ctx, obj, old)
		return
	}
	if a.subresource == "status" {
		a.s.prepareStatus(ctx, obj, old)
		return
	}
	a.s.prepareUpdate(ctx, obj, old)
}

func (a *adapter) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if sub, ok := a.s.subresources[a.subresource]; ok {
		return sub.validate(ctx, obj, old)
	}
	if a.subresource == "status" {
		return a.s.validateStatus(ctx, obj, old)
	}
	return a.s.validateUpdate(ctx, obj, old)
}

func (a *adapter) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	if _, ok := a.s.subresources[a.subresource]; ok {
		return nil
	}
	if a.subresource == "status" {
		return a.s.warnStatus(ctx, obj, old)
	}
	return a.s.warnUpdate(ctx, obj, old)
}

func (a *adapter) DeclarativeValidationConfig(ctx context.Context, obj, old runtime.Object) rest.DeclarativeValidationConfig {
	return a.s.declarative(ctx, obj, old)
}
