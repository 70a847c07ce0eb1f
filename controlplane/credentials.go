package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"k8s.io/klog/v2"
)

// credentials is what the credentials phase hands on: where the server listens and
// who it is, how it seals stored values, and who it trusts and is.
type credentials struct {
	listener net.Listener
	url      string
	serverID string
	// encryption seals and opens stored values (nil: plaintext).
	encryption *encryption.Config
	// cluster holds the cluster CA, the front-proxy CA, the admin token and the
	// service account signing key, shared through etcd.
	cluster *auth.ClusterCredentials
	cert    tls.Certificate
	// authn authenticates requests: the static tokens from here on, service account
	// tokens once the resources phase adds their authenticator.
	authn         *auth.Authentication
	loopbackToken string
}

// loadCredentials is the credentials phase: the listener first (its port names the
// server and its URL; logs from here on carry the server ID, as the returned context
// does), encryption at rest (KMS plugins are told the server ID), then the cluster CA
// and admin token shared through etcd, the serving certificate and the authenticator.
func loadCredentials(ctx context.Context, g *lifecycle.Group, o *Options, st stored) (context.Context, *credentials, error) {
	ln, serverURL, err := o.Serving.Listen()
	if err != nil {
		return ctx, nil, err
	}
	if err := g.Start(ctx, lifecycle.Closer("listener", func() { _ = ln.Close() })); err != nil {
		return ctx, nil, err
	}
	hostname, _ := os.Hostname()
	cr := &credentials{listener: ln, url: serverURL, serverID: o.ServerID, loopbackToken: auth.NewLoopbackToken()}
	if cr.serverID == "" {
		cr.serverID = identity.DefaultServerID(hostname, ln.Addr().(*net.TCPAddr).Port)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("server", cr.serverID))
	if cr.encryption, err = o.Encryption.Load(ctx, cr.serverID); err != nil {
		return ctx, nil, err
	}
	st.raw.WithTransformers(cr.encryption.KeyTransformer)
	if cr.cluster, err = auth.EnsureClusterCredentials(ctx, st.client, o.Etcd.Prefix+"/concord/credentials", o.certDir()); err != nil {
		return ctx, nil, fmt.Errorf("cluster credentials: %w", err)
	}
	if cr.cert, err = o.Serving.Certificate(o.certDir(), cr.cluster, hostname); err != nil {
		return ctx, nil, err
	}
	cr.authn, err = o.Auth.Authentication(cr.cluster, cr.loopbackToken, o.ServiceAccounts.Audiences())
	return ctx, cr, err
}
