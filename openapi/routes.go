package openapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kube-openapi/pkg/common"
)

// This file describes the REST endpoints of a resource version as kube-openapi routes,
// the input of its v2 and v3 document builders. The paths, operation IDs, actions and
// parameters follow kube-apiserver's, so that clients generated from, or reasoning about,
// Kubernetes documents read Concord's the same way.

// Media types of request and response bodies.
const (
	mediaJSON       = "application/json"
	mediaYAML       = "application/yaml"
	mediaProtobuf   = "application/vnd.kubernetes.protobuf"
	mediaJSONStream = "application/json;stream=watch"
)

// Values of x-kubernetes-action.
const (
	actionGet              = "get"
	actionList             = "list"
	actionWatch            = "watch"
	actionWatchList        = "watchlist"
	actionPost             = "post"
	actionPut              = "put"
	actionPatch            = "patch"
	actionDelete           = "delete"
	actionDeleteCollection = "deletecollection"
)

// param is a route parameter.
type param struct {
	name, description, dataType string
	kind                        common.ParameterKind
	required                    bool
}

var _ common.Parameter = param{}

func (p param) Name() string               { return p.name }
func (p param) Description() string        { return p.description }
func (p param) Required() bool             { return p.required }
func (p param) Kind() common.ParameterKind { return p.kind }
func (p param) DataType() string           { return p.dataType }
func (p param) AllowMultiple() bool        { return false }

// query returns a query parameter.
func query(name, dataType, doc string) param {
	return param{name: name, description: doc, dataType: dataType, kind: common.QueryParameterKind}
}

// The query parameters Concord understands, described by the option types' own
// documentation.
var (
	listDoc   = metav1.ListOptions{}.SwaggerDoc()
	deleteDoc = metav1.DeleteOptions{}.SwaggerDoc()
	patchDoc  = metav1.PatchOptions{}.SwaggerDoc()

	paramPretty = query("pretty", "string", "If 'true', the response is indented for reading.")

	paramDryRun          = query("dryRun", "string", patchDoc["dryRun"])
	paramFieldManager    = query("fieldManager", "string", patchDoc["fieldManager"])
	paramFieldValidation = query("fieldValidation", "string", patchDoc["fieldValidation"])
	paramForce           = query("force", "boolean", patchDoc["force"])

	paramLabelSelector        = query("labelSelector", "string", listDoc["labelSelector"])
	paramFieldSelector        = query("fieldSelector", "string", listDoc["fieldSelector"])
	paramLimit                = query("limit", "integer", listDoc["limit"])
	paramContinue             = query("continue", "string", listDoc["continue"])
	paramResourceVersion      = query("resourceVersion", "string", listDoc["resourceVersion"])
	paramResourceVersionMatch = query("resourceVersionMatch", "string", listDoc["resourceVersionMatch"])
	paramWatch                = query("watch", "boolean", listDoc["watch"])
	paramAllowWatchBookmarks  = query("allowWatchBookmarks", "boolean", listDoc["allowWatchBookmarks"])
	paramSendInitialEvents    = query("sendInitialEvents", "boolean", listDoc["sendInitialEvents"])
	paramTimeoutSeconds       = query("timeoutSeconds", "integer", listDoc["timeoutSeconds"])

	paramGracePeriodSeconds = query("gracePeriodSeconds", "integer", deleteDoc["gracePeriodSeconds"])
	paramOrphanDependents   = query("orphanDependents", "boolean", deleteDoc["orphanDependents"])
	paramPropagationPolicy  = query("propagationPolicy", "string", deleteDoc["propagationPolicy"])

	listParams   = []param{paramLabelSelector, paramFieldSelector, paramLimit, paramContinue, paramResourceVersion, paramResourceVersionMatch, paramWatch, paramAllowWatchBookmarks, paramSendInitialEvents, paramTimeoutSeconds}
	selectParams = []param{paramLabelSelector, paramFieldSelector, paramLimit, paramContinue, paramResourceVersion, paramResourceVersionMatch, paramTimeoutSeconds}
	writeParams  = []param{paramDryRun, paramFieldManager, paramFieldValidation}
	patchParams  = []param{paramDryRun, paramFieldManager, paramFieldValidation, paramForce}
	deleteParams = []param{paramDryRun, paramGracePeriodSeconds, paramOrphanDependents, paramPropagationPolicy}
)

