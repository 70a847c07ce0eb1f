package discovery

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// The probe tells the three answers apart as a server gives them: no
// storagemigration.k8s.io/v1 (404), the resource printed with Concord's definition's
// progress columns, and printed without them (Kubernetes' built-in printer).
func TestProbeMigrationAPI(t *testing.T) {
	kubeColumns := []string{"Name", "Resource", "Status"}
	concordColumns := []string{"Name", "Resource", "Group", "Migrated", "Failed", "Total", "Age"}
	for _, tc := range []struct {
		name    string
		served  bool
		columns []string
		want    MigrationAPI
	}{
		{"not served", false, nil, MigrationAPINotServed},
		{"Concord's definition", true, concordColumns, MigrationAPIConcord},
		{"Kubernetes' built-in", true, kubeColumns, MigrationAPIBuiltIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case !tc.served:
					w.WriteHeader(http.StatusNotFound)
					_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound})
				case r.URL.Path == "/apis/storagemigration.k8s.io/v1":
					_ = json.NewEncoder(w).Encode(metav1.APIResourceList{GroupVersion: "storagemigration.k8s.io/v1",
						APIResources: []metav1.APIResource{{Name: "storageversionmigrations", Kind: "StorageVersionMigration"}}})
				case r.URL.Path == "/apis/storagemigration.k8s.io/v1/storageversionmigrations" && r.Header.Get("Accept") == tableAccept:
					table := metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}}
					for _, c := range tc.columns {
						table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{Name: c})
					}
					_ = json.NewEncoder(w).Encode(table)
				default:
					t.Errorf("unexpected %s %s", r.Method, r.URL)
					w.WriteHeader(http.StatusInternalServerError)
				}
			}))
			defer srv.Close()
			disc, err := clientdiscovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ProbeMigrationAPI(t.Context(), disc)
			if err != nil || got != tc.want {
				t.Errorf("ProbeMigrationAPI = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
