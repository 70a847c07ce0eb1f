package etcd

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"go.etcd.io/etcd/client/pkg/v3/types"
)

// memberURLs are a member's URLs as etcd gets them: defaults applied and every port 0
// replaced by a port that was free a moment ago.
type memberURLs struct {
	listenClient, advertiseClient []url.URL
	listenPeer, advertisePeer     []url.URL
	initialCluster                string
	// picked reports whether any port was picked, so that a start that lost a port
	// to another process is worth retrying with fresh ones.
	picked bool
}

// resolveURLs applies URL defaults and picks ports for port 0. It expects a config
// that passed Validate.
func (c *EmbeddedConfig) resolveURLs() (memberURLs, error) {
	var m memberURLs
	var err error
	if m.listenClient, err = parseURLs("--listen-client-urls", c.listenClientURLs(), urlRules{bind: true, unix: true}); err != nil {
		return m, err
	}
	if m.advertiseClient, err = parseURLs("--advertise-client-urls", c.AdvertiseClientURLs, urlRules{unix: true}); err != nil {
		return m, err
	}
	if m.listenPeer, err = parseURLs("--listen-peer-urls", c.listenPeerURLs(), urlRules{bind: true}); err != nil {
		return m, err
	}
	if m.advertisePeer, err = parseURLs("--initial-advertise-peer-urls", c.InitialAdvertisePeerURLs, urlRules{}); err != nil {
		return m, err
	}

	// Pick every port at once, so that no two URLs get the same one.
	var zero []*url.URL
	for _, list := range [][]url.URL{m.listenClient, m.listenPeer} {
		for i := range list {
			if isTCP(list[i]) && list[i].Port() == "0" {
				zero = append(zero, &list[i])
			}
		}
	}
	hosts := make([]string, len(zero))
	for i, u := range zero {
		hosts[i] = u.Hostname()
	}
	ports, err := reservePorts(hosts)
	if err != nil {
		return m, err
	}
	picked := make(map[url.URL]url.URL, len(zero))
	for i, u := range zero {
		orig := *u
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(ports[i]))
		picked[url.URL{Scheme: orig.Scheme, Host: orig.Host}] = *u
	}
	m.picked = len(zero) > 0
	substitute := func(urls []url.URL) {
		for i, u := range urls {
			if p, ok := picked[url.URL{Scheme: u.Scheme, Host: u.Host}]; ok {
				urls[i] = p
			}
		}
	}

	if len(m.advertiseClient) == 0 {
		m.advertiseClient = append([]url.URL(nil), m.listenClient...)
	}
	substitute(m.advertiseClient)
	if len(m.advertisePeer) == 0 {
		m.advertisePeer = append([]url.URL(nil), m.listenPeer...)
	}
	substitute(m.advertisePeer)

	members := types.URLsMap{c.name(): m.advertisePeer}
	if c.InitialCluster != "" {
		if members, err = types.NewURLsMap(c.InitialCluster); err != nil {
			return m, fmt.Errorf("%w: --initial-cluster %q: %w", ErrInvalidConfig, c.InitialCluster, err)
		}
		for _, urls := range members {
			substitute(urls)
		}
	}
	m.initialCluster = members.String()
	return m, nil
}

func isTCP(u url.URL) bool { return u.Scheme == "http" || u.Scheme == "https" }

// reservePorts returns one free TCP port per host. It holds all the listeners until
// every port is known, so the ports are distinct; another process may still take one
// before etcd binds it, which callers handle by retrying.
func reservePorts(hosts []string) (ports []int, err error) {
	listeners := make([]net.Listener, 0, len(hosts))
	defer func() {
		for _, l := range listeners {
			err = errors.Join(err, l.Close())
		}
	}()
	for _, h := range hosts {
		l, lerr := net.Listen("tcp", net.JoinHostPort(h, "0"))
		if lerr != nil {
			return nil, fmt.Errorf("picking a free port on %s: %w", h, lerr)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// loopbackEndpoint returns the URL a local client dials to reach a listener bound to
// u: a wildcard host becomes the loopback address of the same family.
func loopbackEndpoint(u url.URL) string {
	if !isTCP(u) {
		return u.String()
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsUnspecified() {
		return u.String()
	}
	lo := "127.0.0.1"
	if ip.To4() == nil {
		lo = "::1"
	}
	u.Host = net.JoinHostPort(lo, u.Port())
	return u.String()
}
