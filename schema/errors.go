package schema

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidSchema is matched (errors.Is) by every error Compile returns for a schema it
// refuses: one that is not structural, uses unsupported OpenAPI constructs, has
// inconsistent Kubernetes extensions or invalid defaults.
var ErrInvalidSchema = errors.New("invalid schema")

// InvalidSchemaError lists the reasons a schema was refused, with field paths under the
// prefix given to Compile. It unwraps to ErrInvalidSchema.
type InvalidSchemaError struct {
	// Errors is never empty.
	Errors field.ErrorList
}

// Error lists every violation, e.g.
// `invalid schema: spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields`.
func (e *InvalidSchemaError) Error() string {
	return ErrInvalidSchema.Error() + ": " + e.Errors.ToAggregate().Error()
}

// Unwrap returns ErrInvalidSchema.
func (e *InvalidSchemaError) Unwrap() error { return ErrInvalidSchema }
