package schema

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkValidatePruneDefault measures the per-write path (Prune, Default, Validate) on a
// Widget of about 1 KiB, and each step alone. The object is copied in every iteration so
// that Prune and Default find work to do; "copy" measures that copy alone.
func BenchmarkValidatePruneDefault(b *testing.B) {
	s := compileFile(b, "widget.yaml")
	input := parseObject(b, validWidget)
	spec := input["spec"].(map[string]interface{})
	spec["unknown"] = "x"
	delete(spec, "replicas")
	for _, name := range []string{"test", "package", "publish"} {
		spec["steps"] = append(spec["steps"].([]interface{}), map[string]interface{}{"name": name, "retries": int64(1)})
	}
	spec["labels"].(map[string]interface{})["tier"] = "backend"
	data, err := json.Marshal(input)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("object size: %d bytes", len(data))

	ctx := b.Context()
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = runtime.DeepCopyJSON(input)
		}
	})
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj := runtime.DeepCopyJSON(input)
			s.Prune(obj)
			s.Default(obj)
			if errs := s.Validate(ctx, obj); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("prune", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Prune(runtime.DeepCopyJSON(input))
		}
	})
	b.Run("default", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Default(runtime.DeepCopyJSON(input))
		}
	})
	valid := runtime.DeepCopyJSON(input)
	s.Prune(valid)
	s.Default(valid)
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if errs := s.Validate(ctx, valid); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
}

func BenchmarkCompile(b *testing.B) {
	props := loadProps(b, "widget.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(b.Context(), props, nil); err != nil {
			b.Fatal(err)
		}
	}
}
