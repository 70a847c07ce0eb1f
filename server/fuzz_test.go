package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The fuzz targets of this file feed arbitrary request bodies through the decoders
// and patch types of create, update and patch, as the handlers call them. Whatever the
// body, the server must answer a 4xx StatusError (never a panic, never a 5xx), and
// what it accepts must be an object of the endpoint's kind that it can encode.
//
// Each target reads a selector byte that picks the resource (see fuzzEnv) and the
// fieldValidation (see fuzzSelector); seeds cover each resource.

// Indexes of fuzzEnv.res.
const (
	fuzzConfigMap  = iota // ConfigMap v1, from the API catalog
	fuzzDeployment        // apps/v1 Deployment, from the API catalog
	fuzzWidget            // a custom resource with a structural schema
	fuzzGadget            // a custom resource without a schema
	fuzzResources
)

var fuzzValidations = [...]fieldValidation{validationIgnore, validationWarn, validationStrict}

// fuzzSelector is the selector byte of resource index res and fieldValidation index fv
// (of fuzzValidations); alt sets the high bit, which some targets read as "take the
// other route" (another Content-Type, say).
func fuzzSelector(res, fv int, alt bool) uint8 {
	s := uint8(res + fuzzResources*fv)
	if alt {
		s |= 0x80
	}
	return s
}

type fuzzEnv struct {
	res [fuzzResources]*registry.Resource
	// current is each resource's object as stored, the default base of patches.
	current [fuzzResources]*unstructured.Unstructured
}

// pick returns the resource and fieldValidation sel selects, and its high bit.
func (e *fuzzEnv) pick(sel uint8) (*registry.Resource, fieldValidation, bool) {
	s := int(sel & 0x7f)
	return e.res[s%fuzzResources], fuzzValidations[s/fuzzResources%len(fuzzValidations)], sel&0x80 != 0
}

var fuzzEnvOnce = sync.OnceValues(newFuzzEnv)

func getFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	env, err := fuzzEnvOnce()
	if err != nil {
		f.Fatal(err)
	}
	return env
}

// fuzzWidgetSchema is the schema of the Widget custom resource: defaults, an enum,
// int-or-string, sets and maps as lists, an atomic map, preserved unknown fields, an
// embedded resource, a CEL rule, and a status.
const fuzzWidgetSchema = `
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    required: [size]
    x-kubernetes-validations:
    - rule: "!has(self.replicas) || self.replicas <= 100"
      message: too many replicas
    properties:
      replicas: {type: integer, format: int32, minimum: 0, default: 1}
      size: {x-kubernetes-int-or-string: true}
      mode: {type: string, enum: [A, B], default: A}
      ratio: {type: number}
      enabled: {type: boolean}
      created: {type: string, format: date-time}
      tags: {type: array, x-kubernetes-list-type: set, items: {type: string, maxLength: 63}}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
            port: {type: integer, default: 80}
      selector:
        type: object
        additionalProperties: {type: string}
        x-kubernetes-map-type: atomic
      config:
        type: object
        x-kubernetes-preserve-unknown-fields: true
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
      nested:
        type: object
        properties:
          a:
            type: object
            properties:
              b:
                type: object
                properties:
                  c: {type: string, pattern: "^[a-z]+$"}
  status:
    type: object
    properties:
      replicas: {type: integer}
      phase: {type: string}
      conditions:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [type]
        items:
          type: object
          required: [type]
          properties:
            type: {type: string}
            status: {type: string}
`

func newFuzzEnv() (*fuzzEnv, error) {
	ctx := context.Background()
	env := &fuzzEnv{}
	cat, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	for i, gr := range map[int][2]string{fuzzConfigMap: {"", "configmaps"}, fuzzDeployment: {"apps", "deployments"}} {
		cr := cat.Resource(gr[0], gr[1])
		if cr == nil {
			return nil, fmt.Errorf("the catalog has no %s", gr)
		}
		res, err := cr.RegistryResource(catalog.Selection{
			Served:         func(v *catalog.Version) bool { return v.Name == "v1" },
			StorageVersion: "v1",
		})
		if err != nil {
			return nil, err
		}
		env.res[i] = res
	}
	var widgetSchema apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(fuzzWidgetSchema), &widgetSchema); err != nil {
		return nil, err
	}
	specReplicas, statusReplicas := ".spec.replicas", ".status.replicas"
	env.res[fuzzWidget] = &registry.Resource{
		Group:      "example.com",
		Names:      apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		Namespaced: true,
		Versions: []registry.Version{{Name: "v1", Served: true, Schema: &widgetSchema,
			Subresources: &apiextensionsv1.CustomResourceSubresources{
				Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: specReplicas, StatusReplicasPath: statusReplicas},
			}}},
		StorageVersion: "v1",
	}
	env.res[fuzzGadget] = &registry.Resource{
		Group:          "example.com",
		Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
		Versions:       []registry.Version{{Name: "v1", Served: true}},
		StorageVersion: "v1",
	}
	currents := [fuzzResources]string{
		fuzzConfigMap:  `{"metadata":{"name":"cm","namespace":"default","labels":{"app":"web"},"resourceVersion":"7","uid":"u1","creationTimestamp":"2026-01-02T03:04:05Z"},"data":{"a":"1","b":"2"}}`,
		fuzzDeployment: string(fuzzDeploymentJSON),
		fuzzWidget:     `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default","resourceVersion":"7"},"spec":{"size":"10Gi","tags":["a","b"],"ports":[{"name":"http","port":80},{"name":"https","port":443}],"config":{"x":{"y":[1,2]}}},"status":{"replicas":1,"conditions":[{"type":"Ready","status":"True"}]}}`,
		fuzzGadget:     `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","resourceVersion":"7"},"spec":{"list":[1,{"a":"b"}],"n":1.5}}`,
	}
	for i, res := range env.res {
		if err := res.Prepare(ctx); err != nil {
			return nil, err
		}
		if env.current[i] = fuzzCurrent(res, []byte(currents[i])); env.current[i] == nil {
			return nil, fmt.Errorf("the default %s does not decode", res.Names.Kind)
		}
	}
	return env, nil
}

