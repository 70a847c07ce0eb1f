// Package objectjson reads and writes the JSON of unstructured objects, the
// map[string]interface{} trees that Concord stores, converts and serves, without
// reflection.
//
// Every stored object is decoded and every response is encoded, so this is on the path
// of every request. The package exists for speed only: its results are exactly those
// of the standard library as Kubernetes uses it, which its tests check value by value
// and byte by byte (including by fuzzing):
//
//   - Unmarshal parses like k8s.io/apimachinery/pkg/util/json.Unmarshal into a
//     map[string]interface{}: integers that fit become int64, other numbers float64,
//     strings are unescaped with invalid UTF-8 replaced by U+FFFD, the last of
//     duplicate keys wins, nesting is limited to 10000 levels; UnmarshalObjectStrict
//     refuses duplicate keys instead (ErrDuplicateKey), exactly where
//     sigs.k8s.io/json's UnmarshalStrict with DisallowDuplicateFields reports them;
//   - Append and Marshal encode like an encoding/json Encoder with SetEscapeHTML(false),
//     without the trailing newline: object keys sorted, nil maps and slices as null,
//     floats formatted as encoding/json formats them. Values of other types than the
//     JSON ones (string, bool, nil, int64 and the other integer types, float64,
//     float32, json.Number, map[string]interface{}, []interface{}) are handed to
//     encoding/json.
//
// Error messages differ from the standard library's; only whether there is an error
// is the same.
//
// The package knows nothing of Kubernetes objects (apiVersion, metadata): it owns the
// JSON syntax only. The registry (storage encoding) and the server (responses) use it.
package objectjson
