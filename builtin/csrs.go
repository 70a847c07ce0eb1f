package builtin

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"slices"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var csrsGR = schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}

// legacyUnknownSigner is the signer certificates.k8s.io/v1beta1 gives a request that
// names none.
const legacyUnknownSigner = "kubernetes.io/legacy-unknown"

// configureCSRs gives CertificateSigningRequests what Kubernetes' API server gives
// them: the requester's identity recorded in spec (username, uid, groups, extra),
// whatever the client wrote there; a spec that never changes once created; a request
// that must be a PEM-encoded PKCS#10 certificate request, a signer and usages. Nothing
// approves or signs them (no signer runs, and the approval subresource is not
// served): they are data.
func configureCSRs(res *registry.Resource) error {
	res.Hooks = &registry.Hooks{
		PrepareForCreate: func(ctx context.Context, obj *unstructured.Unstructured) {
			spec := child(obj.Object, "spec")
			if obj.GetAPIVersion() == "certificates.k8s.io/v1beta1" {
				setDefault(spec, "signerName", legacyUnknownSigner)
				setDefault(spec, "usages", []interface{}{"digital signature", "key encipherment"})
			}
			recordRequester(ctx, spec)
		},
		PrepareForUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) {
			obj.Object["spec"] = runtime.DeepCopyJSONValue(old.Object["spec"])
		},
		Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
			return validateCSR(obj.Object)
		},
	}
	return nil
}

// recordRequester writes who asks into a request's spec.
func recordRequester(ctx context.Context, spec map[string]interface{}) {
	for _, k := range []string{"username", "uid", "groups", "extra"} {
		delete(spec, k)
	}
	u, ok := auth.UserFrom(ctx)
	if !ok {
		return
	}
	if u.Name != "" {
		spec["username"] = u.Name
	}
	if u.UID != "" {
		spec["uid"] = u.UID
	}
	if len(u.Groups) > 0 {
		_ = unstructured.SetNestedStringSlice(spec, u.Groups, "groups")
	}
	for k, vs := range u.Extra {
		_ = unstructured.SetNestedStringSlice(spec, vs, "extra", k)
	}
}

// validateCSR checks what Kubernetes checks of a request beyond its schema.
func validateCSR(obj map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	request, _, _ := unstructured.NestedString(obj, "spec", "request")
	der, _ := base64.StdEncoding.DecodeString(request) // the schema checked the encoding
	block, _ := pem.Decode(der)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		errs = append(errs, field.Invalid(spec.Child("request"), request, "PEM block type must be CERTIFICATE REQUEST"))
	} else if _, err := x509.ParseCertificateRequest(block.Bytes); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), request, err.Error()))
	}
	if signer, _, _ := unstructured.NestedString(obj, "spec", "signerName"); signer == "" {
		errs = append(errs, field.Required(spec.Child("signerName"), ""))
	}
	usages, _, _ := unstructured.NestedStringSlice(obj, "spec", "usages")
	if len(usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	for i, u := range usages {
		if !slices.Contains(keyUsages, u) {
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, keyUsages))
		}
	}
	return errs
}

// keyUsages are the usages a request may ask for (certificates.k8s.io's KeyUsage).
var keyUsages = []string{
	"signing", "digital signature", "content commitment", "key encipherment", "key agreement",
	"data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
	"server auth", "client auth", "code signing", "email protection", "s/mime",
	"ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
	"microsoft sgc", "netscape sgc",
}
