package wire

import (
	"errors"
	"testing"
)

func TestComponentVersionsRoundTrip(t *testing.T) {
	v, err := ParseComponentVersions("1.37.2", "1.36", "")
	if err != nil {
		t.Fatal(err)
	}
	labels := v.Labels()
	want := map[string]string{LabelBinaryVersion: "1.37", LabelEmulationVersion: "1.36", LabelMinCompatibilityVersion: "1.36"}
	for k, val := range want {
		if labels[k] != val {
			t.Errorf("label %s = %q, want %q", k, labels[k], val)
		}
	}
	back, ok, err := ComponentVersionsOf(labels)
	if err != nil || !ok || !back.Binary.EqualTo(v.Binary) || !back.Emulation.EqualTo(v.Emulation) || !back.MinCompatibility.EqualTo(v.MinCompatibility) {
		t.Errorf("ComponentVersionsOf(%v) = %v, %t, %v; want %v", labels, back, ok, err, v)
	}
}

func TestComponentVersionsInvalid(t *testing.T) {
	if _, ok, err := ComponentVersionsOf(map[string]string{"other": "x"}); ok || err != nil {
		t.Errorf("a lease without version labels: ok %t, err %v; want neither", ok, err)
	}
	if _, _, err := ComponentVersionsOf(map[string]string{LabelEmulationVersion: "1.36", LabelBinaryVersion: "one"}); err == nil {
		t.Error("a binary version that does not parse was read")
	}
	if _, err := ParseComponentVersions("1.37", "", "1.36"); !errors.Is(err, ErrNoVersion) {
		t.Errorf("no emulation version: err %v, want ErrNoVersion", err)
	}
}
