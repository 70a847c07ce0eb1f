package kubepeer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// OpenAPIRecording is what kube-apiserver publishes of built-in resources, as
// TestRecordOpenAPI records it and the e2e suite holds Concord to it: of each recorded
// group-version's OpenAPI v3 document, the digest of every model
// (components.schemas), the digests of the same models in the v2 document, and what
// kubectl explain printed of a few fields.
type OpenAPIRecording struct {
	Server  string `json:"server"`
	Kubectl string `json:"kubectl"`
	// Schemas are the digests (ModelDigests) of every model of a document, by
	// document path ("apis/apps/v1", "api/v1") and model name.
	Schemas map[string]map[string]string `json:"schemas"`
	// V2 are the digests of the same models in the OpenAPI v2 document (its
	// definitions), by model name.
	V2      map[string]string `json:"v2"`
	Explain []Explained       `json:"explain"`
}

// Explained is the output of kubectl explain with Args.
type Explained struct {
	Args   []string `json:"args"`
	Output string   `json:"output"`
}

// ModelDigests returns the digest of each model of an OpenAPI v3 document: the hex
// sha256 of its JSON with sorted keys.
func ModelDigests(doc []byte) (map[string]string, error) {
	var d struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	return digests(d.Components.Schemas)
}

// DefinitionDigests returns the digest of each definition of an OpenAPI v2 document,
// as ModelDigests those of a v3 document's models.
func DefinitionDigests(doc []byte) (map[string]string, error) {
	var d struct {
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	return digests(d.Definitions)
}

// digests returns the hex sha256 of each value's JSON (keys sorted), by name.
func digests(values map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(values))
	for name, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out[name] = hex.EncodeToString(sum[:])
	}
	return out, nil
}
