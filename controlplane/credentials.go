package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"k8s.io/klog/v2"
)

// frontProxyCertValidity is how long the front-proxy client certificate a server
// signs for itself at start is valid.
const frontProxyCertValidity = 365 * 24 * time.Hour

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
	// proxyCert and proxyKey are the front-proxy client certificate this server
	// presents to aggregated API servers.
	proxyCert, proxyKey []byte
}

// tlsConfig serves the certificate over HTTP/2 and HTTP/1.1. Client certificates are
// asked for, and verified by the authentication.
func (cr *credentials) tlsConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cr.cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
		ClientAuth: tls.RequestClientCert}
}

// loadCredentials is the credentials phase: the listener first (its port names the
// server and its URL; logs from here on carry the server ID, as the returned context
// does), encryption at rest (KMS plugins are told the server ID), then the cluster CA
// and admin token shared through etcd, the serving certificate and the authenticator.
func loadCredentials(ctx context.Context, g *lifecycle.Group, o *Options, st stored) (context.Context, *credentials, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort)))
	if err != nil {
		return ctx, nil, fmt.Errorf("listening on %s:%d: %w", o.BindAddress, o.SecurePort, err)
	}
	if err := g.Start(ctx, closer("listener", func() { _ = ln.Close() })); err != nil {
		return ctx, nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	host := o.BindAddress
	if ip := net.ParseIP(host); ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	hostname, _ := os.Hostname()
	cr := &credentials{listener: ln, url: (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port))}).String(),
		serverID: o.ServerID, loopbackToken: auth.NewLoopbackToken()}
	if cr.serverID == "" {
		cr.serverID = identity.DefaultServerID(hostname, port)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("server", cr.serverID))
	if cr.encryption, err = o.Encryption.Load(ctx, cr.serverID); err != nil {
		return ctx, nil, err
	}
	st.raw.WithTransformers(cr.encryption.KeyTransformer)
	if cr.cluster, err = auth.EnsureClusterCredentials(ctx, st.client, o.Etcd.Prefix+"/concord/credentials", o.certDir()); err != nil {
		return ctx, nil, fmt.Errorf("cluster credentials: %w", err)
	}
	if cr.cert, err = servingCertificate(o, cr.cluster, hostname); err != nil {
		return ctx, nil, err
	}
	return ctx, cr, cr.authenticate(o)
}

// servingCertificate loads --tls-cert-file, or the certificate the cluster CA signs
// for this host (made the first time).
func servingCertificate(o *Options, creds *auth.ClusterCredentials, hostname string) (tls.Certificate, error) {
	certFile, keyFile := o.TLSCertFile, o.TLSKeyFile
	if certFile == "" {
		hosts := []string{o.BindAddress, "127.0.0.1", "::1", "localhost", hostname}
		var err error
		if certFile, keyFile, err = auth.EnsureServingCert(o.certDir(), creds, hosts); err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate: %w", err)
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading the serving certificate: %w", err)
	}
	return cert, nil
}

// authenticate builds the authenticators of the cluster credentials and the flags:
// static tokens (the admin's, the loopback's, --token-auth-file's), client
// certificates of the cluster CA, an aggregator's forwarded requests; and the
// front-proxy client certificate this server presents as an aggregator.
func (cr *credentials) authenticate(o *Options) error {
	fileTokens, err := o.Auth.TokenFile()
	if err != nil {
		return err
	}
	static, err := auth.NewTokenAuthenticator(fileTokens, cr.cluster.AdminToken, cr.loopbackToken)
	if err != nil {
		return err
	}
	certs, err := auth.NewCertificateAuthenticator(cr.cluster.CACert)
	if err != nil {
		return err
	}
	if cr.proxyCert, cr.proxyKey, err = auth.NewFrontProxyClientCertificate(cr.cluster, frontProxyCertValidity); err != nil {
		return err
	}
	requestHeader, err := o.Auth.RequestHeaderAuthenticator()
	if err != nil {
		return err
	}
	cr.authn = &auth.Authentication{RequestHeader: requestHeader, Certificates: certs, Static: static, APIAudiences: o.ServiceAccounts.Audiences()}
	return nil
}
