package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCommandRejectsInvalidFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in the error message
	}{
		{name: "bad listen URL", args: []string{"--listen-client-urls=localhost:2379"}, want: `--listen-client-urls "localhost:2379": want scheme://ip:port with scheme http, https, unix or unixs`},
		{name: "host name to bind", args: []string{"--listen-peer-urls=http://etcd.example:2380"}, want: "want scheme://ip:port with scheme http or https"},
		{name: "bad advertised URL", args: []string{"--advertise-client-urls=http://a:b"}, want: "--advertise-client-urls"},
		{name: "wildcard without advertise", args: []string{"--listen-client-urls=http://0.0.0.0:2379"}, want: "--advertise-client-urls is required"},
		{name: "bad cluster state", args: []string{"--initial-cluster-state=joined"}, want: `want "new" or "existing"`},
		{name: "member missing from cluster", args: []string{"--name=a", "--initial-cluster=b=http://127.0.0.1:2380"}, want: `does not list this member's --name "a"`},
		{name: "bad log level", args: []string{"--log-level=verbose"}, want: "want one of debug, info, warn, error, panic, fatal"},
		{name: "https without cert", args: []string{"--listen-client-urls=https://127.0.0.1:2379"}, want: "needs --cert-file and --key-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewCommand()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append(tt.args, "--data-dir="+t.TempDir()))
			err := cmd.ExecuteContext(t.Context())
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrInvalidConfig containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
			if strings.Contains(out.String(), "Usage:") {
				t.Errorf("usage printed for an invalid value:\n%s", out.String())
			}
		})
	}
}

func TestCommandServesUntilContextEnds(t *testing.T) {
	ports, err := reservePorts(slices.Repeat([]string{"127.0.0.1"}, 2))
	if err != nil {
		t.Fatal(err)
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cmd := NewCommand()
	cmd.SetArgs([]string{
		"--name=standalone",
		"--data-dir=" + t.TempDir(),
		"--listen-client-urls=" + endpoint,
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", ports[1]),
		"--unsafe-no-fsync",
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	// The member is up once a client gets an answer.
	cfg := ClientConfig{Endpoints: []string{endpoint}, DialTimeout: 500 * time.Millisecond}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := NewClient(t.Context(), cfg)
		if err == nil {
			mustPut(t, c, "/cmd", "served")
			_ = c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("command returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("command not serving at %s: %v", endpoint, err)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("command returned %v after its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("command still running 10s after its context ended")
	}
	if _, err := NewClient(t.Context(), cfg); !errors.Is(err, ErrUnreachable) {
		t.Errorf("after the command returned: got %v, want ErrUnreachable", err)
	}
}
