package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/concordproject/concord/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// NodePortsPrefix is the etcd prefix (under the storage prefix) of the node port
// records, one key per port.
const NodePortsPrefix = "ranges/servicenodeports/"

// The node port allocator's errors, in Kubernetes' words.
var (
	ErrPortFull      = errors.New("range is full")
	ErrPortAllocated = errors.New("provided port is already allocated")
)

// portNotInRangeError is Kubernetes' ErrNotInRange of the node port allocator.
type portNotInRangeError struct{ valid utilnet.PortRange }

func (e *portNotInRangeError) Error() string {
	return fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", e.valid.String())
}

// portOwner is a node port record: the Service that holds the port.
type portOwner struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
}

func ownerOf(svc *corev1.Service) portOwner {
	return portOwner{Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID}
}

// portAllocator hands out node ports as etcd keys written only if absent, so that two
// servers never hand one port out twice.
type portAllocator struct {
	raw   *storage.Store
	ports utilnet.PortRange
}

func portKey(port int) string { return NodePortsPrefix + strconv.Itoa(port) }

// allocate reserves port (0: any free one) for svc and returns it; with dryRun it
// reserves nothing.
func (a *portAllocator) allocate(ctx context.Context, svc *corev1.Service, port int, dryRun bool) (int, error) {
	if port != 0 {
		if !a.ports.Contains(port) {
			return 0, &portNotInRangeError{valid: a.ports}
		}
		return port, a.reserve(ctx, svc, port, dryRun)
	}
	used, err := a.used(ctx)
	if err != nil {
		return 0, err
	}
	start := rand.IntN(a.ports.Size) //nolint:gosec // spreading, not secrecy
	for i := range a.ports.Size {
		p := a.ports.Base + (start+i)%a.ports.Size
		if _, taken := used[p]; taken {
			continue
		}
		err := a.reserve(ctx, svc, p, dryRun)
		if errors.Is(err, ErrPortAllocated) {
			continue // another server got it first
		}
		return p, err
	}
	return 0, ErrPortFull
}

// reserve writes the record of port for svc, only if absent.
func (a *portAllocator) reserve(ctx context.Context, svc *corev1.Service, port int, dryRun bool) error {
	if dryRun {
		if _, err := a.raw.Get(ctx, portKey(port)); err == nil {
			return ErrPortAllocated
		}
		return nil
	}
	data, err := json.Marshal(ownerOf(svc))
	if err != nil {
		return err
	}
	if _, err := a.raw.Create(ctx, portKey(port), data); errors.Is(err, storage.ErrAlreadyExists) {
		return ErrPortAllocated
	} else if err != nil {
		return err
	}
	return nil
}

// used returns the ports recorded now, with their owners.
func (a *portAllocator) used(ctx context.Context) (map[int]recorded, error) {
	page, err := a.raw.List(ctx, NodePortsPrefix, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[int]recorded, len(page.Items))
	for _, kv := range page.Items {
		port, err := strconv.Atoi(strings.TrimPrefix(kv.Key, NodePortsPrefix))
		if err != nil {
			continue
		}
		var o portOwner
		_ = json.Unmarshal(kv.Value, &o)
		out[port] = recorded{owner: o, revision: kv.Revision}
	}
	return out, nil
}

// recorded is a node port record as read.
type recorded struct {
	owner    portOwner
	revision int64
}

// release deletes the record of port if svc still holds it.
func (a *portAllocator) release(ctx context.Context, svc *corev1.Service, port int) error {
	kv, err := a.raw.Get(ctx, portKey(port))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var o portOwner
	if json.Unmarshal(kv.Value, &o) == nil && o != ownerOf(svc) {
		return nil
	}
	if _, err := a.raw.Delete(ctx, portKey(port), kv.Revision); err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return nil
}
