// Package respond writes answers to Kubernetes-style requests: objects and errors, in
// the representation the client negotiated with its Accept header (JSON, YAML,
// protobuf for built-in kinds, CBOR for the others; Table and PartialObjectMetadata
// are chosen here and built by the handlers), and lists and watch events assembled
// from objects encoded already. Every filter
// of the handler chain and every handler writes its errors with Error, so that every
// error a client sees is a metav1.Status, negotiated the same way.
//
// It is a leaf: it knows nothing of routing, resources or storage.
package respond
