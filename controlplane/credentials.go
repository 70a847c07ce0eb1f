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
	"github.com/concordproject/concord/identity"
	"k8s.io/klog/v2"
)

// serving is what the credentials phase hands the serving phase.
// frontProxyCertValidity is how long the front-proxy client certificate a server
// signs for itself at start is valid.
const frontProxyCertValidity = 365 * 24 * time.Hour

type serving struct {
	listener net.Listener
	cert     tls.Certificate
	// authn authenticates requests: the static tokens from here on, service account
	// tokens once the resources phase adds their authenticator.
	authn *auth.Authentication
	// serviceAccountKey signs and verifies service account tokens.
	serviceAccountKey []byte
	// clientCA is the cluster CA, frontProxyCA the request-header CA, and
	// proxyCert and proxyKey the front-proxy client certificate this server presents
	// to aggregated API servers.
	clientCA, frontProxyCA, proxyCert, proxyKey []byte
}

// tlsConfig serves the certificate over HTTP/2 and HTTP/1.1. Client certificates are
// asked for, and verified by the authentication.
func (sv *serving) tlsConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{sv.cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
		ClientAuth: tls.RequestClientCert}
}

// loadCredentials is the credentials phase: the listener first (its port names the
// server and its URL; logs from here on carry the server ID), then the cluster CA and
// admin token shared through etcd, the serving certificate and the authenticator.
func (i *Instance) loadCredentials(ctx context.Context) (context.Context, error) {
	o := i.opts
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort)))
	if err != nil {
		return ctx, fmt.Errorf("listening on %s:%d: %w", o.BindAddress, o.SecurePort, err)
	}
	if err := i.start(ctx, closer("listener", func() { _ = ln.Close() })); err != nil {
		return ctx, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	host := o.BindAddress
	if ip := net.ParseIP(host); ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	i.URL = (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port))}).String()
	hostname, _ := os.Hostname()
	if i.ServerID = o.ServerID; i.ServerID == "" {
		i.ServerID = identity.DefaultServerID(hostname, port)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("server", i.ServerID))
	// KMS plugins are told the server ID.
	if i.Encryption, err = o.Encryption.Load(ctx, i.ServerID); err != nil {
		return ctx, err
	}
	i.raw.WithTransformers(i.Encryption.KeyTransformer)

	creds, err := auth.EnsureClusterCredentials(ctx, i.client, o.Etcd.Prefix+"/concord/credentials", o.certDir())
	if err != nil {
		return ctx, fmt.Errorf("cluster credentials: %w", err)
	}
	i.CACert, i.AdminToken = creds.CACert, creds.AdminToken
	certFile, keyFile := o.TLSCertFile, o.TLSKeyFile
	if certFile == "" {
		hosts := []string{o.BindAddress, "127.0.0.1", "::1", "localhost", hostname}
		if certFile, keyFile, err = auth.EnsureServingCert(o.certDir(), creds, hosts); err != nil {
			return ctx, fmt.Errorf("serving certificate: %w", err)
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return ctx, fmt.Errorf("loading the serving certificate: %w", err)
	}
	fileTokens, err := o.Auth.TokenFile()
	if err != nil {
		return ctx, err
	}
	i.loopbackToken = auth.NewLoopbackToken()
	authn, err := auth.NewTokenAuthenticator(fileTokens, creds.AdminToken, i.loopbackToken)
	if err != nil {
		return ctx, err
	}
	certs, err := auth.NewCertificateAuthenticator(creds.CACert)
	if err != nil {
		return ctx, err
	}
	proxyCert, proxyKey, err := auth.NewFrontProxyClientCertificate(creds, frontProxyCertValidity)
	if err != nil {
		return ctx, err
	}
	requestHeader, err := o.Auth.RequestHeaderAuthenticator()
	if err != nil {
		return ctx, err
	}
	i.parts.serving = serving{listener: ln, cert: cert, serviceAccountKey: creds.ServiceAccountKey,
		authn:    &auth.Authentication{RequestHeader: requestHeader, Certificates: certs, Static: authn, APIAudiences: o.ServiceAccounts.Audiences()},
		clientCA: creds.CACert, frontProxyCA: creds.FrontProxyCACert, proxyCert: proxyCert, proxyKey: proxyKey}
	return ctx, nil
}
