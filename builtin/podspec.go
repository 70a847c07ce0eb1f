package builtin

// child returns obj[key] as an object, creating it if absent. A value of another type
// is left alone, and a detached map returned, for validation to report.
func child(obj map[string]interface{}, key string) map[string]interface{} {
	switch v := obj[key].(type) {
	case map[string]interface{}:
		return v
	case nil:
		m := map[string]interface{}{}
		obj[key] = m
		return m
	}
	return map[string]interface{}{}
}

func setDefault(obj map[string]interface{}, key string, value interface{}) {
	if v, ok := obj[key]; !ok || v == nil {
		obj[key] = value
	}
}
