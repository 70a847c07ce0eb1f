package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
)

// File names EnsureClusterCredentials reads and writes in a certificate directory.
const (
	// CACertFile is the PEM certificate of the cluster CA.
	CACertFile = "ca.crt"
	// CAKeyFile is the PEM private key of the cluster CA, written with mode 0600.
	CAKeyFile = "ca.key"
)

var (
	// ErrInvalidCredentials means cluster credentials (in etcd or in a certificate
	// directory) cannot be used: unparsable PEM, a key that does not match its
	// certificate, a certificate that is not a CA, an empty admin token, or half a pair.
	ErrInvalidCredentials = errors.New("invalid cluster credentials")
	// ErrCAMismatch means a certificate directory holds a CA other than the one the
	// cluster already uses. Nothing is overwritten: the operator must remove the files or
	// give every server the same CA.
	ErrCAMismatch = errors.New("certificate directory holds a different CA than the cluster")
)

// ClusterCredentials are the secrets every server of one cluster shares, so that one
// kubeconfig reaches all of them.
type ClusterCredentials struct {
	// CACert is the PEM-encoded CA certificate clients trust and serving certificates
	// chain to.
	CACert []byte
	// CAKey is the PEM-encoded private key of CACert.
	CAKey []byte
	// AdminToken is the bearer token of the cluster administrator (AdminUser, in
	// GroupMasters).
	AdminToken string
	// ServiceAccountKey is the PEM-encoded private key every server signs service
	// account tokens with (and verifies them by).
	ServiceAccountKey []byte
	// FrontProxyCACert and FrontProxyCAKey are the request-header CA, apart from the
	// cluster CA: it signs the client certificate each server presents when it proxies
	// a request to an aggregated API server, which trusts the X-Remote-* headers of a
	// request only under that certificate.
	FrontProxyCACert, FrontProxyCAKey []byte
}

// storedCredentials is the JSON record in etcd. PEM blocks are kept as strings so the
// record stays readable with etcdctl.
type storedCredentials struct {
	CACert            string `json:"caCert"`
	CAKey             string `json:"caKey"`
	AdminToken        string `json:"adminToken"`
	ServiceAccountKey string `json:"serviceAccountKey,omitempty"`
	FrontProxyCACert  string `json:"frontProxyCACert,omitempty"`
	FrontProxyCAKey   string `json:"frontProxyCAKey,omitempty"`
}

// EnsureClusterCredentials returns the credentials of the cluster whose servers share the
// etcd behind client, creating them if no server has yet.
//
// If key exists in etcd, its value is used. Otherwise the CA comes from ca.crt and ca.key
// in certDir when both exist, or is generated (a self-signed ECDSA P-256 CA valid ten
// years); a random admin token is generated; and the result is stored under key only if
// key is still absent. A server that loses that race uses the winner's credentials, so all
// callers of one etcd get the same credentials.
//
// Once the credentials are settled, ca.crt (0644) and ca.key (0600) are written into
// certDir when missing. If certDir already holds a different CA, the error wraps
// ErrCAMismatch and nothing is written. An empty certDir reads and writes no files.
// Unusable credentials wrap ErrInvalidCredentials.
func EnsureClusterCredentials(ctx context.Context, client *clientv3.Client, key string, certDir string) (*ClusterCredentials, error) {
	logger := klog.FromContext(ctx)
	if key == "" {
		return nil, errors.New("cluster credentials: empty etcd key")
	}

	creds, rev, err := getCredentials(ctx, client, key)
	if err != nil {
		return nil, err
	}
	if creds != nil {
		logger.V(2).Info("Using cluster credentials from etcd", "key", key)
		if creds, err = completeCredentials(ctx, client, key, creds, rev); err != nil {
			return nil, err
		}
	} else {
		candidate, source, err := localCredentials(certDir)
		if err != nil {
			return nil, err
		}
		creds, err = createCredentials(ctx, client, key, candidate)
		if err != nil {
			return nil, err
		}
		if creds == candidate {
			logger.Info("Created cluster credentials", "key", key, "caSource", source)
		} else {
			logger.Info("Another server created the cluster credentials first; using them", "key", key)
		}
	}

	if err := syncCertDir(certDir, creds); err != nil {
		return nil, err
	}
	return creds, nil
}

