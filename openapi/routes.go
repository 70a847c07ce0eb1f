package openapi

import (
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
	rt := r.(*route)
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
	ns, collection, watchCollection := "", prefix+"/"+m.plural, prefix+"/watch/"+m.plural
	nsParam := param{name: "namespace", description: "The namespace of the objects.", dataType: "string", kind: common.PathParameterKind, required: true}
	nameParam := param{name: "name", description: "The name of the " + kind + ".", dataType: "string", kind: common.PathParameterKind, required: true}
	scope := []param{}
	if m.namespaced {
		ns = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + m.plural
		watchCollection = prefix + "/watch/namespaces/{namespace}/" + m.plural
		scope = []param{nsParam}
	}
	item, watchItem := collection+"/{name}", watchCollection+"/{name}"
	itemScope := append(append([]param{}, scope...), nameParam)

	obj, list := modelSample(m.kindName), modelSample(m.listName)
	status, scale := &metav1.Status{}, &autoscalingv1.Scale{}
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

	b := &routeBuilder{gvk: m.gvk, tag: tag, produces: []string{mediaJSON, mediaYAML}}
	var rs []*route
	if m.namespaced {
		rs = append(rs,
			b.route("GET", prefix+"/"+m.plural, "list"+gvID+kind+"ForAllNamespaces", "list or watch objects of kind "+kind, actionList, nil, listParams, nil, nil, ok(list)),
			b.route("GET", prefix+"/watch/"+m.plural, "watch"+gvID+kind+"ListForAllNamespaces", "watch individual changes to a list of "+kind+"; deprecated: use the 'watch' parameter with a list operation instead", actionWatchList, nil, listParams, nil, nil, ok(&metav1.WatchEvent{})),
		)
	}
	rs = append(rs,
		b.route("GET", collection, "list"+gvID+ns+kind, "list or watch objects of kind "+kind, actionList, scope, listParams, nil, nil, ok(list)),
		b.route("POST", collection, "create"+gvID+ns+kind, "create a "+kind, actionPost, scope, writeParams, writeTypes, obj, ok(obj), created(obj), accepted(obj)),
		b.route("DELETE", collection, "delete"+gvID+"Collection"+ns+kind, "delete a collection of "+kind, actionDeleteCollection, scope, slices.Concat(selectParams, deleteParams), writeTypes, &metav1.DeleteOptions{}, ok(status)),
		b.route("GET", item, "read"+gvID+ns+kind, "read the specified "+kind, actionGet, itemScope, nil, nil, nil, ok(obj)),
		b.route("PUT", item, "replace"+gvID+ns+kind, "replace the specified "+kind, actionPut, itemScope, writeParams, writeTypes, obj, ok(obj), created(obj)),
		b.route("PATCH", item, "patch"+gvID+ns+kind, "partially update the specified "+kind, actionPatch, itemScope, patchParams, patchTypes, &metav1.Patch{}, ok(obj), created(obj)),
		b.route("DELETE", item, "delete"+gvID+ns+kind, "delete a "+kind, actionDelete, itemScope, deleteParams, writeTypes, &metav1.DeleteOptions{}, ok(status), accepted(status)),
		b.route("GET", watchCollection, "watch"+gvID+ns+kind+"List", "watch individual changes to a list of "+kind+"; deprecated: use the 'watch' parameter with a list operation instead", actionWatchList, scope, listParams, nil, nil, ok(&metav1.WatchEvent{})),
		b.route("GET", watchItem, "watch"+gvID+ns+kind, "watch changes to an object of kind "+kind+"; deprecated: use the 'watch' parameter with a list operation, filtered to a single item with the 'fieldSelector' parameter, instead", actionWatch, itemScope, listParams, nil, nil, ok(&metav1.WatchEvent{})),
	)
	if m.status {
		rs = append(rs,
			b.route("GET", item+"/status", "read"+gvID+ns+kind+"Status", "read status of the specified "+kind, actionGet, itemScope, nil, nil, nil, ok(obj)),
			b.route("PUT", item+"/status", "replace"+gvID+ns+kind+"Status", "replace status of the specified "+kind, actionPut, itemScope, writeParams, writeTypes, obj, ok(obj), created(obj)),
			b.route("PATCH", item+"/status", "patch"+gvID+ns+kind+"Status", "partially update status of the specified "+kind, actionPatch, itemScope, patchParams, patchTypes, &metav1.Patch{}, ok(obj), created(obj)),
		)
	}
	if m.scale {
		sb := *b
		sb.gvk = scaleGVK
		rs = append(rs,
			sb.route("GET", item+"/scale", "read"+gvID+ns+kind+"Scale", "read scale of the specified "+kind, actionGet, itemScope, nil, nil, nil, ok(scale)),
			sb.route("PUT", item+"/scale", "replace"+gvID+ns+kind+"Scale", "replace scale of the specified "+kind, actionPut, itemScope, writeParams, writeTypes, scale, ok(scale), created(scale)),
			sb.route("PATCH", item+"/scale", "patch"+gvID+ns+kind+"Scale", "partially update scale of the specified "+kind, actionPatch, itemScope, patchParams, patchTypes, &metav1.Patch{}, ok(scale), created(scale)),
		)
	}
	c := &routeContainer{root: prefix}
	for _, r := range rs {
		c.routes = append(c.routes, r)
	}
	return c
}

// routeBuilder holds what the routes of one resource version share.
type routeBuilder struct {
	gvk      schema.GroupVersionKind
	tag      string
	produces []string
}

// route returns an operation. scope are its path parameters, opts its query parameters
// besides pretty; body, if not nil, is the sample of its request body, sent as consumes.
func (b *routeBuilder) route(method, path, operation, description, action string, scope, opts []param, consumes []string, body any, responses ...response) *route {
	r := &route{
		method: method, path: path, operation: operation, description: description, action: action,
		gvk: b.gvk, tag: b.tag, consumes: consumes, body: body, produces: b.produces,
	}
	if action == actionList || action == actionWatch || action == actionWatchList {
		r.produces = append(append([]string{}, b.produces...), mediaJSONStream)
	}
	for _, p := range scope {
		r.params = append(r.params, p)
	}
	r.params = append(r.params, paramPretty)
	for _, p := range opts {
		r.params = append(r.params, p)
	}
	if body != nil {
		r.params = append(r.params, param{name: "body", kind: common.BodyParameterKind, required: action != actionDelete && action != actionDeleteCollection})
	}
	for _, resp := range responses {
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