// fuzzCurrent returns data as the stored object of res it stands for (nil if it
// cannot stand for one): an object admitted by the endpoint, with the endpoint's
// apiVersion and kind, a name and, if res is namespaced, a namespace.
func fuzzCurrent(res *registry.Resource, data []byte) *unstructured.Unstructured {
	m, err := objectjson.UnmarshalObject(data)
	if err != nil || m == nil {
		return nil
	}
	if _, ok := m["metadata"].(map[string]interface{}); !ok {
		m["metadata"] = map[string]interface{}{}
	}
	obj := &unstructured.Unstructured{Object: m}
	obj.SetAPIVersion(res.GroupVersion("v1").String())
	obj.SetKind(res.Names.Kind)
	a, err := admit(obj, nil, false, res, "v1")
	if err != nil {
		return nil
	}
	obj = a.obj
	if obj.GetName() == "" {
		obj.SetName("fuzz")
	}
	if res.Namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	if !res.Namespaced {
		obj.SetNamespace("")
	}
	return obj
}

var fuzzDeploymentJSON = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default","resourceVersion":"7"},` +
	`"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}},` +
	`"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1","ports":[{"containerPort":80,"protocol":"TCP"}],` +
	`"env":[{"name":"A","value":"b"}],"resources":{"limits":{"cpu":"100m","memory":"1Gi"}}},{"name":"side","image":"busybox"}],` +
	`"volumes":[{"name":"v","emptyDir":{}}],"tolerations":[{"key":"k","operator":"Exists"}]}}}}`)

// checkClientError fails t unless err is nil or a StatusError of a 4xx code, which
// the server answers as it is.
func checkClientError(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("%s: the error is a %T, not a StatusError (a 500): %v", what, err, err)
	}
	if code := respond.ErrorToStatus(err).Code; code < 400 || code >= 500 {
		t.Fatalf("%s: code %d, want 4xx: %v", what, code, err)
	}
}

// checkObject fails t unless obj is an object of res that encodes as JSON.
func checkObject(t *testing.T, what string, res *registry.Resource, obj *unstructured.Unstructured) {
	t.Helper()
	if obj == nil {
		t.Fatalf("%s: no object and no error", what)
	}
	if av, k := obj.GetAPIVersion(), obj.GetKind(); av != res.GroupVersion("v1").String() || k != res.Names.Kind {
		t.Fatalf("%s: the object is a %s %s, want %s %s", what, av, k, res.GroupVersion("v1"), res.Names.Kind)
	}
	if _, err := objectjson.Marshal(obj.Object); err != nil {
		t.Fatalf("%s: the object does not encode: %v", what, err)
	}
}

// checkDecoded checks what a create or update body decoded to: with no error, an
// object of the endpoint, that decodes again as the same endpoint's body (what the
// server stores is read back and sent back in updates); warnings only under Warn.
func checkDecoded(t *testing.T, what string, res *registry.Resource, fv fieldValidation, obj *unstructured.Unstructured, warnings []string, err error) {
	t.Helper()
	checkClientError(t, what, err)
	if err != nil {
		return
	}
	checkObject(t, what, res, obj)
	if fv != validationWarn && len(warnings) > 0 {
		t.Fatalf("%s: warnings under fieldValidation %s: %q", what, fv, warnings)
	}
	data, err := objectjson.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := decodeObject(data, res, "v1", validationStrict)
	if err != nil {
		t.Fatalf("%s: the decoded object does not decode again: %v\n%s", what, err, data)
	}
	checkObject(t, what+" (again)", res, again)
}

