package kubesemantics

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/apis/certificates"
	certificatesvalidation "k8s.io/kubernetes/pkg/apis/certificates/validation"
	"k8s.io/utils/clock"

	_ "k8s.io/kubernetes/pkg/apis/certificates/install" // certificates' types, defaults and conversions
)

func init() { groups = append(groups, certificatesKinds) }

// certificatesClock is the time of conditions' timestamps and the time
// PodCertificateRequests' status is checked against (tests replace it).
var certificatesClock clock.PassiveClock = clock.RealClock{}

// certificatesKinds are the strategies of group certificates.k8s.io.
func certificatesKinds() map[schema.GroupResource]strategy {
	const group = "certificates.k8s.io"
	return map[schema.GroupResource]strategy{
		{Group: group, Resource: "certificatesigningrequests"}: csrKind.erase(),
		{Group: group, Resource: "clustertrustbundles"}: kind[*certificates.ClusterTrustBundle]{
			validate: func(_ context.Context, b *certificates.ClusterTrustBundle) field.ErrorList {
				return certificatesvalidation.ValidateClusterTrustBundle(b, certificatesvalidation.ValidateClusterTrustBundleOptions{})
			},
			validateUpdate: func(_ context.Context, b, old *certificates.ClusterTrustBundle) field.ErrorList {
				return certificatesvalidation.ValidateClusterTrustBundleUpdate(b, old)
			},
		}.erase(),
		{Group: group, Resource: "podcertificaterequests"}: kind[*certificates.PodCertificateRequest]{
			prepareCreate: func(_ context.Context, r *certificates.PodCertificateRequest) {
				r.Status = certificates.PodCertificateRequestStatus{}
			},
			validate: func(_ context.Context, r *certificates.PodCertificateRequest) field.ErrorList {
				return certificatesvalidation.ValidatePodCertificateRequestCreate(r)
			},
			prepareUpdate: func(_ context.Context, r, old *certificates.PodCertificateRequest) { r.Status = old.Status },
			validateUpdate: func(_ context.Context, r, old *certificates.PodCertificateRequest) field.ErrorList {
				return certificatesvalidation.ValidatePodCertificateRequestUpdate(r, old)
			},
			prepareStatus: func(_ context.Context, r, old *certificates.PodCertificateRequest) {
				r.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&r.ObjectMeta, &old.ObjectMeta)
			},
			validateStatus: func(_ context.Context, r, old *certificates.PodCertificateRequest) field.ErrorList {
				return certificatesvalidation.ValidatePodCertificateRequestStatusUpdate(r, old, certificatesClock)
			},
		}.erase(),
	}
}

// csrKind is the strategy of CertificateSigningRequests: the requester recorded on
// create, a spec nobody changes after, a status only the status subresource writes
// (the certificate; approval and denial conditions stay as they are) and approval
// and denial conditions only the approval subresource writes.
var csrKind = kind[*certificates.CertificateSigningRequest]{
	prepareCreate: func(ctx context.Context, csr *certificates.CertificateSigningRequest) {
		recordRequester(ctx, &csr.Spec)
		csr.Status = certificates.CertificateSigningRequestStatus{Conditions: []certificates.CertificateSigningRequestCondition{}}
	},
	validate: func(_ context.Context, csr *certificates.CertificateSigningRequest) field.ErrorList {
		return certificatesvalidation.ValidateCertificateSigningRequestCreate(csr)
	},
	prepareUpdate: func(_ context.Context, csr, old *certificates.CertificateSigningRequest) {
		csr.Spec, csr.Status = old.Spec, old.Status
	},
	validateUpdate: func(_ context.Context, csr, old *certificates.CertificateSigningRequest) field.ErrorList {
		return certificatesvalidation.ValidateCertificateSigningRequestUpdate(csr, old)
	},
	prepareStatus: func(_ context.Context, csr, old *certificates.CertificateSigningRequest) {
		csr.Spec = old.Spec
		keepConditions(csr, old, certificates.CertificateApproved)
		keepConditions(csr, old, certificates.CertificateDenied)
		stampConditions(csr, old, metav1.NewTime(certificatesClock.Now()))
	},
	validateStatus: func(_ context.Context, csr, old *certificates.CertificateSigningRequest) field.ErrorList {
		return certificatesvalidation.ValidateCertificateSigningRequestStatusUpdate(csr, old)
	},
	subresources: map[string]subresource[*certificates.CertificateSigningRequest]{"approval": {
		prepare: func(_ context.Context, csr, old *certificates.CertificateSigningRequest) {
			stampConditions(csr, old, metav1.NewTime(certificatesClock.Now()))
			conditions := csr.Status.Conditions
			csr.Spec, csr.Status = old.Spec, old.Status
			csr.Status.Conditions = conditions
		},
		validate: func(_ context.Context, csr, old *certificates.CertificateSigningRequest) field.ErrorList {
			return certificatesvalidation.ValidateCertificateSigningRequestApprovalUpdate(csr, old)
		},
	}},
}

// recordRequester makes spec's username, uid, groups and extra those of the user
// who asks (ctx's), whatever the client wrote there.
func recordRequester(ctx context.Context, spec *certificates.CertificateSigningRequestSpec) {
	spec.Username, spec.UID, spec.Groups, spec.Extra = "", "", nil, nil
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return
	}
	spec.Username, spec.UID, spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
	if extra := u.GetExtra(); len(extra) > 0 {
		spec.Extra = make(map[string]certificates.ExtraValue, len(extra))
		for k, v := range extra {
			spec.Extra[k] = v
		}
	}
}

// keepConditions puts back the stored conditions of type t, in their places in
// csr's, when csr has as many of them as old: a status update may not change
// approvals or denials (a different count is refused by validation).
func keepConditions(csr, old *certificates.CertificateSigningRequest, t certificates.RequestConditionType) {
	stored, sent := conditionsOf(old, t), conditionsOf(csr, t)
	if len(stored) != len(sent) {
		return
	}
	for i, j := range sent {
		csr.Status.Conditions[j] = old.Status.Conditions[stored[i]]
	}
}

// conditionsOf returns the indexes of csr's conditions of type t.
func conditionsOf(csr *certificates.CertificateSigningRequest, t certificates.RequestConditionType) []int {
	var out []int
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Type == t {
			out = append(out, i)
		}
	}
	return out
}

// stampConditions fills the timestamps csr's conditions lack: lastUpdateTime is now;
// lastTransitionTime is that of a stored condition of the same type and status, if
// one has it (nothing changed), else now.
func stampConditions(csr, old *certificates.CertificateSigningRequest, t metav1.Time) {
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = t
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = sameConditionSince(old, c, t)
		}
	}
}

// sameConditionSince returns when old's condition of c's type and status last
// changed, or t if old has none with a time.
func sameConditionSince(old *certificates.CertificateSigningRequest, c *certificates.CertificateSigningRequestCondition, t metav1.Time) metav1.Time {
	for _, o := range old.Status.Conditions {
		if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
			return o.LastTransitionTime
		}
	}
	return t
}
