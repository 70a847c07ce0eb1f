package schema

import "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"

// Default applies the schema's default values to obj in place, as kube-apiserver does for
// custom resources on every write and every read from storage: a field that is absent, or
// null where the schema does not allow null, gets its default (deep-copied); a null the
// schema does not allow and has no default for is removed. Defaults apply inside arrays
// and maps, and inside defaults just set. Fields the schema does not know (including
// preserved unknown fields) are left alone.
func (s *Schema) Default(obj map[string]interface{}) {
	if s == nil || obj == nil {
		return
	}
	defaulting.PruneNonNullableNullsWithoutDefaults(obj, s.structural)
	defaulting.Default(obj, s.structural)
}

// DefaultStored applies defaults to an object read from storage, as Default does. An
// object read back was pruned of disallowed nulls when it was written, so for a schema
// without any default there is nothing to do and it returns at once: reads of such
// resources pay nothing.
func (s *Schema) DefaultStored(obj map[string]interface{}) {
	if s == nil || !s.hasDefaults {
		return
	}
	s.Default(obj)
}

// DefaultsStored reports whether DefaultStored may change an object: false for a
// schema without any default, whose stored objects read as they are.
func (s *Schema) DefaultsStored() bool { return s != nil && s.hasDefaults }