// response is a route's response for one status code.
type response struct {
	code    int
	message string
	model   any
}

var _ common.StatusCodeResponse = response{}

func (r response) Code() int       { return r.code }
func (r response) Message() string { return r.message }
func (r response) Model() any      { return r.model }

// route is one operation.
type route struct {
	method, path, operation, description, action string
	gvk                                          schema.GroupVersionKind
	tag                                          string
	params                                       []common.Parameter
	consumes, produces                           []string
	body                                         any
	responses                                    []common.StatusCodeResponse
}

var _ common.Route = (*route)(nil)

func (r *route) Method() string                 { return r.method }
func (r *route) Path() string                   { return r.path }
func (r *route) OperationName() string          { return r.operation }
func (r *route) Parameters() []common.Parameter { return r.params }
func (r *route) Description() string            { return r.description }
func (r *route) Consumes() []string             { return r.consumes }
func (r *route) Produces() []string             { return r.produces }
func (r *route) RequestPayloadSample() any      { return r.body }
func (r *route) ResponsePayloadSample() any {
	if len(r.responses) == 0 {
		return nil
	}
	return r.responses[0].Model()
}
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }
func (r *route) Metadata() map[string]any {
	return map[string]any{
		extAction: r.action,
		extGVK:    metav1.GroupVersionKind{Group: r.gvk.Group, Version: r.gvk.Version, Kind: r.gvk.Kind},
	}
}

// operationIDAndTags names operations in the builders' configurations.
func operationIDAndTags(r common.Route) (string, []string, error) {
	rt, ok := r.(*route)
	if !ok {
		return "", nil, fmt.Errorf("route %s %s is a %T, not built by this package", r.Method(), r.Path(), r)
	}
	return rt.operation, []string{rt.tag}, nil
}

// routeContainer holds the routes of one resource version.
type routeContainer struct {
	root   string
	routes []common.Route
}

var _ common.RouteContainer = (*routeContainer)(nil)

func (c *routeContainer) RootPath() string                   { return c.root }
func (c *routeContainer) PathParameters() []common.Parameter { return nil }
func (c *routeContainer) Routes() []common.Route             { return c.routes }

// op describes one operation of a resource version, before it becomes a route.
type op struct {
	method, path, id, doc, action string
	// scope are the path parameters; query the query parameters besides pretty.
	scope, query []param
	// body, if not nil, is a sample of the request body, sent as one of consumes.
	body     any
	consumes []string
	// responses are by status code; the first is the one of a successful request.
	responses []response
	// gvk overrides the kind the operation reads or writes (for the scale subresource).
	gvk *schema.GroupVersionKind
}

// paths names the paths, parameters and media types of one resource version's operations.
type paths struct {
	prefix, gvID, tag, ns                        string
	collection, watchCollection, item, watchItem string
	scope, itemScope                             []param
	writeTypes, patchTypes                       []string
}

func newPaths(m *models) paths {
	gv := m.gvk.GroupVersion()
	p := paths{prefix: "/apis/" + gv.Group + "/" + gv.Version}
	if gv.Group == "" {
		p.prefix = "/api/" + gv.Version
	}
	// Operation IDs spell the group-version in camel case (CoordinationV1, CoreV1,
	// StableExampleComV1), tags in snake case (coordination_v1).
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	p.gvID = camel(group, true) + camel(gv.Version, true)
	p.tag = camel(group, false) + "_" + camel(gv.Version, false)

	p.collection, p.watchCollection = p.prefix+"/"+m.plural, p.prefix+"/watch/"+m.plural
	if m.namespaced {
		p.ns = "Namespaced"
		p.collection = p.prefix + "/namespaces/{namespace}/" + m.plural
		p.watchCollection = p.prefix + "/watch/namespaces/{namespace}/" + m.plural
		p.scope = []param{{name: "namespace", description: "The namespace of the objects.", dataType: "string", kind: common.PathParameterKind, required: true}}
	}
	p.item, p.watchItem = p.collection+"/{name}", p.watchCollection+"/{name}"
	p.itemScope = append(slices.Clone(p.scope), param{name: "name", description: "The name of the " + m.gvk.Kind + ".", dataType: "string", kind: common.PathParameterKind, required: true})

	p.writeTypes = []string{mediaJSON, mediaYAML}
	p.patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
	if m.goType {
		// The server reads built-in kinds as protobuf, and patches them strategically,
		// as it has their Go types.
		p.writeTypes = append(p.writeTypes, mediaProtobuf)
		p.patchTypes = append(p.patchTypes, string(types.StrategicMergePatchType))
	}
	return p
}

