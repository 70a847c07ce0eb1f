package compatibility

import (
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
)

// A component honours only its own gates: another of the catalog's is unrecognized, and
// the dependencies of servers' gates on gates it does not have do not apply.
func TestComponentOptions(t *testing.T) {
	gates := []featuregate.Feature{StorageVersionAPI}
	cases := []struct {
		name    string
		o       ComponentOptions
		wantErr string
		check   func(t *testing.T, c *ComponentConfig)
	}{
		{name: "defaults", check: func(t *testing.T, c *ComponentConfig) {
			if !c.Enabled(StorageVersionAPI) || c.Enabled(WatchList) || c.Versions.Emulation.String() != c.Versions.Binary.String() {
				t.Errorf("config %+v: StorageVersionAPI %v, WatchList %v", c.Versions, c.Enabled(StorageVersionAPI), c.Enabled(WatchList))
			}
		}},
		{name: "gate off, no dependency", o: ComponentOptions{FeatureGates: []string{"StorageVersionAPI=false"}}, check: func(t *testing.T, c *ComponentConfig) {
			if c.Enabled(StorageVersionAPI) {
				t.Error("StorageVersionAPI still on")
			}
		}},
		{name: "older release", o: ComponentOptions{BinaryVersion: "1.36", EmulationVersion: []string{"1.35"}}, check: func(t *testing.T, c *ComponentConfig) {
			if got := c.Versions.String(); got != "binary 1.36, emulation 1.35, min compatibility 1.34" {
				t.Errorf("versions %s", got)
			}
		}},
		{name: "a server's gate", o: ComponentOptions{FeatureGates: []string{"WatchList=true"}}, wantErr: "unrecognized feature gate: WatchList"},
		{name: "a server's gate it depends on", o: ComponentOptions{FeatureGates: []string{"APIServerIdentity=false"}}, wantErr: "unrecognized feature gate: APIServerIdentity"},
		{name: "every problem", o: ComponentOptions{EmulationVersion: []string{"1.20"}, FeatureGates: []string{"Nope"}},
			wantErr: "emulation version 1.20 is not between"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Gates = gates
			c, err := tc.o.Complete(t.Context())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
