package kubesemantics

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/certificates"
	"k8s.io/utils/ptr"
)

// csrPEM is a PEM-encoded PKCS#10 certificate request.
func csrPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestCertificateSigningRequests(t *testing.T) {
	r := cpResource(t, "certificates.k8s.io", "certificatesigningrequests")
	ctx := auth.WithUser(t.Context(), auth.User{Name: "carol", UID: "c-1", Groups: []string{"dev"}, Extra: map[string][]string{"scope": {"a"}}})
	request := csrPEM(t)
	csr := func(usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "carol", ResourceVersion: "1"},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: "example.com/signer", Usages: usages, Username: "mallory"}}
	}
	created, errs := cpCreate(ctx, t, r, "v1", csr(certificatesv1.UsageClientAuth))
	cpWant(t, "a valid CertificateSigningRequest", errs)
	var got certificatesv1.CertificateSigningRequest
	cpInto(t, created, &got)
	if got.Spec.Username != "carol" || got.Spec.UID != "c-1" || len(got.Spec.Groups) != 1 || got.Spec.Extra["scope"][0] != "a" {
		t.Errorf("requester %+v, want carol's", got.Spec)
	}
	beta, errs := cpCreate(ctx, t, r, "v1beta1", &certificatesv1beta1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec: certificatesv1beta1.CertificateSigningRequestSpec{Request: request}})
	// v1beta1 defaults the legacy signer, which kube no longer accepts for new requests.
	cpWant(t, "v1beta1 without signer or usages", errs, "spec.signerName: Invalid value")
	var legacy certificatesv1beta1.CertificateSigningRequest
	cpInto(t, beta, &legacy)
	if ptr.Deref(legacy.Spec.SignerName, "") != certificatesv1beta1.LegacyUnknownSignerName || len(legacy.Spec.Usages) != 2 {
		t.Errorf("v1beta1 defaults: %+v", legacy.Spec)
	}
	bad := csr("teleport")
	bad.Spec.Request, bad.Spec.SignerName = []byte("not PEM"), ""
	_, errs = cpCreate(ctx, t, r, "v1", bad)
	cpWant(t, "no PEM, signer, known usage", errs, "spec.request: Invalid value", "spec.signerName: Required value",
		"spec.usages[0]: Unsupported value")

	changed := csr(certificatesv1.UsageServerAuth)
	changed.Status.Certificate = []byte("x")
	updated, errs := cpUpdate(ctx, t, r, "v1", "", changed, created)
	cpWant(t, "an update of spec and status", errs)
	cpInto(t, updated, &got)
	if got.Spec.Usages[0] != certificatesv1.UsageClientAuth || len(got.Status.Certificate) != 0 {
		t.Errorf("an update changed spec or status: %+v", got)
	}
	approved := csr(certificatesv1.UsageClientAuth)
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	_, errs = cpUpdate(ctx, t, r, "v1", "status", approved, created)
	cpWant(t, "an approval through the status", errs, "status.conditions: Forbidden")
}

// The approval subresource writes approval conditions, stamped, and nothing else.
func TestCertificateSigningRequestApproval(t *testing.T) {
	r := cpResource(t, "certificates.k8s.io", "certificatesigningrequests")
	ctx := t.Context()
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(t), SignerName: "example.com/s", Usages: []certificatesv1.KeyUsage{"client auth"}}}
	created, errs := cpCreate(ctx, t, r, "v1", csr)
	cpWant(t, "a valid request", errs)
	approve := csr.DeepCopy()
	approve.Status.Certificate = []byte("not through the approval")
	approve.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "OK"}}
	approved, errs := cpUpdate(ctx, t, r, "v1", "approval", approve, created)
	cpWant(t, "an approval", errs)
	var got certificatesv1.CertificateSigningRequest
	cpInto(t, approved, &got)
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].LastUpdateTime.IsZero() || got.Status.Conditions[0].LastTransitionTime.IsZero() ||
		len(got.Status.Certificate) != 0 {
		t.Errorf("approved: %+v, want one stamped condition and no certificate", got.Status)
	}
	both := approve.DeepCopy()
	both.Status.Conditions = append(both.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue})
	_, errs = cpUpdate(ctx, t, r, "v1", "approval", both, created)
	cpWant(t, "approved and denied", errs, "status.conditions: Invalid value")
}

