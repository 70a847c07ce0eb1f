package schema

import (
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestConcurrentUse runs every operation of one Schema from many goroutines (run with
// -race) and checks each result against the one computed alone.
func TestConcurrentUse(t *testing.T) {
	s := compileFile(t, "widget.yaml")

	input := parseObject(t, validWidget)
	input["unknown"] = "x"
	input["spec"].(map[string]interface{})["replicas"] = nil
	input["spec"].(map[string]interface{})["tags"] = []interface{}{"a", "a"}
	input["spec"].(map[string]interface{})["window"] = map[string]interface{}{"min": int64(3), "max": int64(1)}

	process := func(obj map[string]interface{}) ([]string, []string) {
		pruned := s.Prune(obj)
		s.Default(obj)
		errs := errorStrings(s.Validate(t.Context(), obj))
		slices.Sort(errs)
		return pruned, errs
	}
	wantObj := runtime.DeepCopyJSON(input)
	wantPruned, wantErrs := process(wantObj)
	if len(wantPruned) == 0 || len(wantErrs) == 0 {
		t.Fatalf("the input should have unknown fields and errors: %q, %q", wantPruned, wantErrs)
	}

	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				obj := runtime.DeepCopyJSON(input)
				pruned, errs := process(obj)
				if !slices.Equal(pruned, wantPruned) || !slices.Equal(errs, wantErrs) {
					t.Errorf("concurrent result differs:\n pruned %q\n errors %q", pruned, errs)
					return
				}
				assertJSONEqual(t, obj, wantObj)
				_ = s.ValidateUpdate(t.Context(), obj, wantObj)
				if s.OpenAPI() == nil {
					t.Error("OpenAPI returned nil")
					return
				}
			}
		})
	}
	wg.Wait()
}
