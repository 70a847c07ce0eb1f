package aggregator

import (
	"context"
	"encoding/json"
	"errors"
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

// maxDocumentBytes bounds a document (discovery, OpenAPI) read from a backend.
const maxDocumentBytes = 32 << 20

// aggregatorUser is who the servers' own discovery requests are from, as
// kube-aggregator's: a member of system:masters, so that the backend's delegated
// authorization allows them.
const aggregatorUser = "system:kube-aggregator"

// fetch reads the discovery of svc's group-version from its backend: GET
// /apis/<group>/<version>, which must answer 2xx with an APIResourceList of that
// group-version. Its error says why not (see reasonOf).
func (a *Aggregator) fetch(ctx context.Context, svc *apiregistrationv1.APIService) (*metav1.APIResourceList, error) {
	path := "/apis/" + svc.Spec.Group + "/" + svc.Spec.Version
	body, err := a.get(ctx, svc, path)
	if err != nil {
		return nil, err
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(body, list); err != nil {
		return nil, fmt.Errorf("discovery from %s: %w", path, err)
	}
	if want := svc.Spec.Group + "/" + svc.Spec.Version; list.GroupVersion != want {
		return nil, fmt.Errorf("discovery from %s names group-version %q, want %q", path, list.GroupVersion, want)
	}
	return list, nil
}

// get reads path from svc's backend as the aggregator (JSON), within checkTimeout; a
// status other than 2xx is an error.
func (a *Aggregator) get(ctx context.Context, svc *apiregistrationv1.APIService, path string) ([]byte, error) {
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
	url := "https://" + b.hostPort + path
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes))
	if err != nil {
		return nil, fmt.Errorf("failing or missing response from %s: %w", url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%w from %s: bad status from %s: %d", errFailing, url, url, resp.StatusCode)
	}
	return body, nil
}

// errFailing is a backend's answer other than 2xx.
var errFailing = errors.New("failing or missing response")