// fuzzRequest is a request of Content-Type ctype.
func fuzzRequest(method, ctype string) *http.Request {
	return &http.Request{Method: method, URL: &url.URL{Path: "/"}, Header: http.Header{"Content-Type": {ctype}}}
}

// addObjectSeeds adds seeds for each resource: the JSON bodies of objs[res], under
// each fieldValidation, converted by conv.
func addObjectSeeds(f *testing.F, objs map[int][]string, conv func(string) []byte) {
	for res, list := range objs {
		for i, s := range list {
			data := conv(s)
			if data == nil {
				continue
			}
			f.Add(fuzzSelector(res, i%len(fuzzValidations), i%2 == 1), data)
		}
	}
}

// deep returns a value nested n levels deep: objects with open, arrays with '['.
func deep(n int, open string) string {
	closeWith := "}"
	if open == "[" {
		closeWith = "]"
	}
	return strings.Repeat(open, n) + "1" + strings.Repeat(closeWith, n)
}

// fuzzJSONBodies are JSON bodies of each resource, valid and not.
var fuzzJSONBodies = map[int][]string{
	fuzzConfigMap: {
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","labels":{"a":"b"},"annotations":{"x/y":"z"}},"data":{"k":"v"},"binaryData":{"b":"AAE="},"immutable":true}`,
		`{"metadata":{"name":"a"},"data":{"k":"v"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1","a":"2"},"data":{}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","data":[1,2],"binaryData":{"b":"not base64"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":5,"labels":"x","unknownMeta":1,"creationTimestamp":"not a time"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":[]}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":null,"data":null}`,
		`{"apiVersion":"v1","kind":"ConfigMap","unknown":{"deep":[1,2,3]},"data":{"a":"x"},"metadata":{"generateName":"g-","finalizers":["a/b","a/b"],"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u","controller":true}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}},"time":"2026-01-02T03:04:05Z"}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":1,"fieldsV1":"x"}],"deletionTimestamp":"2026-01-02T03:04:05Z","deletionGracePeriodSeconds":1e30}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"a":1e400}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"\ud800\udc00\ud800 \u2028 \u0000"},"metadata":{"name":"\u00e9"}}`,
		"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"\xff\xfe\":\"\xc3\x28\"}}",
		`{"apiVersion":"v1","kind":"Secret","data":{}}`,
		`{"apiVersion":"v2","kind":"ConfigMap"}`,
		`{"apiVersion":"v1","kind":"ConfigMap","extra":` + deep(300, `{"a":`) + `}`,
		`{"apiVersion":"v1","kind":"ConfigMap","extra":` + deep(300, "[") + `}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":` + deep(50, `{"a":`) + `}}`,
		`null`, ``, ` `, `[]`, `"x"`, `1`, `{}`, `{`, `{"a"}`, `{"a":1}x`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":"\u12"}`, `{"a":tru}`,
	},
	fuzzDeployment: {
		string(fuzzDeploymentJSON),
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":"2","strategy":{"rollingUpdate":{"maxSurge":[1]}}}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":9223372036854775808,"template":{"spec":{"containers":[{"resources":{"limits":{"cpu":"1e1000"}}}]}}}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1.5,"template":{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80},{"containerPort":80}]}]}}}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":null,"securityContext":{"sysctls":[{}]}}}},"status":{"conditions":[{"type":"Available","lastUpdateTime":"x"}]}}`,
		`{"apiVersion":"extensions/v1beta1","kind":"Deployment"}`,
	},
	fuzzWidget: {
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"size":3,"tags":["a"],"ports":[{"name":"http"}],"config":{"any":{"thing":[null,true]}},"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","unknown":1}},"nested":{"a":{"b":{"c":"abc"}}}}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":"10Gi","replicas":1000,"mode":"C","tags":["a","a"],"ports":[{"name":"x"},{"name":"x"}],"ratio":"NaN","created":"yesterday"}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":{"a":1},"replicas":-1,"selector":{"a":1},"template":{"kind":5}},"status":{"conditions":[{}]}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":1,"replicas":1e400}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":1,"replicas":4294967297,"ratio":1e308,"unknown":1},"unknownTop":{}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":1,"config":` + deep(300, `{"a":`) + `}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":1,"template":` + deep(200, "[") + `}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","spec":null,"status":null}`,
		`{"apiVersion":"example.com/v1","kind":"Gadget"}`,
		`{"kind":"Widget"}`,
		`null`,
	},
	fuzzGadget: {
		`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"anything":[1,"two",{"three":3.0}],"big":12345678901234567890}}`,
		`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"ns","labels":{"":""}},"x":` + deep(300, `{"a":`) + `}`,
		`{"apiVersion":"example.com/v1","kind":"Gadget","a":1,"a":2}`,
		`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","uid":[],"resourceVersion":1}}`,
		`{"apiVersion":"example.com/v1"}`,
	},
}