// getCredentials reads key and the revision it was last written at; it returns nil
// and no error if key does not exist.
func getCredentials(ctx context.Context, client *clientv3.Client, key string) (*ClusterCredentials, int64, error) {
	resp, err := client.Get(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("reading cluster credentials at %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	creds, err := decodeCredentials(key, resp.Kvs[0].Value)
	return creds, resp.Kvs[0].ModRevision, err
}

// completeCredentials adds what credentials stored (at revision rev) by an older
// release lack (the service account signing key, the front-proxy CA), unless another
// server does first.
func completeCredentials(ctx context.Context, client *clientv3.Client, key string, creds *ClusterCredentials, rev int64) (*ClusterCredentials, error) {
	if len(creds.ServiceAccountKey) > 0 && len(creds.FrontProxyCACert) > 0 {
		return creds, nil
	}
	withKey := *creds
	if err := withKey.generateMissing(); err != nil {
		return nil, err
	}
	value, err := encodeCredentials(&withKey)
	if err != nil {
		return nil, err
	}
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("completing the cluster credentials at %q: %w", key, err)
	}
	if resp.Succeeded {
		klog.FromContext(ctx).Info("Completed the cluster credentials of an older release", "key", key)
		return &withKey, nil
	}
	again, rev, err := getCredentials(ctx, client, key)
	if err != nil || again == nil {
		return nil, fmt.Errorf("re-reading cluster credentials at %q: %w", key, err)
	}
	return completeCredentials(ctx, client, key, again, rev)
}

// generateMissing generates the service account key and the front-proxy CA, if c
// lacks them.
func (c *ClusterCredentials) generateMissing() error {
	var err error
	if len(c.ServiceAccountKey) == 0 {
		if c.ServiceAccountKey, err = keyutil.MakeEllipticPrivateKeyPEM(); err != nil {
			return fmt.Errorf("generating the service account key: %w", err)
		}
	}
	if len(c.FrontProxyCACert) == 0 {
		if c.FrontProxyCACert, c.FrontProxyCAKey, err = generateCA("concord-front-proxy-ca"); err != nil {
			return fmt.Errorf("generating the front-proxy CA: %w", err)
		}
	}
	return nil
}

func encodeCredentials(c *ClusterCredentials) ([]byte, error) {
	value, err := json.Marshal(storedCredentials{
		CACert: string(c.CACert), CAKey: string(c.CAKey), AdminToken: c.AdminToken, ServiceAccountKey: string(c.ServiceAccountKey),
		FrontProxyCACert: string(c.FrontProxyCACert), FrontProxyCAKey: string(c.FrontProxyCAKey),
	})
	if err != nil {
		return nil, fmt.Errorf("encoding cluster credentials: %w", err)
	}
	return value, nil
}

// createCredentials stores candidate under key if key is absent, and returns candidate
// itself on success or the credentials some other server stored first.
func createCredentials(ctx context.Context, client *clientv3.Client, key string, candidate *ClusterCredentials) (*ClusterCredentials, error) {
	value, err := encodeCredentials(candidate)
	if err != nil {
		return nil, err
	}
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("storing cluster credentials at %q: %w", key, err)
	}
	if resp.Succeeded {
		return candidate, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		// The compare and the read run in one transaction, so a failed compare means the
		// read found the key; an empty read means the store itself misbehaves.
		return nil, fmt.Errorf("storing cluster credentials at %q: key exists but could not be read", key)
	}
	return decodeCredentials(key, kvs[0].Value)
}

func decodeCredentials(key string, value []byte) (*ClusterCredentials, error) {
	var stored storedCredentials
	if err := json.Unmarshal(value, &stored); err != nil {
		return nil, fmt.Errorf("%w: etcd key %q: %w", ErrInvalidCredentials, key, err)
	}
	creds := &ClusterCredentials{
		CACert:            []byte(stored.CACert),
		CAKey:             []byte(stored.CAKey),
		AdminToken:        stored.AdminToken,
		ServiceAccountKey: []byte(stored.ServiceAccountKey),
		FrontProxyCACert:  []byte(stored.FrontProxyCACert),
		FrontProxyCAKey:   []byte(stored.FrontProxyCAKey),
	}
	if creds.AdminToken == "" {
		return nil, fmt.Errorf("%w: etcd key %q: empty admin token", ErrInvalidCredentials, key)
	}
	if _, _, err := creds.parseCA(); err != nil {
		return nil, fmt.Errorf("etcd key %q: %w", key, err)
	}
	return creds, nil
}

