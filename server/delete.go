package server

import (
	"net/http"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	opts, dry, err := parseDelete(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	wo := store.WriteOptions{DryRun: dry, Admit: s.deleteAdmission(q, opts, dry)}
	obj, deleted, err := s.cfg.Store.Delete(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace, Name: q.info.Name}, storeDeleteOptions(opts, wo))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	code := http.StatusOK
	//nolint:staticcheck // SA1019: the deprecated orphanDependents=false still answers 202, as in Kubernetes.
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if deleted && !q.res.ReturnDeletedObject {
		// Gone: Kubernetes answers a Status naming what was deleted (its Kind the
		// resource), so that a client tells a deletion from one pending on finalizers.
		respond.Object(w, r, code, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusSuccess,
			Details:  &metav1.StatusDetails{Name: obj.GetName(), Group: q.res.Group, Kind: q.res.Names.Plural, UID: obj.GetUID()},
		})
		return
	}
	s.writeObject(w, r, q, code, obj)
}

// serveDeleteCollection deletes every object of the collection that matches the list
// options, one by one, and answers, as Kubernetes does, the list of the objects it
// set out to delete (as they were listed); with a limit, only the first page of them.
// Objects deleted concurrently by someone else are not errors.
func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	opts, dry, err := parseDelete(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	lopts, err := s.listOptions(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	onePage := lopts.Limit > 0
	if !onePage {
		lopts.Limit = 500
	}
	lopts.Continue = ""
	wo := store.WriteOptions{DryRun: dry, Admit: s.deleteAdmission(q, opts, dry)}
	var answer *unstructured.UnstructuredList
	for {
		list, err := s.cfg.Store.List(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace}, lopts)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		for i := range list.Items {
			item := &list.Items[i]
			_, _, err := s.cfg.Store.Delete(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: item.GetNamespace(), Name: item.GetName()}, storeDeleteOptions(opts, wo))
			if err != nil && !apierrors.IsNotFound(err) {
				respond.Error(w, r, err)
				return
			}
		}
		if answer == nil {
			answer = list
		} else {
			answer.Items = append(answer.Items, list.Items...)
		}
		if onePage || list.GetContinue() == "" {
			break
		}
		lopts.Continue, lopts.ResourceVersion, lopts.ResourceVersionMatch = list.GetContinue(), "", ""
	}
	if !onePage {
		answer.SetContinue("")
	}
	respond.Object(w, r, http.StatusOK, answer)
}

// parseDelete reads the DeleteOptions of a delete request and whether it is a dry
// run. Options Kubernetes refuses (an unknown dryRun or propagationPolicy,
// orphanDependents with propagationPolicy) are a 422 naming the field.
func parseDelete(r *http.Request) (*metav1.DeleteOptions, bool, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, false, err
	}
	opts, err := deleteOptions(r, body)
	if err != nil {
		return nil, false, err
	}
	// Concord does not delete objects it cannot read: the option is ignored, as by
	// Kubernetes before 1.37 (where the AllowUnsafeMalformedObjectDeletion gate went
	// beta, on); operators-guide, Encryption at rest, says why.
	opts.IgnoreStoreReadErrorWithClusterBreakingPotential = nil
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, false, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, len(opts.DryRun) > 0, nil
}

// storeDeleteOptions are the store's options of a deletion the request's opts ask
// for, written with wo (dry run, admission): its preconditions, grace period and
// propagation (the deprecated orphanDependents as the policy it means).
func storeDeleteOptions(opts *metav1.DeleteOptions, wo store.WriteOptions) store.DeleteOptions {
	out := store.DeleteOptions{WriteOptions: wo, Preconditions: opts.Preconditions, Propagation: opts.PropagationPolicy,
		GracePeriodSeconds: opts.GracePeriodSeconds}
	//nolint:staticcheck // SA1019: the deprecated orphanDependents is still honoured, as in Kubernetes.
	if orphan := opts.OrphanDependents; orphan != nil {
		policy := metav1.DeletePropagationBackground
		if *orphan {
			policy = metav1.DeletePropagationOrphan
		}
		out.Propagation = &policy
	}
	return out
}
