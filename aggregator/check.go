package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// checkTimeout bounds one discovery request to a backend.
const checkTimeout = 5 * time.Second

// maxDiscoveryBytes bounds the discovery document read from a backend.
const maxDiscoveryBytes = 8 << 20

// aggregatorUser is who the servers' own discovery requests are from, as
// kube-aggregator's: a member of system:masters, so that the backend's delegated
// authorization allows them.
const aggregatorUser = "system:kube-aggregator"

// fetch reads the discovery of svc's group-version from its backend: GET
// /apis/<group>/<version>, which must answer 2xx with an APIResourceList of that
// group-version. Its error says why not (see reasonOf).
func (a *Aggregator) fetch(ctx context.Context, svc *apiregistrationv1.APIService) (*metav1.APIResourceList, error) {
	b, err := a.resolve(svc)
	if err != nil {
		return nil, err
	}
	rt, err := a.transport(svc, b.serverName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	url := "https://" + b.hostPort + "/apis/" + svc.Spec.Group + "/" + svc.Spec.Version
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	client := &http.Client{Transport: transport.NewAuthProxyRoundTripper(aggregatorUser, "", []string{"system:masters"}, nil, rt)}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failing or missing response from %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes))
	if err != nil {
		return nil, fmt.Errorf("failing or missing response from %s: %w", url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("failing or missing response from %s: bad status from %s: %d", url, url, resp.StatusCode)
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(body, list); err != nil {
		return nil, fmt.Errorf("discovery from %s: %w", url, err)
	}
	if want := svc.Spec.Group + "/" + svc.Spec.Version; list.GroupVersion != want {
		return nil, fmt.Errorf("discovery from %s names group-version %q, want %q", url, list.GroupVersion, want)
	}
	return list, nil
}
