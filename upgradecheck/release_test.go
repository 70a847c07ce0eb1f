package upgradecheck

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	migrationapi "github.com/concordproject/concord/migration/api"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A release is what a real server of it has: the catalog's resources as the
// compatibility package selects them, Concord's own definitions, and CRDs. The steps
// towards an old release are the releases at most three above it that can run with
// --min-compatibility-version set to it.
func TestReleases(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	target, steps, err := Releases(t.Context(), cat, "1.28", "1.28")
	if err != nil {
		t.Fatal(err)
	}
	flowschemas := schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}
	if got := target.Resources[flowschemas]; !slices.Equal(got.Versions, []string{"v1beta3", "v1beta2", "v1beta1"}) || got.StorageVersion != "v1beta3" {
		t.Errorf("1.28 flowschemas: %+v", got)
	}
	svm := migrationapi.StorageVersionMigrations.GroupResource()
	if got := target.Resources[svm]; !slices.Equal(got.Versions, []string{"v1", "v1beta1"}) {
		t.Errorf("1.28 has Concord's own StorageVersionMigrations in every release: %+v", got)
	}
	if _, ok := target.Resources[schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}]; !ok {
		t.Error("1.28 serves no CustomResourceDefinitions")
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Binary+"/"+s.MinCompatibility)
		if got := s.Resources[flowschemas].StorageVersion; got != "v1beta3" {
			t.Errorf("step %s stores flowschemas in %s", s.Binary, got)
		}
	}
	// 1.31 cannot keep flowschemas readable by 1.28: v1beta3 is removed in 1.32.
	if !slices.Equal(names, []string{"1.29/1.28", "1.30/1.28"}) {
		t.Errorf("steps = %v", names)
	}
}

func TestValidateVersions(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		to, emulation   string
		wantTo, wantEmu string
		wantErr         string
	}{
		{to: "1.30", wantTo: "1.30", wantEmu: "1.30"},
		{to: "v1.30", emulation: "kube=1.27", wantTo: "1.30", wantEmu: "1.27"},
		{to: "1.30.0", emulation: "1.30", wantTo: "1.30", wantEmu: "1.30"},
		{to: "1.38", emulation: "1.38", wantTo: "1.38", wantEmu: "1.38"},
		{to: "1.40", emulation: "1.37", wantTo: "1.40", wantEmu: "1.37"},
		{wantErr: "--to-version is required: a release from 1.20 to 1.40 (major.minor; the API catalog ends at 1.37"},
		{to: "1.50", wantErr: `--to-version "1.50": want a release from 1.20 to 1.40`},
		{to: "1.40", emulation: "1.36", wantErr: `--emulation-version "1.36": want a release from 1.37 to 1.40`},
		{to: "1.19", wantErr: `--to-version "1.19": want`},
		{to: "banana", wantErr: `--to-version "banana": want`},
		{to: "1.30.2", wantErr: `--to-version "1.30.2": want`},
		{to: "1.30", emulation: "1.26", wantErr: `--emulation-version "1.26": want a release from 1.27 to 1.30`},
		{to: "1.21", emulation: "1.19", wantErr: `--emulation-version "1.19": want a release from 1.20 to 1.21`},
		{to: "1.30", emulation: "1.31", wantErr: `--emulation-version "1.31": want a release from 1.27 to 1.30`},
	} {
		tv, err := validateVersions(cat, tc.to, tc.emulation)
		to, emu := tv.to, tv.emulation
		if tc.wantErr != "" {
			if err == nil || !errors.Is(err, ErrFlag) || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("validateVersions(%q, %q) = %v, want one line with %q", tc.to, tc.emulation, err, tc.wantErr)
			}
			continue
		}
		if err != nil || to != tc.wantTo || emu != tc.wantEmu {
			t.Errorf("validateVersions(%q, %q) = %q, %q, %v", tc.to, tc.emulation, to, emu, err)
		}
	}
}
