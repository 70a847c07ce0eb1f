package kubesemantics

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
)

// The resources kube's certificate admission plugins act on.
var (
	csrs          = schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	clusterBundle = schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}
)

// CertificateAdmission returns kube-apiserver's validating admission plugins of
// certificates, in kube's order, each with authz for its checks:
//
//   - CertificateApproval: approving or denying a CertificateSigningRequest (its
//     approval subresource) takes the "approve" verb on its signer
//     (certificates.k8s.io signers, named for the signerName or its domain/*);
//   - CertificateSigning: writing its certificate (status) takes "sign";
//   - ClusterTrustBundleAttest: a ClusterTrustBundle of a signer takes "attest";
//   - CertificateSubjectRestriction: a request to the kube-apiserver-client signer
//     may not ask for the system:masters group.
//
// The plugins are kube's own; they read kube's internal types, which the returned
// plugins convert the request's objects to, under this server's gates.
func (s *Semantics) CertificateAdmission(authz authorizer.Authorizer) ([]admission.ValidationInterface, error) {
	ap, sp, cp, rp := approval.NewPlugin(), signing.NewPlugin(), ctbattest.NewPlugin(), subjectrestriction.NewPlugin()
	ap.SetUnconditionalAuthorizer(authz)
	sp.SetUnconditionalAuthorizer(authz)
	cp.SetUnconditionalAuthorizer(authz)
	cp.InspectFeatureGates(s.gates.gate)
	out := []admission.ValidationInterface{
		internalAdmission{s, ap, csrs}, internalAdmission{s, sp, csrs},
		internalAdmission{s, cp, clusterBundle}, internalAdmission{s, rp, csrs},
	}
	for _, p := range []admission.InitializationValidator{ap, sp, cp, rp} {
		if err := p.ValidateInitialization(); err != nil {
			return nil, fmt.Errorf("kube's certificate admission: %w", err)
		}
	}
	return out, nil
}

// internalAdmission runs one of kube's validating admission plugins, which reads
// kube's internal types, on the writes of one resource.
type internalAdmission struct {
	sem      *Semantics
	plugin   admission.ValidationInterface
	resource schema.GroupResource
}

func (p internalAdmission) Handles(op admission.Operation) bool { return p.plugin.Handles(op) }

// Validate gives the plugin a's objects as kube's internal types. Writes of other
// resources than the plugin's pass untouched, and unconverted.
func (p internalAdmission) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != p.resource {
		return nil
	}
	obj, err := toInternal(a.GetObject())
	if err != nil {
		return err
	}
	old, err := toInternal(a.GetOldObject())
	if err != nil {
		return err
	}
	attrs := admission.NewAttributesRecord(obj, old, a.GetKind(), a.GetNamespace(), a.GetName(), a.GetResource(),
		a.GetSubresource(), a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo())
	p.sem.gates.Do(func() { err = p.plugin.Validate(ctx, attrs, o) })
	return err
}

// toInternal returns obj, an object of a request (unstructured, or nil), as kube's
// internal type of its kind.
func toInternal(obj runtime.Object) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return obj, nil
	}
	gvk := u.GroupVersionKind()
	ext, err := typed(gvk, u.Object)
	if err != nil {
		return nil, err
	}
	internal, err := legacyscheme.Scheme.ConvertToVersion(ext, runtime.InternalGroupVersioner)
	if err != nil {
		return nil, fmt.Errorf("converting %s to kube's internal version: %w", gvk, err)
	}
	return internal, nil
}