// FuzzDecodeJSON decodes JSON bodies of create and update (decodeRequestObject), and
// validates what it accepts as a create does.
func FuzzDecodeJSON(f *testing.F) {
	env := getFuzzEnv(f)
	addObjectSeeds(f, fuzzJSONBodies, func(s string) []byte { return []byte(s) })
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		res, fv, alt := env.pick(sel)
		ctype := "application/json"
		if alt {
			ctype = "" // no Content-Type: JSON too
		}
		obj, warnings, err := decodeRequestObject(fuzzRequest(http.MethodPost, ctype), data, res, "v1", fv)
		checkDecoded(t, "decode JSON", res, fv, obj, warnings, err)
		if err != nil {
			return
		}
		checkClientError(t, "validate", res.ValidateCreate(t.Context(), "v1", obj))
	})
}

// fuzzYAMLBodies are YAML bodies: the JSON ones as YAML, and YAML's own hazards.
var fuzzYAMLBodies = map[int][]string{
	fuzzConfigMap: {
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {a: b}\ndata:\n  k: v\n  multi: |\n    line1\n    line2\n",
		"kind: ConfigMap\ndata:\n  a: &x hello\n  b: *x\n",
		"base: &base {a: \"1\"}\ndata:\n  <<: *base\n  b: \"2\"\n",
		"data:\n  a: 1\n  a: 2\n",
		"data:\n  1: a\n  true: b\n  ~: c\n  [x]: d\n",
		"data: {a: !!binary aGVsbG8=, b: !!str 1, c: !!timestamp 2001-12-14t21:59:43.10-05:00}\n",
		"data: {a: .nan, b: .inf, c: -.Inf, d: 0x1F, e: 0o17, f: 1_000}\n",
		"metadata: !!set {a, b}\ndata: !!omap [a: b]\n",
		"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
		"a: &a [*a]\n",
		"a: *undefined\n",
		"---\nkind: ConfigMap\n---\nkind: Secret\n",
		"\ufeffkind: ConfigMap\n",
		"kind: ConfigMap\n\tdata: x\n",
		"? |\n  complex key\n: value\n",
		"%YAML 1.1\n---\nkind: ConfigMap\n",
		"# only a comment\n",
		"- a\n- b\n",
		"x: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n",
		"x: " + strings.Repeat("{a: ", 100) + "1" + strings.Repeat("}", 100) + "\n",
		"x: !!float 1e400\ny: !!int 99999999999999999999999\n",
		"x: !custom tag\n",
		"",
		"null",
		"~",
		"\"\\xff\\ud800\"",
	},
	fuzzDeployment: {
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  strategy: {rollingUpdate: {maxSurge: 25%}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        resources: {limits: {cpu: 0.5, memory: 1e3}}\n",
		"kind: Deployment\nspec:\n  replicas: 0x10\n  template:\n    spec:\n      containers: &c [{name: a}]\n      initContainers: *c\n",
	},
	fuzzWidget: {
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  size: 10Gi\n  tags: [a, b]\n  ports: [{name: http}]\n  config: {yes: no, on: off}\n  created: 2026-01-02T03:04:05Z\n",
		"apiVersion: example.com/v1\nkind: Widget\nspec:\n  size: 1\n  replicas: 1.0\n  ratio: .nan\n",
	},
	fuzzGadget: {
		"apiVersion: example.com/v1\nkind: Gadget\nspec:\n  when: 2001-12-14\n  n: 0b101\n  any: {? [a, b] : c}\n",
	},
}

// FuzzDecodeYAML decodes YAML bodies of create and update: contentToJSON, then
// decodeObject.
func FuzzDecodeYAML(f *testing.F) {
	env := getFuzzEnv(f)
	addObjectSeeds(f, fuzzYAMLBodies, func(s string) []byte { return []byte(s) })
	addObjectSeeds(f, map[int][]string{fuzzConfigMap: fuzzJSONBodies[fuzzConfigMap][:3], fuzzWidget: fuzzJSONBodies[fuzzWidget][:2]},
		func(s string) []byte { return []byte(s) }) // JSON is YAML
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		res, fv, alt := env.pick(sel)
		ctype := "application/yaml"
		if alt {
			ctype = "application/yaml; charset=utf-8"
		}
		obj, warnings, err := decodeRequestObject(fuzzRequest(http.MethodPost, ctype), data, res, "v1", fv)
		checkDecoded(t, "decode YAML", res, fv, obj, warnings, err)
	})
}

