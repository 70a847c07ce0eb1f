package kubepeer

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SampleOptions say how to run k8s.io/sample-apiserver.
type SampleOptions struct {
	Binary      string   // from Binary("sample-apiserver", release)
	Dir         string   // where its certificates and log go
	EtcdServers []string // client URLs of its etcd (it keeps its objects under /registry/wardle.example.com)
	// Kubeconfig reaches the host API server, for --kubeconfig,
	// --authentication-kubeconfig and --authorization-kubeconfig.
	Kubeconfig string
	// BindAddress is the IP it listens on, 127.0.0.1 if empty. An aggregator that
	// routes to EndpointSlices (Options.Aggregation) needs another: EndpointSlice
	// validation refuses loopback addresses (see HostIP).
	BindAddress string
	// Hosts are the names and IPs its serving certificate covers besides BindAddress:
	// for an APIService naming Service api in namespace wardle, "api.wardle.svc".
	Hosts []string
	// Args are more sample-apiserver flags, e.g. --enable-priority-and-fairness=false.
	Args []string
}

// Sample is a running sample-apiserver.
type Sample struct {
	URL  string // https://<BindAddress>:<Port>
	Port int
	CA   []byte // PEM of the CA of its serving certificate, an APIService's caBundle
	Log  string // the file its output goes to
	cmd  *exec.Cmd
	done chan error
}

// SampleDisabledAdmission are the sample-apiserver's default admission plugins that
// StartSample turns off: each watches admissionregistration.k8s.io on the host, which
// the host need not serve. NamespaceLifecycle (namespaces) and BanFlunder (its own
// fischers) stay on.
var SampleDisabledAdmission = []string{
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
}

// StartSample runs a sample-apiserver with a serving certificate of a CA made for it,
// and returns once its /readyz answers 200 (within a minute). The host of
// o.Kubeconfig must already serve kube-system/extension-apiserver-authentication.
func StartSample(ctx context.Context, o SampleOptions) (*Sample, error) {
	bind := o.BindAddress
	if bind == "" {
		bind = "127.0.0.1"
	}
	ca, err := newAuthority("sample-apiserver-ca")
	if err != nil {
		return nil, err
	}
	serving := filepath.Join(o.Dir, "sample-apiserver")
	if err := ca.issue(serving, "sample-apiserver", append([]string{bind}, o.Hosts...)); err != nil {
		return nil, err
	}
	port, err := freePort(bind)
	if err != nil {
		return nil, err
	}
	s := &Sample{URL: "https://" + net.JoinHostPort(bind, strconv.Itoa(port)), Port: port, CA: ca.pem,
		Log: filepath.Join(o.Dir, "sample-apiserver.log"), done: make(chan error, 1)}
	args := append([]string{
		"--bind-address=" + bind, "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + serving + ".crt", "--tls-private-key-file=" + serving + ".key",
		"--etcd-servers=" + strings.Join(o.EtcdServers, ","),
		"--kubeconfig=" + o.Kubeconfig,
		"--authentication-kubeconfig=" + o.Kubeconfig,
		"--authorization-kubeconfig=" + o.Kubeconfig,
		"--disable-admission-plugins=" + strings.Join(SampleDisabledAdmission, ","),
	}, o.Args...)
	log, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(o.Binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting sample-apiserver: %w", err)
	}
	go func() {
		err := s.cmd.Wait()
		_ = log.Close()
		s.done <- err
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w; the end of %s:\n%s", err, s.Log, tail(s.Log, 30))
	}
	return s, nil
}

// Stop interrupts the sample-apiserver and waits for it to exit (killing it after
// 10 seconds).
func (s *Sample) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-s.done:
		s.done <- err
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		s.done <- <-s.done
	}
}

func (s *Sample) waitReady(ctx context.Context) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.CA) {
		return errors.New("sample-apiserver: no CA certificate to trust")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}
	defer client.CloseIdleConnections()
	return waitReady(ctx, "sample-apiserver", time.Minute, s.done, func(ctx context.Context) bool {
		return readyz(ctx, client, s.URL, "")
	})
}

// tail returns the last n lines of the file at path, or why it cannot.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		_, _ = f.Seek(st.Size()-64<<10, io.SeekStart)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// HostIP returns an IPv4 address of this machine that an EndpointSlice may name: up,
// neither loopback nor link-local.
func HostIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "", errors.New("no network interface has an IPv4 address other than loopback or link-local")
}
