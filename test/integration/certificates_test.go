package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// certificateRequest returns a PEM certificate request for subject.
func certificateRequest(t *testing.T, subject pkix.Name) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// selfSigned returns a PEM self-signed certificate.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "demo"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func newCSR(t *testing.T, name, signer string, subject pkix.Name) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: certificateRequest(t, subject), SignerName: signer,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

// CertificateSigningRequests as kube-apiserver serves them: the approval subresource
// writes the Approved condition and nothing else, and kube's admission plugins guard
// it and the rest. A user may approve only with the approve verb on the request's
// signer (certificates.k8s.io signers, by name or domain/*), may write a certificate
// only with sign, and nobody may ask kube-apiserver-client for system:masters.
func TestCertificateSigningRequestApproval(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	const signer = "example.com/signer"
	csr, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR(t, "demo", signer, pkix.Name{CommonName: "demo"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Alice may write approvals and statuses, but holds no verb on any signer yet.
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Verbs: []string{"get", "update"},
			Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(t, admin, "alice", "csr-writer")
	alice := kubernetes.NewForConfigOrDie(asUser(c.Servers[0].Config(), "alice"))
	waitFor(t, "alice may read requests", func() (bool, error) {
		_, err := alice.CertificatesV1().CertificateSigningRequests().Get(ctx, "demo", metav1.GetOptions{})
		return err == nil, nil
	})

	approved := csr.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test"}}
	approved.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth} // not the approval's to change
	_, err = alice.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "demo", approved, metav1.UpdateOptions{})
	wantForbidden(t, "approval without the approve verb", err, `user not permitted to approve requests with signerName "example.com/signer"`)

	signed := csr.DeepCopy()
	signed.Status.Certificate = selfSigned(t)
	_, err = alice.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, signed, metav1.UpdateOptions{})
	wantForbidden(t, "status without the sign verb", err, `user not permitted to sign requests with signerName "example.com/signer"`)

	// approve on the signer's domain is enough.
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "example-approver"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Verbs: []string{"approve"},
			Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(t, admin, "alice", "example-approver")
	waitFor(t, "alice may approve", func() (bool, error) {
		_, err := alice.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "demo", approved, metav1.UpdateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved || got.Status.Conditions[0].LastUpdateTime.IsZero() {
		t.Errorf("conditions after the approval: %+v, want one Approved, stamped", got.Status.Conditions)
	}
	if len(got.Spec.Usages) != 2 || got.Spec.Username != csr.Spec.Username {
		t.Errorf("the approval changed the spec: usages %v, username %q (was %q)", got.Spec.Usages, got.Spec.Username, csr.Spec.Username)
	}

	// The main resource does not write conditions.
	denied := got.DeepCopy()
	denied.Status.Conditions = append(denied.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "Test"})
	after, err := admin.CertificatesV1().CertificateSigningRequests().Update(ctx, denied, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Status.Conditions) != 1 {
		t.Errorf("an update of the main resource changed the conditions: %+v", after.Status.Conditions)
	}

	// CertificateSubjectRestriction, for everyone.
	masters := newCSR(t, "masters", certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "eve", Organization: []string{"system:masters"}})
	_, err = admin.CertificatesV1().CertificateSigningRequests().Create(ctx, masters, metav1.CreateOptions{})
	wantForbidden(t, "a kube-apiserver-client request for system:masters", err, "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed")
}

// bind binds user to cluster role.
func bind(t *testing.T, cs kubernetes.Interface, user, role string) {
	t.Helper()
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantForbidden fails the test unless err is a 403 whose message holds msg.
func wantForbidden(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v, want 403 Forbidden saying %q", what, err, msg)
	}
}