func ok(model any) response       { return response{http.StatusOK, "OK", model} }
func created(model any) response  { return response{http.StatusCreated, "Created", model} }
func accepted(model any) response { return response{http.StatusAccepted, "Accepted", model} }

const deprecatedWatch = "; deprecated: use the 'watch' parameter with a list operation instead"

// routes returns the operations kube-apiserver would serve for version m of a resource:
// list, watch (including the legacy /watch/ paths), create, deletecollection, get, update,
// patch and delete, plus get, update and patch of its status and scale subresources; a
// review's only operation is its creation.
func routes(m *models) *routeContainer {
	p := newPaths(m)
	kind, gvID, ns := m.gvk.Kind, p.gvID, p.ns
	obj, list := modelSample(m.kindName), modelSample(m.listName)
	status, event := &metav1.Status{}, &metav1.WatchEvent{}

	var ops []op
	if m.review {
		return p.container(m.gvk, []op{{method: "POST", path: p.collection, id: "create" + gvID + ns + kind, doc: "create a " + kind,
			action: actionPost, scope: p.scope, query: writeParams, body: obj, consumes: p.writeTypes, responses: []response{ok(obj), created(obj), accepted(obj)}}})
	}
	if m.namespaced {
		ops = append(ops,
			op{method: "GET", path: p.prefix + "/" + m.plural, id: "list" + gvID + kind + "ForAllNamespaces", doc: "list or watch objects of kind " + kind,
				action: actionList, query: listParams, responses: []response{ok(list)}},
			op{method: "GET", path: p.prefix + "/watch/" + m.plural, id: "watch" + gvID + kind + "ListForAllNamespaces", doc: "watch changes to a list of " + kind + deprecatedWatch,
				action: actionWatchList, query: listParams, responses: []response{ok(event)}},
		)
	}
	ops = append(ops,
		op{method: "GET", path: p.collection, id: "list" + gvID + ns + kind, doc: "list or watch objects of kind " + kind,
			action: actionList, scope: p.scope, query: listParams, responses: []response{ok(list)}},
		op{method: "POST", path: p.collection, id: "create" + gvID + ns + kind, doc: "create a " + kind,
			action: actionPost, scope: p.scope, query: writeParams, body: obj, consumes: p.writeTypes, responses: []response{ok(obj), created(obj), accepted(obj)}},
		op{method: "DELETE", path: p.collection, id: "delete" + gvID + "Collection" + ns + kind, doc: "delete a collection of " + kind,
			action: actionDeleteCollection, scope: p.scope, query: slices.Concat(selectParams, deleteParams), body: &metav1.DeleteOptions{}, consumes: p.writeTypes, responses: []response{ok(status)}},
		op{method: "GET", path: p.item, id: "read" + gvID + ns + kind, doc: "read the specified " + kind,
			action: actionGet, scope: p.itemScope, responses: []response{ok(obj)}},
		op{method: "PUT", path: p.item, id: "replace" + gvID + ns + kind, doc: "replace the specified " + kind,
			action: actionPut, scope: p.itemScope, query: writeParams, body: obj, consumes: p.writeTypes, responses: []response{ok(obj), created(obj)}},
		op{method: "PATCH", path: p.item, id: "patch" + gvID + ns + kind, doc: "partially update the specified " + kind,
			action: actionPatch, scope: p.itemScope, query: patchParams, body: &metav1.Patch{}, consumes: p.patchTypes, responses: []response{ok(obj), created(obj)}},
		op{method: "DELETE", path: p.item, id: "delete" + gvID + ns + kind, doc: "delete a " + kind,
			action: actionDelete, scope: p.itemScope, query: deleteParams, body: &metav1.DeleteOptions{}, consumes: p.writeTypes, responses: []response{ok(status), accepted(status)}},
		op{method: "GET", path: p.watchCollection, id: "watch" + gvID + ns + kind + "List", doc: "watch changes to a list of " + kind + deprecatedWatch,
			action: actionWatchList, scope: p.scope, query: listParams, responses: []response{ok(event)}},
		op{method: "GET", path: p.watchItem, id: "watch" + gvID + ns + kind, doc: "watch changes to an object of kind " + kind + deprecatedWatch + ", filtered to the object with a fieldSelector",
			action: actionWatch, scope: p.itemScope, query: listParams, responses: []response{ok(event)}},
	)
	if m.status {
		ops = append(ops, subresourceOps(p, kind, "Status", "status", obj, nil)...)
	}
	if m.scale {
		ops = append(ops, subresourceOps(p, kind, "Scale", "scale", &autoscalingv1.Scale{}, &scaleGVK)...)
	}

	return p.container(m.gvk, ops)
}

