package podconnect

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
)

// serveLog answers GET pods/<name>/log: kube's checks of the options, the Pod and its
// container, then an empty log (204) for a Pod on no node, else the node's kubelet.
func (c *Connector) serveLog(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	opts := &core.PodLogOptions{}
	if err := decodeOptions(r, opts); err != nil {
		return err
	}
	streams := c.sem.FeatureGate().Enabled(features.PodLogsQuerySplitStreams)
	if streams && opts.Stream == nil {
		opts.Stream = ptr.To(core.LogStreamAll)
	}
	if errs := corevalidation.ValidatePodLogOptions(opts, streams); len(errs) > 0 {
		return apierrors.NewInvalid(core.Kind("PodLogOptions"), name, errs)
	}
	pod, err := c.pod(r.Context(), namespace, name)
	if err != nil {
		return err
	}
	ctr, err := container(pod, opts.Container)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		w.WriteHeader(http.StatusNoContent) // kube's empty log: nothing to stream
		return nil
	}
	hostport, err := c.kubelet(r.Context(), pod.Spec.NodeName)
	if err != nil {
		return err
	}
	loc := url.URL{Scheme: "https", Host: hostport, Path: fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, ctr),
		RawQuery: logQuery(opts, streams).Encode()}
	if err := Dial(r.Context(), hostport); err != nil {
		return unknown(&url.Error{Op: "Get", URL: loc.String(), Err: err})
	}
	return errNoKubeletProxy
}

// logQuery is the query kube sends a kubelet for opts.
func logQuery(opts *core.PodLogOptions, streams bool) url.Values {
	q := url.Values{}
	for key, on := range map[string]bool{"follow": opts.Follow, "previous": opts.Previous, "timestamps": opts.Timestamps} {
		if on {
			q.Add(key, "true")
		}
	}
	if opts.SinceSeconds != nil {
		q.Add("sinceSeconds", strconv.FormatInt(*opts.SinceSeconds, 10))
	}
	if opts.SinceTime != nil {
		q.Add("sinceTime", opts.SinceTime.Format(time.RFC3339))
	}
	if opts.TailLines != nil {
		q.Add("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	if opts.LimitBytes != nil {
		q.Add("limitBytes", strconv.FormatInt(*opts.LimitBytes, 10))
	}
	if streams && opts.Stream != nil {
		q.Add("stream", string(*opts.Stream))
	}
	return q
}