// A status update keeps the stored approval and denial conditions, and timestamps
// the conditions sent without one, from the stored ones where nothing changed.
func TestCertificateSigningRequestConditions(t *testing.T) {
	at := func(s int64) metav1.Time { return metav1.NewTime(time.Unix(s, 0)) }
	cond := func(typ certificates.RequestConditionType, reason string, transition metav1.Time) certificates.CertificateSigningRequestCondition {
		return certificates.CertificateSigningRequestCondition{Type: typ, Status: "True", Reason: reason, LastTransitionTime: transition}
	}
	old := &certificates.CertificateSigningRequest{Status: certificates.CertificateSigningRequestStatus{Conditions: []certificates.CertificateSigningRequestCondition{
		cond(certificates.CertificateApproved, "stored", at(10)), cond(certificates.CertificateFailed, "", at(20)),
	}}}
	csr := &certificates.CertificateSigningRequest{Status: certificates.CertificateSigningRequestStatus{Conditions: []certificates.CertificateSigningRequestCondition{
		cond(certificates.CertificateFailed, "again", metav1.Time{}), cond(certificates.CertificateApproved, "rewritten", metav1.Time{}),
	}}}
	keepConditions(csr, old, certificates.CertificateApproved)
	keepConditions(csr, old, certificates.CertificateDenied)
	stampConditions(csr, old, at(30))
	failed, approved := csr.Status.Conditions[0], csr.Status.Conditions[1]
	if approved.Reason != "stored" || !approved.LastTransitionTime.Equal(ptr.To(at(10))) {
		t.Errorf("approval %+v, want the stored one", approved)
	}
	if !failed.LastTransitionTime.Equal(ptr.To(at(20))) || !failed.LastUpdateTime.Equal(ptr.To(at(30))) {
		t.Errorf("failure %+v, want the stored transition (20) and now (30) as update", failed)
	}
	fewer := &certificates.CertificateSigningRequest{}
	keepConditions(fewer, old, certificates.CertificateApproved)
	if len(fewer.Status.Conditions) != 0 {
		t.Errorf("a status without the approval got %+v", fewer.Status.Conditions)
	}
}

func TestClusterTrustBundles(t *testing.T) {
	r := cpHandResource(t, "certificates.k8s.io", "clustertrustbundles", "ClusterTrustBundle", false, false, "v1beta1", "v1alpha1")
	ctx := t.Context()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: bigOne(), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	bundle := func(name, signer, pem string) *certificatesv1beta1.ClusterTrustBundle {
		return &certificatesv1beta1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
			Spec: certificatesv1beta1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pem}}
	}
	created, errs := cpCreate(ctx, t, r, "v1beta1", bundle("example.com:signer:a", "example.com/signer", ca))
	cpWant(t, "a valid ClusterTrustBundle", errs)
	_, errs = cpCreate(ctx, t, r, "v1beta1", bundle("b", "", "no PEM"))
	cpWant(t, "no certificate", errs, "spec.trustBundle: Invalid value")
	_, errs = cpUpdate(ctx, t, r, "v1beta1", "", bundle("example.com:signer:a", "example.com/other", ca), created)
	cpWant(t, "a changed signer", errs, "spec.signerName: Invalid value", "metadata.name: Invalid value")
}

func TestPodCertificateRequests(t *testing.T) {
	r := cpHandResource(t, "certificates.k8s.io", "podcertificaterequests", "PodCertificateRequest", true, true, "v1beta1")
	ctx := t.Context()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, priv)
	if err != nil {
		t.Fatal(err)
	}
	req := func(stub []byte) *certificatesv1beta1.PodCertificateRequest {
		return &certificatesv1beta1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "req", Namespace: "ns", ResourceVersion: "1"},
			Spec: certificatesv1beta1.PodCertificateRequestSpec{SignerName: "example.com/signer", PodName: "p", PodUID: "pod-1",
				ServiceAccountName: "sa", ServiceAccountUID: "sa-1", NodeName: "n", NodeUID: "n-1", MaxExpirationSeconds: ptr.To[int32](86400),
				StubPKCS10Request: stub},
			Status: certificatesv1beta1.PodCertificateRequestStatus{CertificateChain: "sent"}}
	}
	created, errs := cpCreate(ctx, t, r, "v1beta1", req(stub))
	cpWant(t, "a valid PodCertificateRequest", errs)
	var got certificatesv1beta1.PodCertificateRequest
	cpInto(t, created, &got)
	if got.Status.CertificateChain != "" {
		t.Errorf("created with the status sent: %+v", got.Status)
	}
	_, errs = cpCreate(ctx, t, r, "v1beta1", req([]byte("not DER")))
	cpWant(t, "a stub request that is none", errs, "spec.stubPKCS10Request: Invalid value")
	_, errs = cpUpdate(ctx, t, r, "v1beta1", "status", req(stub), created)
	cpWant(t, "a status with a chain but no condition", errs, "status: Invalid value")
}

func bigOne() *big.Int { return big.NewInt(1) }
