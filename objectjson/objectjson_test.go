package objectjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	kjson "sigs.k8s.io/json"
)

// documents are JSON texts, valid and not, that the tests and the fuzzers' seed corpora
// share: every corner of the grammar and of the standard library's behaviour.
var documents = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `""`,
	` {"a" : 1 , "b":[ 1 , 2 ] } `, "\t\n\r{}\n",
	`{"a":1,"a":2}`, // the last duplicate wins
	`{"a":{"b":1,"c":{"b":2}},"b":[{"x":1},{"x":1,"x":1}]}`, `{"a":1,"A":2}`, `{"\u0061":1,"a":2}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}},"data":{"k":"v"}}`,
	`[1,2.5,-3e2,4E+2,5e-3,0.1,1e21,1e-7,123456789012345678901234567890,9223372036854775807,9223372036854775808,-9223372036854775808,-9223372036854775809]`,
	`1.0`, `1e0`, `1E400`, `-1e400`, `1e-400`, `0.000001`, `0.0000001`, `100000000000000000000`, `1e20`,
	`"\u0041\u00e9\u4e2d\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	`"\"\\\/\b\f\n\r\t"`, `"a\u2028b\u2029c"`, "\"\xff\xfe\"", "\"a\xe2\x82\"", "\"\xed\xa0\x80\"",
	`"<>&"`, "\"\x7f\"", `"é中😀"`,
	// invalid
	``, ` `, `{`, `}`, `[`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`,
	`01`, `-`, `-a`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x10`, `NaN`, `Infinity`,
	`tru`, `nul`, `falsey`, `true false`, `{} {}`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", "\"\n\"",
	`{"a":[{"b":{"c":[null,true,false,"",0]}}]}`,
}

func TestUnmarshalAgreesWithApimachinery(t *testing.T) {
	for _, doc := range documents {
		compareUnmarshal(t, []byte(doc))
	}
}

func compareUnmarshal(t *testing.T, data []byte) {
	t.Helper()
	var want interface{}
	wantErr := utiljson.Unmarshal(data, &want)
	got, err := Unmarshal(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("Unmarshal(%q): error %v, apimachinery's error %v", data, err, wantErr)
	}
	if err != nil {
		if !errors.Is(err, ErrSyntax) {
			t.Fatalf("Unmarshal(%q): error %v does not wrap ErrSyntax", data, err)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Unmarshal(%q) = %#v, apimachinery gives %#v", data, got, want)
	}
	var wantMap map[string]interface{}
	wantErr = utiljson.Unmarshal(data, &wantMap)
	gotMap, err := UnmarshalObject(data)
	if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(gotMap, wantMap) {
		t.Fatalf("UnmarshalObject(%q) = %#v, %v; apimachinery gives %#v, %v", data, gotMap, err, wantMap, wantErr)
	}
	// UnmarshalObjectStrict refuses exactly what the server's strict decoder reports
	// as duplicate fields, and otherwise agrees with UnmarshalObject.
	var strictMap map[string]interface{}
	strictErrs, wantErr := kjson.UnmarshalStrict(data, &strictMap, kjson.DisallowDuplicateFields)
	gotMap, err = UnmarshalObjectStrict(data)
	switch {
	case wantErr != nil:
		if err == nil || errors.Is(err, ErrDuplicateKey) {
			t.Fatalf("UnmarshalObjectStrict(%q) = %v, want a syntax error like %v", data, err, wantErr)
		}
	case len(strictErrs) > 0:
		if !errors.Is(err, ErrDuplicateKey) || gotMap != nil {
			t.Fatalf("UnmarshalObjectStrict(%q) = %#v, %v; want ErrDuplicateKey for %v", data, gotMap, err, strictErrs)
		}
	case err != nil || !reflect.DeepEqual(gotMap, strictMap):
		t.Fatalf("UnmarshalObjectStrict(%q) = %#v, %v; sigs.k8s.io/json gives %#v", data, gotMap, err, strictMap)
	}
}

func TestDepthLimit(t *testing.T) {
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		for _, opening := range []string{"[", `{"a":`} {
			closing := map[string]string{"[": "]", `{"a":`: "}"}[opening]
			data := []byte(strings.Repeat(opening, depth) + "1" + strings.Repeat(closing, depth))
			compareUnmarshal(t, data)
		}
	}
}

// stdEncode is what Concord encoded with before this package: an encoding/json
// Encoder without HTML escaping, its newline dropped.
func stdEncode(v interface{}) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func compareMarshal(t *testing.T, v interface{}) {
	t.Helper()
	want, wantErr := stdEncode(v)
	got, err := Marshal(v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("Marshal(%#v): error %v, encoding/json's error %v", v, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("Marshal(%#v) =\n%s\nencoding/json gives\n%s", v, got, want)
	}
}

func TestMarshalAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range documents {
		if v, err := Unmarshal([]byte(doc)); err == nil {
			compareMarshal(t, v)
		}
	}
	ts := metav1.NewTime(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))
	for _, v := range []interface{}{
		nil, map[string]interface{}(nil), []interface{}(nil), map[string]interface{}{}, []interface{}{},
		"a\x00b\x1fc<d>e&f\u2028", "\xff", int64(math.MinInt64), int(42), int32(-7), uint64(math.MaxUint64),
		math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1),
		float32(0.1), float32(1e-7), float32(1e21), float32(3.4e38), float32(math.Inf(1)),
		json.Number("12.5"), json.Number(""), json.Number("x"),
		map[string]interface{}{"b": 1.5, "a": []interface{}{"x", nil, true}, "": map[string]interface{}{"\xff": 1}},
		map[string]interface{}{"t": ts, "m": map[string]string{"z": "1", "a": "2"}, "s": []string{"q"}},
		map[string]interface{}{"nan": math.NaN()},
	} {
		compareMarshal(t, v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		f := math.Float64frombits(r.Uint64())
		compareMarshal(t, f)
		compareMarshal(t, float32(f))
		compareMarshal(t, r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
}

func TestAppendKeepsPrefix(t *testing.T) {
	got, err := Append([]byte("prefix:"), map[string]interface{}{"a": 1.0})
	if err != nil || string(got) != `prefix:{"a":1}` {
		t.Fatalf("Append = %q, %v", got, err)
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, doc := range documents {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareUnmarshal(t, data)
		if v, err := Unmarshal(data); err == nil {
			compareMarshal(t, v)
		}
	})
}

func FuzzMarshalString(f *testing.F) {
	for _, doc := range documents {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, s string) {
		compareMarshal(t, s)
		compareMarshal(t, map[string]interface{}{s: s, "k": []interface{}{s}})
	})
}

// BenchmarkConfigMap compares this package with the standard library on a stored
// 1 KiB ConfigMap: decoding it and encoding it back.
func BenchmarkConfigMap(b *testing.B) {
	data := []byte(`{"apiVersion":"v1","data":{"payload":"` + strings.Repeat("x", 700) + `"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2026-11-21T08:00:00Z","managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{}}},"manager":"bench.test","operation":"Update","time":"2026-11-21T08:00:00Z"}],"name":"r-00000001","namespace":"bench-read","uid":"5a0c3cbe-3f5e-4a57-9f4c-0d3f2c1d9a11"}}`)
	b.Run("decode/objectjson", func(b *testing.B) {
		for b.Loop() {
			if _, err := UnmarshalObject(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/apimachinery", func(b *testing.B) {
		for b.Loop() {
			var m map[string]interface{}
			if err := utiljson.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	obj, _ := UnmarshalObject(data)
	b.Run("encode/objectjson", func(b *testing.B) {
		for b.Loop() {
			if _, err := Marshal(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := stdEncode(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestLeadingString(t *testing.T) {
	written, err := Marshal(map[string]interface{}{"kind": "ConfigMap", "apiVersion": "v1", "data": map[string]interface{}{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		data string
		want string // "" for not found
	}{
		{string(written), "v1"},
		{` { "apiVersion" : "apps/v1", "kind": "Deployment"}`, "apps/v1"},
		{`{"kind":"ConfigMap","apiVersion":"v1"}`, ""}, // not the first key
		{`{"apiVersion":"v\u0031"}`, ""},               // an escape
		{`{"apiVersion":1}`, ""},                       // not a string
		{`{"apiVersion":"v1`, ""},                      // cut short
		{`["apiVersion","v1"]`, ""},                    // not an object
		{`{"apiVersionX":"v1"}`, ""},                   // another key
		{`{"apiVersion":"v1",}`, "v1"},                 // what follows is not checked
		{``, ""},
	} {
		got, ok := LeadingString([]byte(tc.data), "apiVersion")
		if ok != (tc.want != "") || string(got) != tc.want {
			t.Errorf("LeadingString(%q) = %q, %v; want %q", tc.data, got, ok, tc.want)
		}
	}
}
