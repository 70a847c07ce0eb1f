package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/retry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The ConfigMap aggregated API servers built on k8s.io/apiserver read to authenticate
// the requests the servers proxy to them, and its place.
const (
	AuthenticationNamespace = "kube-system"
	AuthenticationConfigMap = "extension-apiserver-authentication"
)

// The front-proxy headers the servers set on proxied requests.
const (
	HeaderUser        = "X-Remote-User"
	HeaderUID         = "X-Remote-Uid"
	HeaderGroup       = "X-Remote-Group"
	HeaderExtraPrefix = "X-Remote-Extra-"
)

// AuthenticationData is the content of the ConfigMap: the CA of client certificates
// (client-ca-file), and the request-header configuration: the front-proxy CA, the one
// name its certificates may have, and the headers, in the keys kube-apiserver uses.
func AuthenticationData(clientCA, frontProxyCA []byte) map[string]string {
	list := func(v ...string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	return map[string]string{
		"client-ca-file":                     string(clientCA),
		"requestheader-client-ca-file":       string(frontProxyCA),
		"requestheader-allowed-names":        list(auth.FrontProxyClientName),
		"requestheader-username-headers":     list(HeaderUser),
		"requestheader-uid-headers":          list(HeaderUID),
		"requestheader-group-headers":        list(HeaderGroup),
		"requestheader-extra-headers-prefix": list(HeaderExtraPrefix),
	}
}

// PublishAuthentication creates or updates the ConfigMap
// kube-system/extension-apiserver-authentication with data (AuthenticationData). A
// server that wrote it meanwhile (a conflict, or AlreadyExists) makes it read again,
// as the one retry helper's conflict policy bounds.
func PublishAuthentication(ctx context.Context, client kubernetes.Interface, data map[string]string) error {
	cms := client.CoreV1().ConfigMaps(AuthenticationNamespace)
	err := retry.OnConflict(ctx, func(ctx context.Context) error {
		cm, err := cms.Get(ctx, AuthenticationConfigMap, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: AuthenticationConfigMap, Namespace: AuthenticationNamespace}, Data: data}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		case err != nil, maps.Equal(cm.Data, data):
			return err
		}
		cm.Data = data
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("publishing %s/%s: %w", AuthenticationNamespace, AuthenticationConfigMap, err)
	}
	return nil
}
