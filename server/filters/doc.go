// Package filters holds the stages of Concord's handler chain that belong to the HTTP
// server itself, one file per filter, each a Filter: a name and a function that wraps
// the rest of the chain. The order in which they run is not decided here: package
// server defines the chain once (server.Chain), and packages that guard resources
// (the storage version barrier, the client version skew detector) plug their own
// filters into its named slots.
//
// Every filter writes its refusals with respond.Error, and reads the request through
// request.Info, set by the request-info filter near the top of the chain.
//
// Model: k8s.io/apiserver's pkg/endpoints/filters and pkg/server/filters.
package filters
