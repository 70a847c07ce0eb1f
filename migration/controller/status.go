package controller

import (
	"context"
	"encoding/json"
	"fmt"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/retry"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// AnnotationProgress is migrationapi.AnnotationProgress.
const AnnotationProgress = migrationapi.AnnotationProgress

// The annotation keeps the first maxAnnotatedFailures failures, their reasons cut to
// maxAnnotatedReason bytes: an object's annotations are bounded (256 KiB together).
const (
	maxAnnotatedFailures = 10
	maxAnnotatedReason   = 256
)

// ProgressOf returns the progress of migration u: its status.progress where the API
// keeps it, else its AnnotationProgress annotation; nil if it has neither (or the
// annotation does not decode).
func ProgressOf(u *unstructured.Unstructured) *migrationapi.Progress {
	var status *migrationapi.Progress
	if st, ok, _ := unstructured.NestedMap(u.Object, "status", "progress"); ok {
		p := &migrationapi.Progress{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(st, p) == nil {
			status = p
		}
	}
	return migrationapi.ProgressOf(status, u.GetAnnotations())
}

// progressAnnotation is p as AnnotationProgress holds it.
func progressAnnotation(p *migrationapi.Progress) (string, error) {
	q := *p
	q.Failures = nil
	for i, f := range p.Failures {
		if i == maxAnnotatedFailures {
			break
		}
		if len(f.Reason) > maxAnnotatedReason {
			f.Reason = f.Reason[:maxAnnotatedReason] + "..."
		}
		q.Failures = append(q.Failures, f)
	}
	data, err := json.Marshal(&q)
	return string(data), err
}

// statusWriter writes the status of one migration, starting from the object last
// read or written.
type statusWriter struct {
	dyn dynamic.Interface
	obj *unstructured.Unstructured
	uid types.UID
	// inAnnotation writes the progress in AnnotationProgress, not status.progress.
	inAnnotation bool
}

// update applies change to the migration's status and writes it: status.conditions
// and status.resourceVersion, and the progress in status.progress, or, with
// inAnnotation, in the AnnotationProgress annotation (written first, so that whoever
// sees the conditions of an end sees its last progress too). It returns an error
// wrapping errAborted if the migration ended or was deleted meanwhile. Fields of the
// status this package does not know are kept.
func (w *statusWriter) update(ctx context.Context, change func(*migrationapi.MigrationStatus)) error {
	client := w.dyn.Resource(migrationapi.StorageVersionMigrations)
	fields := []string{"conditions", "resourceVersion", "progress"}
	if w.inAnnotation {
		fields = fields[:2]
		update := func(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
			return client.Update(ctx, obj, opts)
		}
		err := w.write(ctx, update, func(next *unstructured.Unstructured, m *migrationapi.StorageVersionMigration) error {
			change(&m.Status)
			if m.Status.Progress == nil {
				return nil
			}
			v, err := progressAnnotation(m.Status.Progress)
			if err != nil {
				return err
			}
			annotations := next.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[AnnotationProgress] = v
			next.SetAnnotations(annotations)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return w.write(ctx, client.UpdateStatus, func(next *unstructured.Unstructured, m *migrationapi.StorageVersionMigration) error {
		change(&m.Status)
		st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m.Status)
		if err != nil {
			return err
		}
		for _, f := range fields {
			if v, ok := st[f]; ok {
				_ = unstructured.SetNestedField(next.Object, v, "status", f)
			}
		}
		return nil
	})
}

// updateFunc is an update of the dynamic client: of the object, or of its status.
type updateFunc func(context.Context, *unstructured.Unstructured, metav1.UpdateOptions) (*unstructured.Unstructured, error)

// write makes one write of the migration with verb: mutate changes a copy of the
// object last seen (m is that object decoded, with the progress ProgressOf finds),
// and the copy is written unless it equals the object. A conflict reads the object
// again and starts over, as the one retry helper's conflict policy bounds.
func (w *statusWriter) write(ctx context.Context, verb updateFunc, mutate func(*unstructured.Unstructured, *migrationapi.StorageVersionMigration) error) error {
	return retry.OnConflict(ctx, func(ctx context.Context) error {
		m, err := migrationapi.MigrationFrom(w.obj)
		if err != nil {
			return err
		}
		if m.Terminal() {
			return fmt.Errorf("%w: %s", errAborted, m.Phase())
		}
		m.Status.Progress = ProgressOf(w.obj)
		next := w.obj.DeepCopy()
		if err := mutate(next, m); err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(next.Object, w.obj.Object) {
			return nil
		}
		out, err := verb(ctx, next, metav1.UpdateOptions{FieldManager: migrationapi.FieldManager})
		switch {
		case err == nil:
			w.obj = out
			return nil
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%w: deleted", errAborted)
		case apierrors.IsConflict(err):
			if rerr := w.reread(ctx); rerr != nil {
				return rerr
			}
		}
		return err
	})
}

// reread replaces the object last seen with the server's, unless the migration was
// deleted or replaced meanwhile.
func (w *statusWriter) reread(ctx context.Context) error {
	fresh, err := w.dyn.Resource(migrationapi.StorageVersionMigrations).Get(ctx, w.obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: deleted", errAborted)
	case err != nil:
		return err
	case fresh.GetUID() != w.uid:
		return fmt.Errorf("%w: replaced", errAborted)
	}
	w.obj = fresh
	return nil
}