// container holds the routes of ops on kind gvk.
func (p paths) container(gvk schema.GroupVersionKind, ops []op) *routeContainer {
	c := &routeContainer{root: p.prefix}
	for _, o := range ops {
		c.routes = append(c.routes, o.route(gvk, p.tag))
	}
	return c
}

// subresourceOps returns get, update and patch of a subresource (named name, Name in
// operation IDs) whose body is sample, of kind gvk if not nil, else of the resource's kind.
func subresourceOps(p paths, kind, name, path string, sample any, gvk *schema.GroupVersionKind) []op {
	id := p.gvID + p.ns + kind + name
	return []op{
		{method: "GET", path: p.item + "/" + path, id: "read" + id, doc: "read " + path + " of the specified " + kind,
			action: actionGet, scope: p.itemScope, responses: []response{ok(sample)}, gvk: gvk},
		{method: "PUT", path: p.item + "/" + path, id: "replace" + id, doc: "replace " + path + " of the specified " + kind,
			action: actionPut, scope: p.itemScope, query: writeParams, body: sample, consumes: p.writeTypes, responses: []response{ok(sample), created(sample)}, gvk: gvk},
		{method: "PATCH", path: p.item + "/" + path, id: "patch" + id, doc: "partially update " + path + " of the specified " + kind,
			action: actionPatch, scope: p.itemScope, query: patchParams, body: &metav1.Patch{}, consumes: p.patchTypes, responses: []response{ok(sample), created(sample)}, gvk: gvk},
	}
}

// route turns o, an operation on kind gvk tagged tag, into a route.
func (o op) route(gvk schema.GroupVersionKind, tag string) *route {
	r := &route{
		method: o.method, path: o.path, operation: o.id, description: o.doc, action: o.action,
		gvk: gvk, tag: tag, consumes: o.consumes, body: o.body, produces: []string{mediaJSON, mediaYAML},
	}
	if o.gvk != nil {
		r.gvk = *o.gvk
	}
	if o.action == actionList || o.action == actionWatch || o.action == actionWatchList {
		r.produces = append(r.produces, mediaJSONStream)
	}
	for _, p := range slices.Concat(o.scope, []param{paramPretty}, o.query) {
		r.params = append(r.params, p)
	}
	if o.body != nil {
		// DeleteOptions may come as query parameters instead.
		required := o.action != actionDelete && o.action != actionDeleteCollection
		r.params = append(r.params, param{name: "body", kind: common.BodyParameterKind, required: required})
	}
	for _, resp := range o.responses {
		r.responses = append(r.responses, resp)
	}
	return r
}

// camel turns a group or version into an identifier: "stable.example.com" is
// StableExampleCom (upper) or stableExampleCom, "v1beta1" is V1beta1 or v1beta1.
func camel(s string, upper bool) string {
	var b strings.Builder
	for i, part := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if i > 0 || upper {
			part = strings.ToUpper(part[:1]) + part[1:]
		}
		b.WriteString(part)
	}
	return b.String()
}
