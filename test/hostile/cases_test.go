package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The namespace most cases work in, and where its configmaps are.
const (
	ns  = "hostile"
	cms = "/api/v1/namespaces/" + ns + "/configmaps"
)

const (
	jsonType      = "application/json"
	yamlType      = "application/yaml"
	cborType      = "application/cbor"
	protobufType  = "application/vnd.kubernetes.protobuf"
	mergeType     = "application/merge-patch+json"
	jsonPatchType = "application/json-patch+json"
	smpType       = "application/strategic-merge-patch+json"
	applyType     = "application/apply-patch+yaml"
)

func text(s string) func() []byte { return func() []byte { return []byte(s) } }

func get(path string, pick ...string) request {
	return request{method: http.MethodGet, path: path, pick: pick}
}

// list is a read of a collection that counts its items.
func list(path string) request {
	return request{method: http.MethodGet, path: path, count: true}
}

func call(method, path, ctype, body string) request {
	return request{method: method, path: path, ctype: ctype, body: text(body)}
}

// withBody is a request whose body is made when sent (the large ones).
func withBody(method, path, ctype string, body func() []byte) request {
	return request{method: method, path: path, ctype: ctype, body: body}
}

func configMapJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"a":"b"}}`, name)
}

// createConfigMap is a setup request: the configmap name in ns, with data a=b.
func createConfigMap(name string) request {
	return call(http.MethodPost, cms, jsonType, configMapJSON(name))
}

func createNamespace(name string, labels string) request {
	return call(http.MethodPost, "/api/v1/namespaces", jsonType,
		fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{%s}}}`, name, labels))
}

// cases are every hostile case, in the order they run, each in namespace ns, made
// first.
func cases() []hostileCase {
	var all []hostileCase
	for _, group := range [][]hostileCase{verbCases(), pathCases(), bodyCases(), queryCases(), patchCases(), headerCases(), sizeCases()} {
		all = append(all, group...)
	}
	return all
}

