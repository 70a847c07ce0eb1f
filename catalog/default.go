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
	// Every process of the binary parses it, whatever it runs. Parse's json.Compact
	// takes more than a third of that (it checks the syntax, which the decoder checks
	// again); stripping the indentation of this file, which Encode wrote, takes a
	// quarter of Compact's time (BenchmarkParseDefault).
	c, err := parseCompact(withoutIndentation(defaultJSON))
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

// withoutIndentation drops the whitespace outside the strings of data, which must be
// valid JSON: of invalid input, it can make valid JSON of another value ("[1 2]"
// gives "[12]"), which is why Parse, whose input is anyone's, uses json.Compact.
// The default catalog's result equals Compact's (TestWithoutIndentationIsCompact).
func withoutIndentation(data []byte) []byte {
	out := make([]byte, 0, len(data)/2) // the default catalog is three quarters indentation
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			continue
		}
		out = append(out, c)
	}
	return out
}
