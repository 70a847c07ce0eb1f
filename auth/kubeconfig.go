package auth

import (
	"fmt"

	"github.com/concordproject/concord/compatibility"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultContextName names the cluster, user and context of a kubeconfig when the caller
// gives no name.
const DefaultContextName = "concord"

// WriteKubeconfig writes a kubeconfig at path for one server: a cluster at serverURL
// trusting caPEM, a user with bearer token, and a context joining them, which is the
// current context. contextName names all three entries (DefaultContextName if empty).
//
// The file is replaced atomically and always has mode 0600, since it holds a credential;
// missing parent directories are created. The config is validated with clientcmd first.
func WriteKubeconfig(path, serverURL string, caPEM []byte, token, contextName string) error {
	user := clientcmdapi.NewAuthInfo()
	user.Token = token
	return writeKubeconfig(path, serverURL, caPEM, user, contextName)
}

// writeKubeconfig writes a kubeconfig of one cluster, one user and their context.
func writeKubeconfig(path, serverURL string, caPEM []byte, user *clientcmdapi.AuthInfo, contextName string) error {
	if contextName == "" {
		contextName = DefaultContextName
	}
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = serverURL
	cluster.CertificateAuthorityData = caPEM
	cfg.Clusters[contextName] = cluster
	cfg.AuthInfos[contextName] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = contextName, contextName
	cfg.Contexts[contextName] = kctx
	cfg.CurrentContext = contextName

	if err := clientcmd.Validate(*cfg); err != nil {
		return fmt.Errorf("kubeconfig for %s: %w", serverURL, err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return writeFileAtomic(path, data, 0o600)
}

// RESTConfig returns a client configuration for serverURL that trusts caPEM and sends
// token, for clients inside the server process (typically with the loopback token).
func RESTConfig(serverURL string, caPEM []byte, token string) *rest.Config {
	return &rest.Config{
		Host:            serverURL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
	}
}

// LoadKubeconfig returns the client configuration of the kubeconfig at path, or of the
// default one when path is empty (KUBECONFIG, then ~/.kube/config, as kubectl finds it),
// for Concord's own commands: their clients announce the build's release
// (compatibility.IdentifyClient with compatibility.BuildRelease), so that servers count
// them as Concord's clients of that release. A command that runs at another emulation
// version sets WrapTransport to announce it instead.
func LoadKubeconfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	release, err := compatibility.BuildRelease()
	if err != nil {
		return nil, err
	}
	compatibility.IdentifyClient(cfg, release)
	return cfg, nil
}
