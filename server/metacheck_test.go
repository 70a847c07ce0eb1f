package server

import (
	"encoding/json"
	"testing"

	"github.com/concordproject/concord/objectjson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// metadataDocs are metadata objects as clients send them: the common shapes, which
// objectMetaValid must vouch for (or the round trip it saves runs anyway), and
// every way a value can be wrong or unknown.
var metadataDocs = []struct {
	doc   string
	vouch bool // objectMetaValid must vouch for it
}{
	{`{}`, true},
	{`{"name":"a","namespace":"b","labels":{"x":"y"},"annotations":{"a/b":"c"}}`, true},
	{`{"name":"w-1","namespace":"ns","uid":"0b7c6c2e-6f3a-4b8e-9f5e-2d1c3b4a5f6e","resourceVersion":"42","generation":3,
	  "creationTimestamp":"2026-11-21T08:00:00Z","finalizers":["a/b"],
	  "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u","controller":true,"blockOwnerDeletion":false}],
	  "managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-11-21T08:00:00Z",
	    "fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}},"subresource":"status"}]}`, true},
	{`{"deletionTimestamp":"2026-11-21T08:00:00+01:00","deletionGracePeriodSeconds":30}`, true},
	{`{"name":null,"labels":null,"labels2":null}`, false},
	{`{"name":null,"labels":{"a":null},"finalizers":[null],"creationTimestamp":null,"ownerReferences":[null]}`, true},
	{`{"managedFields":[{"fieldsV1":null},{"fieldsV1":[1,"x"]},{"time":null}]}`, true},
	// unknown fields
	{`{"nmae":"a"}`, false},
	{`{"Name":"a"}`, false},
	{`{"clusterName":"a"}`, false},
	{`{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u","extra":1}]}`, false},
	{`{"managedFields":[{"manager":"m","fields":{}}]}`, false},
	// wrongly typed values
	{`{"name":1}`, false},
	{`{"generation":"3"}`, false},
	{`{"generation":1.5}`, false},
	{`{"generation":1e3}`, false},
	{`{"generation":99999999999999999999}`, false},
	{`{"labels":{"a":1}}`, false},
	{`{"labels":["a"]}`, false},
	{`{"finalizers":"a"}`, false},
	{`{"finalizers":[1]}`, false},
	{`{"creationTimestamp":"yesterday"}`, false},
	{`{"creationTimestamp":"2026-11-21"}`, false},
	{`{"creationTimestamp":1700000000}`, false},
	{`{"deletionGracePeriodSeconds":true}`, false},
	{`{"ownerReferences":{"name":"p"}}`, false},
	{`{"ownerReferences":[{"controller":"yes"}]}`, false},
	{`{"managedFields":[{"time":"now"}]}`, false},
	{`{"managedFields":["x"]}`, false},
}

// roundTripClean reports whether normalizeMetadata's round trip through
// metav1.ObjectMeta finds nothing: no decoding error and no unknown field.
func roundTripClean(t testing.TB, m map[string]interface{}) bool {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var meta metav1.ObjectMeta
	strict, err := kjson.UnmarshalStrict(data, &meta, kjson.DisallowUnknownFields)
	return err == nil && len(strict) == 0
}

// checkVouch fails when objectMetaValid vouches for a metadata object whose round trip
// would find something.
func checkVouch(t testing.TB, doc []byte) (vouched bool) {
	t.Helper()
	m, err := objectjson.UnmarshalObject(doc)
	if err != nil || m == nil {
		return false
	}
	vouched = objectMetaValid(m)
	if vouched && !roundTripClean(t, m) {
		t.Fatalf("objectMetaValid vouches for %s, whose round trip through ObjectMeta finds an error or an unknown field", doc)
	}
	return vouched
}

func TestObjectMetaValidAgreesWithRoundTrip(t *testing.T) {
	for _, tc := range metadataDocs {
		if got := checkVouch(t, []byte(tc.doc)); got != tc.vouch {
			t.Errorf("objectMetaValid(%s) = %v, want %v", tc.doc, got, tc.vouch)
		}
	}
}

func FuzzObjectMetaValid(f *testing.F) {
	for _, tc := range metadataDocs {
		f.Add([]byte(tc.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { checkVouch(t, doc) })
}