// cborSeed returns the CBOR of the JSON s, as a client would send it, nil if s is
// not JSON.
func cborSeed(s string) []byte {
	v, err := objectjson.Unmarshal([]byte(s))
	if err != nil {
		return nil
	}
	b, err := direct.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// FuzzDecodeCBOR decodes CBOR bodies of create and update: cborToJSON, then
// decodeObject.
func FuzzDecodeCBOR(f *testing.F) {
	env := getFuzzEnv(f)
	addObjectSeeds(f, fuzzJSONBodies, cborSeed)
	selfDescribed := []byte{0xd9, 0xd9, 0xf7}
	cm := cborSeed(fuzzJSONBodies[fuzzConfigMap][0])
	for _, b := range [][]byte{
		append(append([]byte{}, selfDescribed...), cm...), // as client-go sends it
		append(append([]byte{}, selfDescribed...), selfDescribed...),
		{},
		{0xf6},             // null
		{0xa0},             // {}
		{0x80},             // []
		{0xf9, 0x7e, 0x00}, // NaN
		{0xf9, 0x7c, 0x00}, // +Inf
		{0xa1, 0x61, 0x61, 0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}, // {"a": NaN (float64)}
		{0xa1, 0x61, 0x61, 0xf9, 0xfc, 0x00},                   // {"a": -Inf}
		{0xa1, 0x01, 0x02},                                     // {1: 2}
		{0xa1, 0x41, 0x61, 0x01},                               // {h'61': 1}: a byte-string key
		{0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02},             // {"a": 1, "a": 2}
		{0xa1, 0x61, 0x61, 0xc1, 0x1a, 0x5a, 0, 0, 0},          // {"a": tag 1 (epoch time)}
		{0xa1, 0x61, 0x61, 0xc0, 0x74, '2', '0', '2', '6', '-', '0', '1', '-', '0', '2', 'T', '0', '3', ':', '0', '4', ':', '0', '5', 'Z'}, // tag 0
		{0xa1, 0x61, 0x61, 0xc2, 0x49, 1, 0, 0, 0, 0, 0, 0, 0, 0},                                                                          // tag 2: a bignum
		{0xa1, 0x61, 0x61, 0xd8, 0x20, 0x63, 'a', ':', 'b'},                                                                                // tag 32: a URI
		{0xa1, 0x61, 0x61, 0xd9, 0xff, 0xff, 0x01},                                                                                         // an unknown tag
		{0xa1, 0x61, 0x61, 0xf7},                                                 // undefined
		{0xa1, 0x61, 0x61, 0xf0},                                                 // simple value 16
		{0xbf, 0x61, 0x61, 0x9f, 0x01, 0xff, 0xff},                               // indefinite lengths
		{0xa1, 0x61, 0x61, 0x7f, 0x61, 'x', 0x61, 'y', 0xff},                     // an indefinite-length string
		{0xa1, 0x61, 0x61, 0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // a huge declared length
		{0xbb, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00},                   // a map of 2^32 pairs
		{0x9b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},                   // an array of 2^63-1 items
		{0xa1, 0x61, 0x61, 0x62, 0xff, 0xfe},                                     // invalid UTF-8
		{0xa1, 0x61, 0x61, 0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // -2^64
		{0xa1, 0x61, 0x61, 0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // 2^64-1
		append(bytes.Repeat([]byte{0x81}, 300), 0x01),                            // deep arrays
		append(bytes.Repeat([]byte{0xa1, 0x61, 0x61}, 300), 0x01),                // deep maps
		append(bytes.Repeat([]byte{0xd8, 0x37}, 300), 0xa0),                      // many tags
		{0xa0, 0xa0}, // trailing data
	} {
		for res := range fuzzResources {
			f.Add(fuzzSelector(res, 1, false), b)
		}
	}
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		res, fv, alt := env.pick(sel)
		if alt {
			// cborToJSON alone, as the patch handler calls it for apply
			// configurations in CBOR.
			j, err := cborToJSON(data)
			checkClientError(t, "cborToJSON", err)
			if err == nil && !jsonValid(j) {
				t.Fatalf("cborToJSON gave invalid JSON %q", j)
			}
			return
		}
		obj, warnings, err := decodeRequestObject(fuzzRequest(http.MethodPost, respond.CBORMediaType), data, res, "v1", fv)
		checkDecoded(t, "decode CBOR", res, fv, obj, warnings, err)
	})
}

// jsonValid reports whether data is one JSON value, as objectjson reads it.
func jsonValid(data []byte) bool {
	_, err := objectjson.Unmarshal(data)
	return err == nil
}

// protobufSeed returns the protobuf envelope of obj.
func protobufSeed(f *testing.F, obj runtime.Object) []byte {
	var buf bytes.Buffer
	if err := protobufSerializer.Encode(obj, &buf); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzDecodeProtobuf decodes protobuf bodies of create and update: straight to the
// object's map (the Content-Type typed clients send), or, with the high bit of the
// selector, through JSON (a Content-Type with parameters).
func FuzzDecodeProtobuf(f *testing.F) {
	env := getFuzzEnv(f)
	replicas := int32(3)
	maxSurge := intstr.FromString("25%")
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", Labels: map[string]string{"a": "b"}, Finalizers: []string{"x/y"}},
		Data:       map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {0, 1}},
	}
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			},
		},
	}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	cmPB, depPB, podPB := protobufSeed(f, cm), protobufSeed(f, dep), protobufSeed(f, pod)
	rawCM, err := cm.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	envelope := func(apiVersion, kind string, raw []byte) []byte {
		u := &runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw, ContentType: "application/vnd.kubernetes.protobuf"}
		b, err := u.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		return append([]byte("k8s\x00"), b...)
	}
	magic := []byte("k8s\x00")
	for _, s := range []struct {
		res  int
		data []byte
	}{
		{fuzzConfigMap, cmPB},
		{fuzzDeployment, depPB},
		{fuzzConfigMap, podPB},
		{fuzzWidget, cmPB},
		{fuzzConfigMap, envelope("v1", "ConfigMap", rawCM)},
		{fuzzConfigMap, envelope("v1", "Pod", rawCM)},
		{fuzzConfigMap, envelope("v1", "ConfigMap", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})}, // a huge declared length
		{fuzzConfigMap, envelope("v1", "ConfigMap", []byte{0x0a, 0x02, 0x0a, 0x80})},             // a truncated varint
		{fuzzConfigMap, envelope("v1", "ConfigMap", bytes.Repeat([]byte{0x0a, 0x7f}, 64))},       // nested lengths
		{fuzzConfigMap, envelope("v1", "ConfigMap", []byte{0x12, 0x04, 0x0a, 0x00, 0x12, 0x00})}, // data entry without key or value
		{fuzzConfigMap, envelope("v1", "ConfigMap", []byte{0xfa, 0xff, 0xff, 0xff, 0x0f, 0x00})}, // an unknown field number
		{fuzzGadget, envelope("example.com/v1", "Gadget", []byte("{}"))},
		{fuzzConfigMap, envelope("", "", nil)},
		{fuzzConfigMap, append(append([]byte{}, magic...), 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{fuzzConfigMap, append(append([]byte{}, magic...), 0x1a)}, // a field with no length
		{fuzzConfigMap, magic},
		{fuzzConfigMap, []byte("k8s")},
		{fuzzConfigMap, []byte{}},
		{fuzzConfigMap, []byte(`{"apiVersion":"v1","kind":"ConfigMap"}`)},
	} {
		f.Add(fuzzSelector(s.res, 1, false), s.data)
		f.Add(fuzzSelector(s.res, 2, true), s.data)
	}
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		res, fv, alt := env.pick(sel)
		ctype := protobufMediaType
		if alt {
			ctype = protobufMediaType + "; charset=binary"
		}
		obj, warnings, err := decodeRequestObject(fuzzRequest(http.MethodPost, ctype), data, res, "v1", fv)
		checkDecoded(t, "decode protobuf", res, fv, obj, warnings, err)
	})
}

