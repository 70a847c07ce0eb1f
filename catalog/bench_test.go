package catalog

import "testing"

// BenchmarkParseDefault measures parsing the embedded catalog as Default does, which
// every process of the binary pays once; /Parse as Parse would, checking its syntax
// as it drops the indentation; /Summary as DefaultSummary does, which is all most
// processes need.
func BenchmarkParseDefault(b *testing.B) {
	b.Run("Default", func(b *testing.B) {
		b.SetBytes(int64(len(defaultJSON)))
		for b.Loop() {
			if _, err := parseCompact(withoutIndentation(defaultJSON)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Summary", func(b *testing.B) {
		b.SetBytes(int64(len(defaultJSON)))
		for b.Loop() {
			if _, err := summaryOf(defaultJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.SetBytes(int64(len(defaultJSON)))
		for b.Loop() {
			if _, err := Parse(defaultJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRegistryResources measures building the registry resources of the whole
// default catalog, the rest of what a server start pays for it.
func BenchmarkRegistryResources(b *testing.B) {
	c := mustDefault(b)
	at := c.BinaryVersion()
	for b.Loop() {
		for _, r := range c.Resources() {
			if _, err := r.RegistryResource(Selection{
				Served:         func(v *Version) bool { return v.AvailableAt(at) },
				StorageVersion: r.Versions[0].Name,
				At:             at,
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
