package auth

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadTokenFile(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    map[string]User
		wantErr []string // substrings of the error; nil means success
		dup     bool     // the error also wraps ErrDuplicateToken
	}{
		{
			name: "good lines, comments and blanks",
			content: "# token,user,uid,groups\n" +
				"\n" +
				"t1,alice,uid-1\n" +
				"t2, bob, uid-2, \"dev, ops\"\n" +
				"   \n" +
				"t3,carol,,system:masters\n" +
				"t4,dave,uid-4,\"\"\n",
			want: map[string]User{
				"t1": {Name: "alice", UID: "uid-1"},
				"t2": {Name: "bob", UID: "uid-2", Groups: []string{"dev", "ops"}},
				"t3": {Name: "carol", Groups: []string{"system:masters"}},
				"t4": {Name: "dave", UID: "uid-4"},
			},
		},
		{name: "empty file", content: "", want: map[string]User{}},
		{
			name:    "too few columns",
			content: "t1,alice,uid-1\nt2,bob\n",
			wantErr: []string{"line 2", "want 3 or 4 columns", "found 2"},
		},
		{
			name:    "unquoted groups",
			content: "# header\nt1,alice,uid-1,dev,ops\n",
			wantErr: []string{"line 2", "found 5", `quote a list of groups`},
		},
		{
			name:    "empty token",
			content: ",alice,uid-1\n",
			wantErr: []string{"line 1", "empty token"},
		},
		{
			name:    "token with space",
			content: "\"se cret\",alice,uid-1\n",
			wantErr: []string{"line 1", "white space"},
		},
		{
			name:    "empty user",
			content: "t1, ,uid-1\n",
			wantErr: []string{"line 1", "empty user name"},
		},
		{
			name:    "duplicate token",
			content: "t1,alice,uid-1\n\n# again\nt1,bob,uid-2\n",
			wantErr: []string{"line 4", "first on line 1"},
			dup:     true,
		},
		{
			name:    "bad quoting",
			content: "t1,alice,uid-1\nt2,bob,\"uid\n",
			wantErr: []string{"line 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.csv")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadTokenFile(path)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %#v\nwant %#v", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %v, want an error", got)
			}
			if !errors.Is(err, ErrInvalidTokenFile) {
				t.Errorf("error %q does not wrap ErrInvalidTokenFile", err)
			}
			if tt.dup != errors.Is(err, ErrDuplicateToken) {
				t.Errorf("error %q: wraps ErrDuplicateToken = %v, want %v", err, !tt.dup, tt.dup)
			}
			for _, want := range append(tt.wantErr, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			for _, secret := range []string{"t1", "t2", "se cret"} {
				if strings.Contains(err.Error(), secret+",") || strings.Contains(err.Error(), `"`+secret+`"`) {
					t.Errorf("error %q reveals a token", err)
				}
			}
		})
	}
}

func TestLoadTokenFileMissing(t *testing.T) {
	_, err := LoadTokenFile(filepath.Join(t.TempDir(), "absent.csv"))
	if !errors.Is(err, ErrInvalidTokenFile) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want ErrInvalidTokenFile wrapping os.ErrNotExist", err)
	}
}
