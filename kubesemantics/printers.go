package kubesemantics

import (
	"context"
	"fmt"
	"sync"

	"github.com/concordproject/concord/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
)

// tables is kube's table generator with every built-in kind's printer (kubectl get's
// columns, as kube-apiserver serves them in Tables).
var tables = sync.OnceValue(func() *printers.HumanReadableGenerator {
	return printers.NewTableGenerator().With(printersinternal.AddHandlers)
})

// table prints objs (of version) as kube-apiserver does: every column, the wide ones
// too (their priority tells clients which to show), and one row of cells per object.
func (k *typedResource) table(_ context.Context, version string, objs []registry.Object) ([]metav1.TableColumnDefinition, [][]interface{}, error) {
	var columns []metav1.TableColumnDefinition
	rows := make([][]interface{}, 0, len(objs))
	for i := range objs {
		ext, err := k.external(version, &objs[i])
		if err != nil {
			return nil, nil, err
		}
		var internal runtime.Object
		k.sem.gates.Do(func() { internal, err = legacyscheme.Scheme.ConvertToVersion(ext, runtime.InternalGroupVersioner) })
		if err != nil {
			return nil, nil, fmt.Errorf("converting %s to kube's internal version: %w", objs[i].GetName(), err)
		}
		t, err := tables().GenerateTable(internal, printers.GenerateOptions{Wide: true, NoHeaders: columns != nil})
		if err != nil {
			return nil, nil, fmt.Errorf("printing %s: %w", objs[i].GetName(), err)
		}
		if columns == nil {
			columns = t.ColumnDefinitions
		}
		for _, r := range t.Rows {
			rows = append(rows, r.Cells)
		}
	}
	if columns == nil {
		var err error
		if columns, err = k.columns(); err != nil {
			return nil, nil, err
		}
	}
	return columns, rows, nil
}

// columns are the columns of the resource's Table when there is no object to print.
func (k *typedResource) columns() ([]metav1.TableColumnDefinition, error) {
	internal, err := legacyscheme.Scheme.New(k.res.GroupVersion(k.res.StorageVersion).WithKind(k.res.Names.Kind).GroupKind().WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return nil, err
	}
	t, err := tables().GenerateTable(internal, printers.GenerateOptions{Wide: true})
	if err != nil {
		return nil, err
	}
	return t.ColumnDefinitions, nil
}