// localCredentials builds the credentials this server proposes when etcd has none: the CA
// of certDir if it has one, or a new CA; and always a new admin token. source says which.
func localCredentials(certDir string) (creds *ClusterCredentials, source string, err error) {
	creds = &ClusterCredentials{AdminToken: newToken()}
	if err := creds.generateMissing(); err != nil {
		return nil, "", err
	}
	if certDir != "" {
		certPEM, keyPEM, err := readCertDirCA(certDir)
		if err != nil {
			return nil, "", err
		}
		if certPEM != nil {
			creds.CACert, creds.CAKey = certPEM, keyPEM
			if _, _, err := creds.parseCA(); err != nil {
				return nil, "", fmt.Errorf("%s: %w", certDir, err)
			}
			return creds, "certDir", nil
		}
	}
	creds.CACert, creds.CAKey, err = generateCA("concord-ca")
	if err != nil {
		return nil, "", err
	}
	return creds, "generated", nil
}

// readCertDirCA returns ca.crt and ca.key of certDir, both nil if neither exists.
func readCertDirCA(certDir string) (certPEM, keyPEM []byte, err error) {
	certPath, keyPath := filepath.Join(certDir, CACertFile), filepath.Join(certDir, CAKeyFile)
	if certPEM, err = readOptionalFile(certPath); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = readOptionalFile(keyPath); err != nil {
		return nil, nil, err
	}
	switch {
	case certPEM == nil && keyPEM == nil:
		return nil, nil, nil
	case keyPEM == nil:
		return nil, nil, fmt.Errorf("%w: %s exists but %s does not", ErrInvalidCredentials, certPath, keyPath)
	case certPEM == nil:
		return nil, nil, fmt.Errorf("%w: %s exists but %s does not", ErrInvalidCredentials, keyPath, certPath)
	}
	return certPEM, keyPEM, nil
}

func generateCA(name string) (certPEM, keyPEM []byte, err error) {
	keyPEM, err = keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA key: %w", err)
	}
	key, err := parseSigner(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA certificate: %w", err)
	}
	certPEM, err = cert.EncodeCertificates(ca)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding CA certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}

// syncCertDir writes the cluster CA into certDir where it is missing, and refuses to
// replace a different CA found there.
func syncCertDir(certDir string, creds *ClusterCredentials) error {
	if certDir == "" {
		return nil
	}
	certPEM, keyPEM, err := readCertDirCA(certDir)
	if err != nil {
		return err
	}
	if certPEM == nil {
		if err := writeFileAtomic(filepath.Join(certDir, CAKeyFile), creds.CAKey, 0o600); err != nil {
			return err
		}
		return writeFileAtomic(filepath.Join(certDir, CACertFile), creds.CACert, 0o644)
	}
	local := &ClusterCredentials{CACert: certPEM, CAKey: keyPEM}
	localCA, _, err := local.parseCA()
	if err != nil {
		return fmt.Errorf("%s: %w", certDir, err)
	}
	clusterCA, _, err := creds.parseCA()
	if err != nil {
		return err
	}
	if !bytes.Equal(localCA.Raw, clusterCA.Raw) {
		return fmt.Errorf("%w: %s has %q (serial %s), the cluster uses %q (serial %s)",
			ErrCAMismatch, filepath.Join(certDir, CACertFile),
			localCA.Subject.CommonName, localCA.SerialNumber, clusterCA.Subject.CommonName, clusterCA.SerialNumber)
	}
	return nil
}

// parseCA checks that CACert is a CA certificate whose key is CAKey, and returns both.
func (c *ClusterCredentials) parseCA() (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.X509KeyPair(c.CACert, c.CAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: CA certificate and key: %w", ErrInvalidCredentials, err)
	}
	ca := pair.Leaf
	if ca == nil {
		if ca, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, nil, fmt.Errorf("%w: CA certificate: %w", ErrInvalidCredentials, err)
		}
	}
	if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, nil, fmt.Errorf("%w: certificate %q is not a CA that may sign certificates", ErrInvalidCredentials, ca.Subject.CommonName)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%w: CA key of type %T cannot sign", ErrInvalidCredentials, pair.PrivateKey)
	}
	return ca, signer, nil
}

func parseSigner(keyPEM []byte) (crypto.Signer, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	return signer, nil
}

// newToken returns 32 random bytes, base64url-encoded without padding (43 characters,
// safe in HTTP headers, CSV files and YAML without quoting).
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error; it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b)
}
