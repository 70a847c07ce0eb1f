package guard

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var widgets = schema.GroupResource{Group: "example.com", Resource: "widgets"}

// revision is the StorageVersion object of widgets at rv, its servers encoding in
// the versions given.
func revision(t *testing.T, rv int, versions ...string) *unstructured.Unstructured {
	t.Helper()
	sv := &apiserverinternalv1alpha1.StorageVersion{
		TypeMeta:   metav1.TypeMeta{APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion"},
		ObjectMeta: metav1.ObjectMeta{Name: wire.StorageVersionName(widgets), ResourceVersion: strconv.Itoa(rv)},
	}
	var entries []apiserverinternalv1alpha1.ServerStorageVersion
	for i, v := range versions {
		entries = append(entries, apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: "server-" + strconv.Itoa(i),
			EncodingVersion: "example.com/" + v, DecodableVersions: []string{"example.com/v1", "example.com/v2"}})
	}
	wire.SetStorageVersionEntries(sv, entries, time.Now())
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sv)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}

// TestCheck applies the rule to the events a history can hold: revisions where the
// servers agree on the migration's hash or not, a deletion, a bookmark, a watch
// error, and a history that passes the resourceVersion it should end at.
func TestCheck(t *testing.T) {
	v2 := wire.StorageHash(wire.StorageVersionHash("example.com", "v2", "Widget"), "")
	c := Change{Resource: widgets, Kind: "Widget", Hash: v2, From: "10", To: "20"}
	for _, tc := range []struct {
		name     string
		ev       watch.Event
		done     bool
		err      bool
		unreadOK bool // the error is ErrHistoryUnread
	}{
		{"agreeing revision before the end", watch.Event{Type: watch.Modified, Object: revision(t, 15, "v2", "v2")}, false, false, false},
		{"agreeing revision at the end", watch.Event{Type: watch.Modified, Object: revision(t, 20, "v2")}, true, false, false},
		{"a server of another release", watch.Event{Type: watch.Modified, Object: revision(t, 15, "v2", "v1")}, false, true, false},
		{"agreeing on another version", watch.Event{Type: watch.Modified, Object: revision(t, 15, "v1")}, false, true, false},
		{"no server at all", watch.Event{Type: watch.Modified, Object: revision(t, 15)}, false, true, false},
		{"deleted", watch.Event{Type: watch.Deleted, Object: revision(t, 16, "v2")}, false, true, false},
		{"past the end", watch.Event{Type: watch.Modified, Object: revision(t, 21, "v2")}, false, true, true},
		{"bookmark before the end", watch.Event{Type: watch.Bookmark, Object: revision(t, 19)}, false, false, false},
		{"bookmark at the end", watch.Event{Type: watch.Bookmark, Object: revision(t, 20)}, true, false, false},
		{"compacted", watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}}, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, err := c.check(tc.ev, 20)
			if done != tc.done || (err != nil) != tc.err || errors.Is(err, ErrHistoryUnread) != tc.unreadOK {
				t.Errorf("check = %v, %v; want done %v, error %v (unread %v)", done, err, tc.done, tc.err, tc.unreadOK)
			}
		})
	}
}
