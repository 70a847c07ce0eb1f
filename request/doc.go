// Package request reads what the URL and method of a Kubernetes-style request say
// about it (RequestInfo: resource or not, verb, group, version, namespace, resource,
// subresource, name) and carries it in the request context, so that every filter of
// the handler chain and every handler decides from one reading.
//
// It is a leaf: it imports no Concord package but wire, and does no I/O.
package request
