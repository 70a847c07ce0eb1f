package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// tableConvertor renders objects of one resource version as Table rows: NAME, the
// version's printer columns, and AGE when the version declares no columns.
type tableConvertor struct {
	columns []metav1.TableColumnDefinition
	paths   []*jsonpath.JSONPath
}

type tableKey struct{ version string }

func (s *Server) tableConvertor(res *registry.Resource, version string) (*tableConvertor, error) {
	v, err := res.Cached(tableKey{version}, func() (any, error) {
		tc := &tableConvertor{columns: []metav1.TableColumnDefinition{{
			Name: "Name", Type: "string", Format: "name",
			Description: "Name must be unique within a namespace.",
		}}}
		cols := res.Version(version).PrinterColumns
		if len(cols) == 0 {
			cols = append(cols, defaultAgeColumn)
		}
		for _, col := range cols {
			p := jsonpath.New(col.Name)
			if err := p.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
				return nil, fmt.Errorf("printer column %q: %w", col.Name, err)
			}
			p.AllowMissingKeys(true)
			tc.paths = append(tc.paths, p)
			tc.columns = append(tc.columns, metav1.TableColumnDefinition{
				Name: col.Name, Type: col.Type, Format: col.Format, Description: col.Description, Priority: col.Priority,
			})
		}
		return tc, nil
	})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return v.(*tableConvertor), nil
}

var defaultAgeColumn = apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
	Description: "CreationTimestamp is a timestamp representing the server time when this object was created."}

// table renders objs as a Table, with each row's object included as the client asked
// (?includeObject=None|Metadata|Object; Metadata by default).
func (s *Server) table(r *http.Request, q *apiRequest, objs []unstructured.Unstructured, lm *metav1.ListMeta) (*metav1.Table, error) {
	include := metav1.IncludeMetadata
	switch v := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject")); v {
	case "":
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
		include = v
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid includeObject %q: allowed are None, Metadata and Object", v))
	}
	columns, cells, err := s.tableCells(r, q, objs)
	if err != nil {
		return nil, err
	}
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ListMeta:          *lm,
		ColumnDefinitions: columns,
		Rows:              make([]metav1.TableRow, 0, len(objs)),
	}
	for i := range objs {
		obj := &objs[i]
		row := metav1.TableRow{Cells: cells[i]}
		switch include {
		case metav1.IncludeMetadata:
			row.Object = runtime.RawExtension{Object: toPartial(obj)}
		case metav1.IncludeObject:
			row.Object = runtime.RawExtension{Object: obj}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// tableCells returns the columns of objs' Table and each object's cells: as the
// resource's Semantics print them (kube's printers, for built-in resources), else
// NAME, the version's printer columns (or a TableCells hook's cells) and AGE.
func (s *Server) tableCells(r *http.Request, q *apiRequest, objs []unstructured.Unstructured) ([]metav1.TableColumnDefinition, [][]interface{}, error) {
	if sem := q.res.Semantics; sem != nil && sem.Table != nil {
		columns, cells, err := sem.Table(r.Context(), q.version.Name, objs)
		if err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		return columns, cells, nil
	}
	tc, err := s.tableConvertor(q.res, q.version.Name)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	rows := make([][]interface{}, len(objs))
	for i := range objs {
		obj := &objs[i]
		cells := make([]interface{}, 0, len(tc.columns))
		cells = append(cells, obj.GetName())
		if h := q.res.Hooks; h != nil && h.TableCells != nil {
			cells = append(cells, h.TableCells(obj)...)
		} else {
			for j, p := range tc.paths {
				cells = append(cells, cell(p, tc.columns[j+1].Type, obj.Object, &buf))
			}
		}
		rows[i] = cells
	}
	return tc.columns, rows, nil
}

// cell evaluates one printer column for an object.
func cell(p *jsonpath.JSONPath, typ string, obj map[string]interface{}, buf *bytes.Buffer) interface{} {
	results, err := p.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	value := results[0][0].Interface()
	if value == nil {
		return nil
	}
	switch typ {
	case "integer":
		switch n := value.(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		case json.Number:
			if i, err := n.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch n := value.(type) {
		case int64:
			return float64(n)
		case float64:
			return n
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			var ts metav1.Time
			if err := ts.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return metatable.ConvertToHumanReadableDateType(ts)
		}
	default: // string: scalars as they print, structures as JSON
		buf.Reset()
		if err := p.PrintResults(buf, []reflect.Value{reflect.ValueOf(value)}); err == nil {
			return buf.String()
		}
	}
	return nil
}
