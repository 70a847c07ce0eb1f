package catalog

import (
	_ "embed"
	"sync"
)

//go:generate go run ./gen -o default.json

// defaultJSON is the catalog shipped in the binary, written by ./gen from k8s.io/api.
//
//go:embed default.json
var defaultJSON []byte

var parseDefault = sync.OnceValues(func() (*Catalog, error) {
	c, err := Parse(defaultJSON)
	if err != nil {
		return nil, err
	}
	// Its schemas compile (TestEveryWritableSchemaCompiles): RegistryResource leaves
	// their compilation to first use.
	for _, r := range c.resources {
		r.compileOnUse = true
	}
	return c, nil
})

// Default returns the catalog embedded in the binary, parsed on first use. Every call
// returns the same *Catalog, which, like every Catalog, is immutable.
func Default() (*Catalog, error) {
	return parseDefault()
}