// verbCases send verbs the resource does not serve.
func verbCases() []hostileCase {
	probes := list("/api/v1/namespaces?labelSelector=probe%3Ddc")
	probeSetup := []request{createNamespace("probe-dc-1", `"probe":"dc"`), createNamespace("probe-dc-2", `"probe":"dc"`)}
	return []hostileCase{
		{name: "deletecollection namespaces by label", setup: probeSetup,
			req:    request{method: http.MethodDelete, path: "/api/v1/namespaces?labelSelector=probe%3Ddc"},
			checks: []request{probes}},
		{name: "deletecollection namespaces dry run", req: request{method: http.MethodDelete, path: "/api/v1/namespaces?dryRun=All"},
			checks: []request{probes}},
		{name: "deletecollection every namespace", req: request{method: http.MethodDelete, path: "/api/v1/namespaces"},
			checks: []request{probes, get("/api/v1/namespaces/default"), get("/api/v1/namespaces/" + ns)}},
		{name: "put on a collection", req: call(http.MethodPut, cms, jsonType, configMapJSON("put-collection")),
			checks: []request{get(cms + "/put-collection")}},
		{name: "post to a named object", setup: []request{createConfigMap("post-named")},
			req: call(http.MethodPost, cms+"/post-named", jsonType, configMapJSON("post-named"))},
		{name: "patch a collection", req: call(http.MethodPatch, cms, mergeType, `{"data":{"x":"y"}}`)},
		{name: "list tokenreviews", req: get("/apis/authentication.k8s.io/v1/tokenreviews")},
		{name: "get a tokenreview", req: get("/apis/authentication.k8s.io/v1/tokenreviews/x")},
		{name: "watch tokenreviews", req: get("/apis/authentication.k8s.io/v1/tokenreviews?watch=true")},
		{name: "deletecollection selfsubjectaccessreviews", req: request{method: http.MethodDelete, path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"}},
		{name: "get a serviceaccount's token",
			setup: []request{call(http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts", jsonType, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"tok"}}`)},
			req:   get("/api/v1/namespaces/" + ns + "/serviceaccounts/tok/token")},
		{name: "status of a configmap", setup: []request{createConfigMap("no-status")}, req: get(cms + "/no-status/status")},
		{name: "delete a namespace's status", req: request{method: http.MethodDelete, path: "/api/v1/namespaces/" + ns + "/status"}},
		{name: "get a namespace's finalize", req: get("/api/v1/namespaces/" + ns + "/finalize")},
		{name: "post a namespace's finalize", req: call(http.MethodPost, "/api/v1/namespaces/"+ns+"/finalize", jsonType, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"hostile"}}`)},
		{name: "deletecollection services", req: request{method: http.MethodDelete, path: "/api/v1/namespaces/" + ns + "/services"}},
		{name: "unknown method", req: request{method: "FROB", path: cms}},
		{name: "options", req: request{method: http.MethodOptions, path: cms}},
		{name: "head a list", req: request{method: http.MethodHead, path: cms}},
		{name: "subresource of a collection", req: get(cms + "/status")},
	}
}

// pathCases send paths that are not clean, or name nothing.
func pathCases() []hostileCase {
	return []hostileCase{
		{name: "dot-dot into another resource", req: get("/api/v1/namespaces/default/configmaps/../secrets")},
		{name: "doubled slashes", req: get("//api//v1//namespaces")},
		{name: "dot segment", req: get("/api/v1/namespaces/" + ns + "/./configmaps")},
		{name: "escaped dot-dot", req: get(cms + "/%2e%2e")},
		{name: "escaped slash in a name", req: get(cms + "/a%2Fb")},
		{name: "trailing slash on a list", req: get(cms + "/")},
		{name: "trailing slash on an object", setup: []request{createConfigMap("slash")}, req: get(cms + "/slash/")},
		{name: "empty namespace segment", req: get("/api/v1/namespaces//configmaps")},
		{name: "a name of 1000 characters", req: get(cms + "/" + strings.Repeat("a", 1000))},
		{name: "unknown version", req: get("/api/v2/namespaces")},
		{name: "unknown group", req: get("/apis/nope.example.com/v1/things")},
		{name: "unknown resource", req: get("/api/v1/nothings")},
		{name: "unknown subresource", setup: []request{createConfigMap("sub")}, req: get(cms + "/sub/bogus")},
		{name: "too many segments", setup: []request{createConfigMap("deep-path")}, req: get(cms + "/deep-path/status/extra")},
		{name: "group under api", req: get("/api/apps/v1/deployments")},
		{name: "core under apis", req: get("/apis/v1/configmaps")},
		{name: "a name with a NUL", req: get(cms + "/a%00b")},
		{name: "not an API path", req: get("/etc/passwd")},
	}
}

// bodyCases send bodies that are malformed, nested without end, or of the wrong type.
func bodyCases() []hostileCase {
	create := func(ctype string, body func() []byte) request { return withBody(http.MethodPost, cms, ctype, body) }
	return []hostileCase{
		{name: "malformed JSON", req: call(http.MethodPost, cms, jsonType, `{"apiVersion":"v1",`)},
		{name: "JSON nested past the decoder's depth", req: create(jsonType, deepJSON(100000))},
		{name: "JSON nested under the decoder's depth", req: create(jsonType, deepJSON(5000))},
		{name: "YAML alias bomb", req: create(yamlType, yamlAliasBomb)},
		{name: "YAML nested deep", req: create(yamlType, deepYAML(20000))},
		{name: "CBOR malformed", req: create(cborType, func() []byte { return []byte{0xbf, 0x61} })},
		{name: "CBOR nested deep", req: create(cborType, deepCBOR(100000))},
		{name: "CBOR array longer than its body", req: create(cborType, func() []byte { return []byte{0x9b, 0, 0, 0, 1, 0, 0, 0, 0} })},
		{name: "protobuf malformed", req: create(protobufType, func() []byte { return []byte("k8s\x00\x12\xff\xff\xff\xff\x07") })},
		{name: "protobuf without its magic", req: create(protobufType, text(`{"apiVersion":"v1"}`))},
		{name: "plain text", req: call(http.MethodPost, cms, "text/plain", "hello")},
		{name: "no content type", req: call(http.MethodPost, cms, "", configMapJSON("no-ctype")),
			checks: []request{get(cms + "/no-ctype")}},
		{name: "a media type with a bad parameter", req: call(http.MethodPost, cms, "application/json; charset=utf-16", configMapJSON("utf16"))},
		{name: "null", req: call(http.MethodPost, cms, jsonType, "null")},
		{name: "an array", req: call(http.MethodPost, cms, jsonType, "[]")},
		{name: "a string", req: call(http.MethodPost, cms, jsonType, `"configmap"`)},
		{name: "an empty body", req: call(http.MethodPost, cms, jsonType, "")},
		{name: "a number past float64", req: call(http.MethodPost, cms, jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"num","generation":1e400}}`)},
		{name: "metadata a string", req: call(http.MethodPost, cms, jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":"x"}`)},
		{name: "a NUL in a name", req: call(http.MethodPost, cms, jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a\u0000b"}}`)},
		{name: "invalid UTF-8", req: withBody(http.MethodPost, cms, jsonType, func() []byte {
			return []byte("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"utf\"},\"data\":{\"a\":\"\xff\xfe\"}}")
		}), checks: []request{get(cms+"/utf", "data.a")}},
		{name: "a name of 100000 characters", req: call(http.MethodPost, cms, jsonType, configMapJSON(strings.Repeat("a", 100000)))},
		{name: "duplicate fields under Strict", req: call(http.MethodPost, cms+"?fieldValidation=Strict", jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","name":"y"}}`)},
		{name: "a body over the limit", req: create(jsonType, func() []byte {
			return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":%q}}`, strings.Repeat("a", 4<<20)))
		}), checks: []request{get(cms + "/big")}},
		{name: "a body shorter than its length", req: request{method: http.MethodPost, path: cms, ctype: jsonType, body: text(configMapJSON("stalled")), stall: true},
			checks: []request{get(cms + "/stalled")}},
		{name: "an update's body shorter than its length", setup: []request{createConfigMap("stalled-update")},
			req:    request{method: http.MethodPut, path: cms + "/stalled-update", ctype: jsonType, body: text(configMapJSON("stalled-update")), stall: true},
			checks: []request{get(cms+"/stalled-update", "data.a")}},
	}
}

// queryCases send query parameters kube-apiserver refuses.
func queryCases() []hostileCase {
	createWith := func(query string) request { return call(http.MethodPost, cms+"?"+query, jsonType, configMapJSON("q")) }
	return []hostileCase{
		{name: "create dryRun bogus", req: createWith("dryRun=bogus")},
		{name: "create fieldManager too long", req: createWith("fieldManager=" + strings.Repeat("m", 129))},
		{name: "create fieldManager with a newline", req: createWith("fieldManager=a%0Ab")},
		{name: "create fieldValidation bogus", req: createWith("fieldValidation=Bogus")},
		{name: "update dryRun bogus", setup: []request{createConfigMap("q-update")},
			req: call(http.MethodPut, cms+"/q-update?dryRun=bogus", jsonType, configMapJSON("q-update"))},
		{name: "patch dryRun bogus", setup: []request{createConfigMap("q-patch")},
			req: call(http.MethodPatch, cms+"/q-patch?dryRun=bogus", mergeType, `{"data":{"x":"y"}}`)},
		{name: "patch force without apply", setup: []request{createConfigMap("q-force")},
			req: call(http.MethodPatch, cms+"/q-force?force=true", mergeType, `{"data":{"x":"y"}}`)},
		{name: "apply without fieldManager", req: call(http.MethodPatch, cms+"/q-apply", applyType, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q-apply\n"),
			checks: []request{get(cms + "/q-apply")}},
		{name: "resourceVersionMatch without resourceVersion", req: get(cms + "?resourceVersionMatch=Exact")},
		{name: "resourceVersionMatch bogus", req: get(cms + "?resourceVersionMatch=Bogus&resourceVersion=1")},
		{name: "resourceVersionMatch on a watch", req: get(cms + "?watch=true&resourceVersionMatch=NotOlderThan&resourceVersion=1")},
		{name: "sendInitialEvents without watch", req: get(cms + "?sendInitialEvents=true")},
		{name: "list resourceVersion not a number", req: get(cms + "?resourceVersion=abc")},
		{name: "get resourceVersion not a number", setup: []request{createConfigMap("q-get")}, req: get(cms + "/q-get?resourceVersion=abc"),
			deviation: "kube-apiserver answers a 500 without a reason; the client's mistake is a 400",
			want:      &answer{Code: http.StatusBadRequest, Kind: "Status", Reason: "BadRequest"}},
		{name: "limit negative", setup: []request{createConfigMap("limit-neg")}, req: list(cms + "?limit=-1&fieldSelector=metadata.name%3Dlimit-neg")},
		{name: "limit not a number", req: get(cms + "?limit=abc")},
		{name: "continue not a token", req: get(cms + "?limit=1&continue=garbage")},
		{name: "label selector malformed", req: get(cms + "?labelSelector=a%20in%20(")},
		{name: "field selector on an unknown field", req: get(cms + "?fieldSelector=spec.bogus%3D1")},
		{name: "field selector malformed", req: get(cms + "?fieldSelector=metadata.name%3D%3Dx%3D%3Dy")},
		{name: "label selector of 40000 terms", req: get(cms + "?labelSelector=" + terms("l", 40000))},
		{name: "field selector of 40000 terms", setup: []request{createConfigMap("fs-terms")},
			req: list(cms + "?fieldSelector=metadata.name%3Dfs-terms," + terms("metadata.name!%3Dn", 40000))},
		{name: "watch timeoutSeconds negative", req: request{method: http.MethodGet, path: cms + "?watch=true&timeoutSeconds=-5", stream: true}},
		{name: "timeout not a duration", req: get(cms + "?timeout=abc")},
		{name: "delete propagationPolicy bogus", setup: []request{createConfigMap("q-prop")},
			req: request{method: http.MethodDelete, path: cms + "/q-prop?propagationPolicy=Bogus"}, checks: []request{get(cms + "/q-prop")}},
		{name: "delete gracePeriodSeconds negative", setup: []request{createConfigMap("q-grace")},
			req: request{method: http.MethodDelete, path: cms + "/q-grace?gracePeriodSeconds=-1"}, checks: []request{get(cms + "/q-grace")}},
		{name: "delete orphan and propagation", setup: []request{createConfigMap("q-orphan")},
			req:    call(http.MethodDelete, cms+"/q-orphan", jsonType, `{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":true,"propagationPolicy":"Background"}`),
			checks: []request{get(cms + "/q-orphan")}},
		{name: "delete dryRun bogus", setup: []request{createConfigMap("q-deldry")},
			req: request{method: http.MethodDelete, path: cms + "/q-deldry?dryRun=bogus"}, checks: []request{get(cms + "/q-deldry")}},
		{name: "deletecollection dryRun bogus", setup: []request{createConfigMap("q-dcdry")},
			req: request{method: http.MethodDelete, path: cms + "?dryRun=bogus"}, checks: []request{get(cms + "/q-dcdry")}},
		{name: "delete body not DeleteOptions", setup: []request{createConfigMap("q-delbody")},
			req: call(http.MethodDelete, cms+"/q-delbody", jsonType, `{"kind":"ConfigMap","apiVersion":"v1"}`), checks: []request{get(cms + "/q-delbody")}},
	}
}

// patchCases send patches that are bombs, malformed, or of the wrong type.
func patchCases() []hostileCase {
	patch := func(name, ctype, body string) request { return call(http.MethodPatch, cms+"/"+name, ctype, body) }
	bomb := []request{call(http.MethodPost, cms, jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"copy-bomb"},"data":{"a":"b"}}`)}
	return []hostileCase{
		{name: "JSON patch copy bomb", setup: bomb,
			req:    withBody(http.MethodPatch, cms+"/copy-bomb", jsonPatchType, copyBomb(12)),
			checks: []request{get(cms+"/copy-bomb", "data.a")}},
		{name: "JSON patch of 10001 operations", setup: []request{createConfigMap("ops-10001")},
			req:    withBody(http.MethodPatch, cms+"/ops-10001", jsonPatchType, manyOps(10001)),
			checks: []request{get(cms+"/ops-10001", "data.a")}},
		{name: "JSON patch of 60000 operations", setup: []request{createConfigMap("ops-60000")},
			req: withBody(http.MethodPatch, cms+"/ops-60000", jsonPatchType, manyOps(60000))},
		{name: "JSON patch of 10000 operations", setup: []request{createConfigMap("ops-10000")},
			req: withBody(http.MethodPatch, cms+"/ops-10000", jsonPatchType, manyOps(10000))},
		{name: "JSON patch with an unknown op", setup: []request{createConfigMap("jp-op")},
			req: patch("jp-op", jsonPatchType, `[{"op":"frob","path":"/data/a"}]`)},
		{name: "JSON patch not a list", setup: []request{createConfigMap("jp-list")},
			req: patch("jp-list", jsonPatchType, `{"op":"add"}`)},
		{name: "JSON patch failing test", setup: []request{createConfigMap("jp-test")},
			req: patch("jp-test", jsonPatchType, `[{"op":"test","path":"/data/a","value":"z"}]`)},
		{name: "JSON patch removing metadata", setup: []request{createConfigMap("jp-meta")},
			req: patch("jp-meta", jsonPatchType, `[{"op":"remove","path":"/metadata"}]`)},
		{name: "JSON patch of a missing object", req: patch("jp-missing", jsonPatchType, `[{"op":"add","path":"/data/x","value":"y"}]`)},
		{name: "merge patch making metadata a string", setup: []request{createConfigMap("mp-meta")},
			req: patch("mp-meta", mergeType, `{"metadata":"x"}`), checks: []request{get(cms+"/mp-meta", "data.a")}},
		{name: "merge patch making data a list", setup: []request{createConfigMap("mp-data")},
			req: patch("mp-data", mergeType, `{"data":[1]}`)},
		{name: "merge patch nested deep", setup: []request{createConfigMap("mp-deep")},
			req: withBody(http.MethodPatch, cms+"/mp-deep", mergeType, deepJSONPatch(100000))},
		{name: "merge patch not an object", setup: []request{createConfigMap("mp-list")}, req: patch("mp-list", mergeType, `[1]`)},
		{name: "strategic merge patch deleting the object", setup: []request{createConfigMap("smp-delete")},
			req: patch("smp-delete", smpType, `{"$patch":"delete"}`), checks: []request{get(cms + "/smp-delete")}},
		{name: "strategic merge patch with a bad directive", setup: []request{createConfigMap("smp-bad")},
			req:       patch("smp-bad", smpType, `{"$setElementOrder/data":"x"}`),
			deviation: "kube-apiserver answers a 500 without a reason; the client's mistake is a 400",
			want:      &answer{Code: http.StatusBadRequest, Kind: "Status", Reason: "BadRequest"}},
		{name: "apply without apiVersion", req: patch("ap-noversion", applyType, "kind: ConfigMap\nmetadata:\n  name: ap-noversion\n").withQuery("fieldManager=m"),
			checks: []request{get(cms + "/ap-noversion")}},
		{name: "apply without kind", req: patch("ap-nokind", applyType, "apiVersion: v1\nmetadata:\n  name: ap-nokind\n").withQuery("fieldManager=m"),
			checks: []request{get(cms + "/ap-nokind")}},
		{name: "apply of another group's version", req: patch("ap-group", applyType, "apiVersion: apps/v1\nkind: ConfigMap\nmetadata:\n  name: ap-group\n").withQuery("fieldManager=m"),
			checks: []request{get(cms + "/ap-group")}},
		{name: "apply of another kind", req: patch("ap-kind", applyType, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ap-kind\n").withQuery("fieldManager=m"),
			checks: []request{get(cms + "/ap-kind")}},
		{name: "apply of another name", req: patch("ap-name", applyType, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n").withQuery("fieldManager=m"),
			checks: []request{get(cms + "/ap-name")}},
		{name: "apply YAML alias bomb", req: withBody(http.MethodPatch, cms+"/ap-bomb?fieldManager=m", applyType, yamlAliasBomb)},
		{name: "apply of a JSON list", req: patch("ap-list", applyType, `[1]`).withQuery("fieldManager=m")},
		{name: "JSON patch testing the whole object without a value", setup: []request{createConfigMap("jp-root")},
			req:       patch("jp-root", jsonPatchType, `[{"op":"test","path":""}]`),
			deviation: "kube-apiserver's JSON patch library panics on it; the client's mistake is a 422, as any patch that does not apply",
			want:      &answer{Code: http.StatusUnprocessableEntity, Kind: "Status", Reason: "Invalid"}},
		{name: "strategic merge patch with a list for a merge key",
			setup: []request{call(http.MethodPost, "/apis/apps/v1/namespaces/"+ns+"/deployments", jsonType,
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"smp-key"},"spec":{"selector":{"matchLabels":{"a":"b"}},`+
					`"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`)},
			req: call(http.MethodPatch, "/apis/apps/v1/namespaces/"+ns+"/deployments/smp-key", smpType,
				`{"spec":{"template":{"spec":{"containers":[{"name":[]}]}}}}`),
			checks:    []request{get("/apis/apps/v1/namespaces/"+ns+"/deployments/smp-key", "spec.template.spec.containers[0].name")},
			deviation: "kube-apiserver's strategic merge patch library panics on it; the client's mistake is a 400",
			want:      &answer{Code: http.StatusBadRequest, Kind: "Status", Reason: "BadRequest"}},
		{name: "patch of an unknown type", setup: []request{createConfigMap("pt-xml")}, req: patch("pt-xml", "application/xml", `<a/>`)},
		{name: "patch without a type", setup: []request{createConfigMap("pt-none")}, req: patch("pt-none", "", `{"data":{"x":"y"}}`)},
	}
}

// headerCases send headers that are out of the ordinary.
func headerCases() []hostileCase {
	return []hostileCase{
		{name: "accept an unknown media type", req: request{method: http.MethodGet, path: cms, header: map[string]string{"Accept": "application/xml"}}},
		{name: "accept an unknown table version", req: request{method: http.MethodGet, path: cms,
			header: map[string]string{"Accept": "application/json;as=Table;v=v9;g=meta.k8s.io"}}},
		{name: "impersonate a group without a user", req: request{method: http.MethodGet, path: cms,
			header: map[string]string{"Impersonate-Group": "system:masters"}}},
		{name: "impersonate a uid without a user", req: request{method: http.MethodGet, path: cms,
			header: map[string]string{"Impersonate-Uid": "1234"}}},
		{name: "create without a user agent", req: request{method: http.MethodPost, path: cms, ctype: jsonType, body: text(configMapJSON("no-agent")),
			header: map[string]string{"User-Agent": ""}}, checks: []request{get(cms+"/no-agent", "metadata.managedFields[0].manager")}},
		{name: "create with an unprintable user agent", req: request{method: http.MethodPost, path: cms, ctype: jsonType, body: text(configMapJSON("odd-agent")),
			header: map[string]string{"User-Agent": "odd\u0085agent\tx/1.0"}}, checks: []request{get(cms+"/odd-agent", "metadata.managedFields[0].manager")}},
		{name: "delete a configmap", setup: []request{createConfigMap("del")},
			req: request{method: http.MethodDelete, path: cms + "/del"}, checks: []request{get(cms + "/del")}},
		{name: "delete a configmap dry run", setup: []request{createConfigMap("del-dry")},
			req: request{method: http.MethodDelete, path: cms + "/del-dry?dryRun=All"}, checks: []request{get(cms + "/del-dry")}},
		{name: "delete a namespace", setup: []request{createNamespace("del-ns", "")},
			req: request{method: http.MethodDelete, path: "/api/v1/namespaces/del-ns"}},
		{name: "deletecollection configmaps by label", setup: []request{labelledConfigMap("dc-1"), labelledConfigMap("dc-2"), labelledConfigMap("dc-3")},
			req:    request{method: http.MethodDelete, path: cms + "?labelSelector=probe%3Ddc", count: true},
			checks: []request{list(cms + "?labelSelector=probe%3Ddc")}},
		{name: "deletecollection configmaps one page", setup: []request{labelledConfigMap("dc-4"), labelledConfigMap("dc-5")},
			req:    request{method: http.MethodDelete, path: cms + "?labelSelector=probe%3Ddc&limit=1", count: true},
			checks: []request{list(cms + "?labelSelector=probe%3Ddc")}},
	}
}

// labelledConfigMap is a setup request: the configmap name in ns, labelled probe=dc.
func labelledConfigMap(name string) request {
	return call(http.MethodPost, cms, jsonType, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{"probe":"dc"}}}`, name))
}

// sizeCases send objects near and past what etcd stores.
func sizeCases() []hostileCase {
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"blobs.hostile.example.com"},
"spec":{"group":"hostile.example.com","scope":"Namespaced","names":{"plural":"blobs","singular":"blob","kind":"Blob"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	blobs := "/apis/hostile.example.com/v1/namespaces/" + ns + "/blobs"
	return []hostileCase{
		{name: "a configmap of 100000 keys", req: withBody(http.MethodPost, cms, jsonType, manyKeys("many-keys", 100000)),
			checks: []request{get(cms+"/many-keys", "data.k099999")}},
		{name: "a custom resource of 2 MiB",
			setup: []request{call(http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jsonType, crd),
				{method: http.MethodGet, path: blobs, until: http.StatusOK}},
			req: withBody(http.MethodPost, blobs, jsonType, func() []byte {
				return []byte(fmt.Sprintf(`{"apiVersion":"hostile.example.com/v1","kind":"Blob","metadata":{"name":"big"},"blob":%q}`, strings.Repeat("b", 2<<20)))
			}),
			checks:    []request{get(blobs + "/big")},
			deviation: "kube-apiserver answers etcd's refusal of a value over its request limit as a 500; Concord refuses the object before the write, naming the limit",
			want:      &answer{Code: http.StatusRequestEntityTooLarge, Kind: "Status", Reason: "RequestEntityTooLarge"}},
	}
}

// terms is n selector terms "<prefix><i>", comma-separated.
func terms(prefix string, n int) string {
	t := make([]string, n)
	for i := range t {
		t[i] = fmt.Sprint(prefix, i)
	}
	return strings.Join(t, ",")
}

// withQuery appends a query to a request's path.
func (r request) withQuery(q string) request {
	sep := "?"
	if strings.Contains(r.path, "?") {
		sep = "&"
	}
	r.path += sep + q
	return r
}

// copyBomb is a JSON patch that adds a list of one 64 KiB string under a new
// top-level key, then copies the list into itself n times, doubling it each time.
func copyBomb(n int) func() []byte {
	return func() []byte {
		ops := []map[string]any{{"op": "add", "path": "/x", "value": []any{strings.Repeat("a", 64<<10)}}}
		for range n {
			ops = append(ops, map[string]any{"op": "copy", "from": "/x", "path": "/x/-"})
		}
		data, _ := json.Marshal(ops)
		return data
	}
}

// manyOps is a JSON patch of n operations, each a test that passes.
func manyOps(n int) func() []byte {
	return func() []byte {
		var b bytes.Buffer
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"op":"test","path":"/data/a","value":"b"}`)
		}
		b.WriteString("]")
		return b.Bytes()
	}
}

// manyKeys is a configmap of n keys, each of value "v".
func manyKeys(name string, n int) func() []byte {
	return func() []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{`, name)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%06d":"v"`, i)
		}
		b.WriteString("}}")
		return b.Bytes()
	}
}

// deepJSON is a configmap whose data holds lists nested depth deep.
func deepJSON(depth int) func() []byte {
	return func() []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":{"a":` +
			strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}`)
	}
}

// deepJSONPatch is a merge patch of objects nested depth deep.
func deepJSONPatch(depth int) func() []byte {
	return func() []byte {
		return []byte(`{"data":` + strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth) + `}`)
	}
}

// deepYAML is a configmap whose data holds flow lists nested depth deep.
func deepYAML(depth int) func() []byte {
	return func() []byte {
		return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep-yaml\ndata:\n  a: " +
			strings.Repeat("[", depth) + strings.Repeat("]", depth) + "\n")
	}
}

// deepCBOR is a map {"a": [[[...]]]} with lists nested depth deep.
func deepCBOR(depth int) func() []byte {
	return func() []byte {
		b := []byte{0xd9, 0xd9, 0xf7, 0xa1, 0x61, 'a'} // self-described CBOR, a map of one pair
		b = append(b, bytes.Repeat([]byte{0x81}, depth)...)
		return append(b, 0x80)
	}
}

// yamlAliasBomb is a "billion laughs": nine levels of lists of nine aliases of the
// level below.
func yamlAliasBomb() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n")
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&b, "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	return []byte(b.String())
}
