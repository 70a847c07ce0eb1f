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

// routes returns the operations kube-apiserver would serve for version m of a resource:
// list, watch (including the legacy /watch/ paths), create, deletecollection, get, update,
// patch and delete, plus get, update and patch of its status and scale subresources.
func routes(m *models) *routeContainer {
	gv := m.gvk.GroupVersion()
	prefix := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		prefix = "/api/" + gv.Version
	}
	// Operation IDs spell the group-version in camel case (CoordinationV1, CoreV1,
	// StableExampleComV1), tags in snake case (coordination_v1).
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	gvID := camel(group, true) + camel(gv.Version, true)
	tag := camel(group, false) + "_" + camel(gv.Version, false)

	kind := m.gvk.Kind
	ns, collection, watchCollection, scope := "", prefix+"/"+m.plural, prefix+"/watch/"+m.plural, []param(nil)
	if m.namespaced {
		ns = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + m.plural
		watchCollection = prefix + "/watch/namespaces/{namespace}/" + m.plural
		scope = []param{{name: "namespace", description: "The namespace of the objects.", dataType: "string", kind: common.PathParameterKind, required: true}}
	}
	item, watchItem := collection+"/{name}", watchCollection+"/{name}"
	itemScope := append(slices.Clone(scope), param{name: "name", description: "The name of the " + kind + ".", dataType: "string", kind: common.PathParameterKind, required: true})

	obj, list := modelSample(m.kindName), modelSample(m.listName)
	status, scale, event := &metav1.Status{}, &autoscalingv1.Scale{}, &metav1.WatchEvent{}
	ok := func(model any) response { return response{http.StatusOK, "OK", model} }
	created := func(model any) response { return response{http.StatusCreated, "Created", model} }
	accepted := func(model any) response { return response{http.StatusAccepted, "Accepted", model} }

	writeTypes := []string{mediaJSON, mediaYAML}
	patchTypes := []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
	if m.goType {
		// The server reads built-in kinds as protobuf, and patches them strategically,
		// as it has their Go types.
		writeTypes = append(writeTypes, mediaProtobuf)
		patchTypes = append(patchTypes, string(types.StrategicMergePatchType))
	}
	const deprecatedWatch = "; deprecated: use the 'watch' parameter with a list operation instead"

	var ops []op
	if m.namespaced {
		ops = append(ops,
			op{method: "GET", path: prefix + "/" + m.plural, id: "list" + gvID + kind + "ForAllNamespaces", doc: "list or watch objects of kind " + kind,
				action: actionList, query: listParams, responses: []response{ok(list)}},
			op{method: "GET", path: prefix + "/watch/" + m.plural, id: "watch" + gvID + kind + "ListForAllNamespaces", doc: "watch changes to a list of " + kind + deprecatedWatch,
				action: actionWatchList, query: listParams, responses: []response{ok(event)}},
		)
	}
	ops = append(ops,
		op{method: "GET", path: collection, id: "list" + gvID + ns + kind, doc: "list or watch objects of kind " + kind,
			action: actionList, scope: scope, query: listParams, responses: []response{ok(list)}},
		op{method: "POST", path: collection, id: "create" + gvID + ns + kind, doc: "create a " + kind,
			action: actionPost, scope: scope, query: writeParams, body: obj, consumes: writeTypes, responses: []response{ok(obj), created(obj), accepted(obj)}},
		op{method: "DELETE", path: collection, id: "delete" + gvID + "Collection" + ns + kind, doc: "delete a collection of " + kind,
			action: actionDeleteCollection, scope: scope, query: slices.Concat(selectParams, deleteParams), body: &metav1.DeleteOptions{}, consumes: writeTypes, responses: []response{ok(status)}},
		op{method: "GET", path: item, id: "read" + gvID + ns + kind, doc: "read the specified " + kind,
			action: actionGet, scope: itemScope, responses: []response{ok(obj)}},
		op{method: "PUT", path: item, id: "replace" + gvID + ns + kind, doc: "replace the specified " + kind,
			action: actionPut, scope: itemScope, query: writeParams, body: obj, consumes: writeTypes, responses: []response{ok(obj), created(obj)}},
		op{method: "PATCH", path: item, id: "patch" + gvID + ns + kind, doc: "partially update the specified " + kind,
			action: actionPatch, scope: itemScope, query: patchParams, body: &metav1.Patch{}, consumes: patchTypes, responses: []response{ok(obj), created(obj)}},
		op{method: "DELETE", path: item, id: "delete" + gvID + ns + kind, doc: "delete a " + kind,
			action: actionDelete, scope: itemScope, query: deleteParams, body: &metav1.DeleteOptions{}, consumes: writeTypes, responses: []response{ok(status), accepted(status)}},
		op{method: "GET", path: watchCollection, id: "watch" + gvID + ns + kind + "List", doc: "watch changes to a list of " + kind + deprecatedWatch,
			action: actionWatchList, scope: scope, query: listParams, responses: []response{ok(event)}},
		op{method: "GET", path: watchItem, id: "watch" + gvID + ns + kind, doc: "watch changes to an object of kind " + kind + deprecatedWatch + ", filtered to the object with a fieldSelector",
			action: actionWatch, scope: itemScope, query: listParams, responses: []response{ok(event)}},
	)
	if m.status {
		ops = append(ops,
			op{method: "GET", path: item + "/status", id: "read" + gvID + ns + kind + "Status", doc: "read status of the specified " + kind,
				action: actionGet, scope: itemScope, responses: []response{ok(obj)}},
			op{method: "PUT", path: item + "/status", id: "replace" + gvID + ns + kind + "Status", doc: "replace status of the specified " + kind,
				action: actionPut, scope: itemScope, query: writeParams, body: obj, consumes: writeTypes, responses: []response{ok(obj), created(obj)}},
			op{method: "PATCH", path: item + "/status", id: "patch" + gvID + ns + kind + "Status", doc: "partially update status of the specified " + kind,
				action: actionPatch, scope: itemScope, query: patchParams, body: &metav1.Patch{}, consumes: patchTypes, responses: []response{ok(obj), created(obj)}},
		)
	}
	if m.scale {
		ops = append(ops,
			op{method: "GET", path: item + "/scale", id: "read" + gvID + ns + kind + "Scale", doc: "read scale of the specified " + kind,
				action: actionGet, scope: itemScope, responses: []response{ok(scale)}, gvk: &scaleGVK},
			op{method: "PUT", path: item + "/scale", id: "replace" + gvID + ns + kind + "Scale", doc: "replace scale of the specified " + kind,
				action: actionPut, scope: itemScope, query: writeParams, body: scale, consumes: writeTypes, responses: []response{ok(scale), created(scale)}, gvk: &scaleGVK},
			op{method: "PATCH", path: item + "/scale", id: "patch" + gvID + ns + kind + "Scale", doc: "partially update scale of the specified " + kind,
				action: actionPatch, scope: itemScope, query: patchParams, body: &metav1.Patch{}, consumes: patchTypes, responses: []response{ok(scale), created(scale)}, gvk: &scaleGVK},
		)
	}

	c := &routeContainer{root: prefix}
	for _, o := range ops {
		c.routes = append(c.routes, o.route(m.gvk, tag))
	}
	return c
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
