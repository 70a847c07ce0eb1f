// Package typedconv converts unstructured objects to their Go types, as
// k8s.io/apimachinery's runtime.DefaultUnstructuredConverter does, with one part done
// without reflection: metadata.managedFields.
//
// The generic converter hands every value whose type decodes its own JSON to
// encoding/json: each managed fields entry's fieldsV1, a tree as large as the fields
// its manager owns, is encoded by reflection so that FieldsV1 can keep it as bytes.
// Every built-in write is converted to kube's types (kubesemantics) and every
// protobuf answer too (package respond), so that step was a tenth of a create's CPU.
// Here the entries are built directly; the bytes are those encoding/json writes.
//
// It owns only this conversion: it knows metadata and its managedFields, nothing of
// kinds, versions or defaults, and must not grow rules of its own. Whatever it does
// not recognize exactly goes to the generic converter, whose result (or error) is then
// the answer.
package typedconv