// The patch types of FuzzApplyPatch, by the patch byte modulo their number.
var fuzzPatchTypes = [...]types.PatchType{
	types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType, types.ApplyCBORPatchType,
}

// patchMode is the mode byte of FuzzApplyPatch for patch type pt (of fuzzPatchTypes),
// resource res, fieldValidation fv and force.
func patchMode(pt, res, fv int, force bool) uint8 {
	m := pt + len(fuzzPatchTypes)*(res+fuzzResources*fv)
	if force {
		m += len(fuzzPatchTypes) * fuzzResources * len(fuzzValidations)
	}
	return uint8(m)
}

// FuzzApplyPatch patches an object as the patch handler does: a JSON patch, merge
// patch or strategic merge patch (patch.patched, then the field manager's tracking),
// or a server-side apply (patch.applied, then the field manager's apply). current is
// the stored object (the resource's default if it does not decode; none, for an
// apply, if empty: a create).
func FuzzApplyPatch(f *testing.F) {
	env := getFuzzEnv(f)
	const (
		jp, mp, smp, apply, applyCBOR = 0, 1, 2, 3, 4
	)
	cm := fuzzJSONBodies[fuzzConfigMap][0]
	widget := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":"1","tags":["a","b"],"ports":[{"name":"http","port":80}],"config":{"a":{"b":1}}}}`
	for _, s := range []struct {
		mode           uint8
		current, patch string
	}{
		// JSON patches.
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"add","path":"/data/new","value":"x"},{"op":"remove","path":"/data/k"},{"op":"test","path":"/metadata/name","value":"a"}]`},
		{patchMode(jp, fuzzConfigMap, 2, false), cm, `[{"op":"copy","from":"/data","path":"/data/self"},{"op":"copy","from":"/data","path":"/data/self2"},{"op":"move","from":"/data/self","path":"/binaryData/x"}]`},
		{patchMode(jp, fuzzConfigMap, 0, false), cm, `[{"op":"replace","path":"/data","value":{"a/b~c":"1"}},{"op":"add","path":"/data/a~1b~0c","value":"2"},{"op":"add","path":"/metadata/labels/-","value":"x"}]`},
		{patchMode(jp, fuzzWidget, 1, false), widget, `[{"op":"add","path":"/spec/tags/-","value":"c"},{"op":"add","path":"/spec/ports/0","value":{"name":"h2"}},{"op":"replace","path":"/spec/replicas","value":101}]`},
		{patchMode(jp, fuzzDeployment, 1, false), "", `[{"op":"add","path":"/status/replicas","value":1},{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"x"},{"op":"add","path":"/spec/replicas","value":"two"}]`},
		{patchMode(jp, fuzzGadget, 1, false), "", `[{"op":"add","path":"/spec/list/99","value":1},{"op":"remove","path":"/"},{"op":"bogus","path":"/x"},{"path":"/x"}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"add","path":"","value":{"apiVersion":"v1","kind":"ConfigMap"}}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"copy","from":"","path":"/data/all"},{"op":"copy","from":"/data","path":"/data/all/data"}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `{"op":"add"}`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"replace","path":""}]`}, // the json-patch library panics on these
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"test","path":""}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"replace","path":"","value":null},{"op":"test","path":"","value":null}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"replace","path":"","value":[]},{"op":"add","path":"","value":{}}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[` + strings.Repeat(`{"op":"copy","from":"/data","path":"/metadata/annotations"},`, 50) + `{"op":"test","path":"/data","value":null}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"add","path":"/metadata/name","value":5},{"op":"add","path":"/kind","value":"Secret"}]`},
		{patchMode(jp, fuzzConfigMap, 1, false), cm, `[{"op":"add","path":"/data/x","value":` + deep(200, `{"a":`) + `}]`},
		// Merge patches.
		{patchMode(mp, fuzzConfigMap, 1, false), cm, `{"data":{"k":null,"n":"v"},"metadata":{"labels":{"a":null,"b":"c"}}}`},
		{patchMode(mp, fuzzWidget, 2, false), widget, `{"spec":{"config":{"a":{"b":null,"c":{"d":{"e":1}}}},"tags":null,"replicas":200,"unknown":1}}`},
		{patchMode(mp, fuzzGadget, 0, false), "", `{"spec":{"list":null,"x":` + deep(200, `{"a":`) + `}}`},
		{patchMode(mp, fuzzConfigMap, 1, false), cm, `{"apiVersion":null,"kind":"Secret","metadata":null}`},
		{patchMode(mp, fuzzConfigMap, 1, false), cm, `[1,2]`},
		{patchMode(mp, fuzzConfigMap, 1, false), cm, `null`},
		{patchMode(mp, fuzzDeployment, 1, false), "", `{"spec":{"replicas":1e400}}`},
		// Strategic merge patches.
		{patchMode(smp, fuzzDeployment, 1, false), "", `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"new"},{"name":"side","$patch":"delete"}]}}}}`},
		{patchMode(smp, fuzzDeployment, 1, false), "", `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"c"}],"containers":[{"name":"c","env":[{"name":"B","value":"c"}]}]}}}}`},
		{patchMode(smp, fuzzDeployment, 1, false), "", `{"spec":{"template":{"spec":{"$retainKeys":["containers"],"volumes":[{"name":"v","$patch":"replace"}],"containers":[{"$patch":"merge","name":"c"}]}}}}`},
		{patchMode(smp, fuzzDeployment, 2, false), "", `{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"},"template":{"spec":{"$deleteFromPrimitiveList/finalizers":["a"],"tolerations":{"$patch":"replace"}}}}}`},
		{patchMode(smp, fuzzConfigMap, 1, false), cm, `{"$patch":"replace","data":{"x":"y"}}`},
		{patchMode(smp, fuzzConfigMap, 1, false), cm, `{"$patch":"delete"}`},
		{patchMode(smp, fuzzConfigMap, 1, false), cm, `{"metadata":{"finalizers":["x/y"],"$setElementOrder/finalizers":["x/y","a/b"],"$deleteFromPrimitiveList/finalizers":["a/b"]}}`},
		{patchMode(smp, fuzzDeployment, 1, false), "", `{"spec":{"template":{"spec":{"containers":[{"$patch":"bogus"}],"$setElementOrder/containers":"x"}}}}`},
		{patchMode(smp, fuzzDeployment, 1, false), "", `{"spec":{"template":{"spec":{"containers":[{"name":[]},{"name":{"a":1}}]}}}}`}, // the library panics on these
		{patchMode(smp, fuzzConfigMap, 1, false), cm, `{"metadata":{"ownerReferences":[{"uid":["x"]}],"$setElementOrder/ownerReferences":[{"uid":["x"]}]}}`},
		{patchMode(smp, fuzzDeployment, 1, false), "", `{"spec":{"template":{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80,"$patch":"delete"}]}],"volumes":[{"$retainKeys":["name"],"name":"v"}]}}}}`},
		// Server-side apply.
		{patchMode(apply, fuzzConfigMap, 1, false), cm, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v2\n"},
		{patchMode(apply, fuzzConfigMap, 1, true), "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fuzz, namespace: default}\ndata: {a: x, a: y}\n"},
		{patchMode(apply, fuzzDeployment, 2, false), "", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: c\n        image: other\n      - name: c\n        image: dup\n"},
		{patchMode(apply, fuzzWidget, 1, false), widget, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  size: 2\n  ports: [{name: http, port: 8080}, {name: grpc}]\n  tags: [c]\n  unknown: x\n"},
		{patchMode(apply, fuzzWidget, 0, true), widget, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: other}\n"},
		{patchMode(apply, fuzzGadget, 1, false), "", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: fuzz}\nspec: {a: &a [1, 2], b: *a}\n"},
		{patchMode(apply, fuzzConfigMap, 1, false), cm, "apiVersion: v1\nkind: Secret\n"},
		{patchMode(apply, fuzzConfigMap, 1, false), cm, "kind: ConfigMap\n"},
		{patchMode(apply, fuzzConfigMap, 1, false), `{"metadata":{"name":"cm","managedFields":[{"manager":"m","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}},{"manager":"m","operation":"Apply"}]},"data":{"a":"1"}}`,
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"2\"}\n"},
		{patchMode(apply, fuzzConfigMap, 1, false), `{"metadata":{"name":"cm","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}}}]},"data":{"a":"1"}}`,
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  managedFields: [{manager: x}]\ndata: {a: \"2\"}\n"},
		{patchMode(apply, fuzzConfigMap, 1, false), cm, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nx: " + deep(100, "[") + "\n"},
		{patchMode(applyCBOR, fuzzConfigMap, 1, false), cm, string(cborSeed(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v3"}}`))},
		{patchMode(applyCBOR, fuzzWidget, 1, false), widget, string(cborSeed(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`))},
	} {
		f.Add(s.mode, []byte(s.current), []byte(s.patch))
	}
	f.Fuzz(func(t *testing.T, mode uint8, current, body []byte) {
		if len(current)+len(body) > 1<<20 {
			return
		}
		m := int(mode)
		pt := fuzzPatchTypes[m%len(fuzzPatchTypes)]
		m /= len(fuzzPatchTypes)
		resIdx := m % fuzzResources
		m /= fuzzResources
		fv := fuzzValidations[m%len(fuzzValidations)]
		force := m/len(fuzzValidations)%2 == 1
		if pt == types.StrategicMergePatchType {
			resIdx %= 2 // only the built-in kinds have strategic merge patches (415 otherwise)
		}
		res := env.res[resIdx]
		cur := fuzzCurrent(res, current)
		if cur == nil && (len(current) > 0 || (pt != types.ApplyYAMLPatchType && pt != types.ApplyCBORPatchType)) {
			cur = env.current[resIdx].DeepCopy()
		}
		info := &request.Info{Name: "fuzz"}
		if res.Namespaced {
			info.Namespace = "default"
		}
		if cur != nil {
			info.Name, info.Namespace = cur.GetName(), cur.GetNamespace()
		}
		q := &apiRequest{info: info, res: res, version: res.Version("v1")}
		fm, err := (&Server{}).fieldManager(res, "v1", "")
		if err != nil {
			t.Fatal(err)
		}
		p := &patch{typ: pt, body: body, validation: fv, manager: "fuzz", force: force}
		if pt == types.StrategicMergePatchType {
			if p.smpStruct, err = typedScheme.New(res.GroupVersion("v1").WithKind(res.Names.Kind)); err != nil {
				t.Fatal(err)
			}
		}
		if pt == types.ApplyCBORPatchType {
			// As readPatch reads it.
			p.body, err = cborToJSON(body)
			checkClientError(t, "cborToJSON", err)
			if err != nil {
				return
			}
			p.typ = types.ApplyYAMLPatchType
		}
		var before *unstructured.Unstructured
		if cur != nil {
			before = cur.DeepCopy()
		}
		if p.typ == types.ApplyYAMLPatchType {
			next, warnings, err := p.applied(fuzzRequest(http.MethodPatch, string(pt)), q)
			checkClientError(t, "apply: decode", err)
			if err != nil {
				return
			}
			checkObject(t, "apply: decode", res, next)
			if fv != validationWarn && len(warnings) > 0 {
				t.Fatalf("warnings under fieldValidation %s: %q", fv, warnings)
			}
			out, err := fm.apply(cur, next, p.manager, p.force)
			checkClientError(t, "apply", err)
			if err == nil {
				checkObject(t, "apply", res, out)
			}
			return
		}
		next, _, err := p.patched(q, cur)
		checkClientError(t, string(pt), err)
		if err != nil {
			return
		}
		checkObject(t, string(pt), res, next)
		out := fm.track(before, next, p.manager)
		checkObject(t, string(pt)+": track", res, out)
	})
}
