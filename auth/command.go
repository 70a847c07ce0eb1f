package auth

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
)

// NewKubeconfigCommand returns `concord kubeconfig`: a kubeconfig for a user who
// authenticates with a client certificate signed by the cluster CA (as kubeadm's
// `kubeconfig user`), written with mode 0600.
func NewKubeconfigCommand() *cobra.Command {
	var (
		dataDir, certDir, server, out, user string
		groups                              []string
		validity                            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "kubeconfig --user NAME [--group GROUP]... --out FILE",
		Short: "Write a kubeconfig for a user authenticated by a client certificate signed by the cluster CA",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			switch {
			case user == "":
				return errors.New("--user is required: the user name (the certificate's common name)")
			case out == "":
				return errors.New("--out is required: where to write the kubeconfig")
			case validity <= 0:
				return fmt.Errorf("--validity %s must be positive", validity)
			}
			if certDir == "" {
				certDir = filepath.Join(dataDir, "pki")
			}
			caPEM, keyPEM, err := readCertDirCA(certDir)
			if err != nil {
				return err
			}
			if caPEM == nil {
				return fmt.Errorf("no cluster CA in %s: give the --data-dir or --cert-dir of a server of the cluster", certDir)
			}
			creds := &ClusterCredentials{CACert: caPEM, CAKey: keyPEM}
			certPEM, certKeyPEM, err := NewClientCertificate(creds, user, groups, validity)
			if err != nil {
				return err
			}
			return WriteClientCertKubeconfig(out, server, caPEM, certPEM, certKeyPEM, "")
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dataDir, "data-dir", "concord-data", "Data directory of a server of the cluster, whose pki holds the cluster CA.")
	fs.StringVar(&certDir, "cert-dir", "", "Directory of the cluster CA (ca.crt, ca.key); default <data-dir>/pki.")
	fs.StringVar(&server, "server", "https://127.0.0.1:6443", "URL of the server the kubeconfig points at.")
	fs.StringVar(&user, "user", "", "User name (the certificate's common name).")
	fs.StringSliceVar(&groups, "group", nil, "Group of the user (the certificate's organizations); repeat for several.")
	fs.DurationVar(&validity, "validity", 365*24*time.Hour, "How long the certificate is valid (at most until the CA expires).")
	fs.StringVarP(&out, "out", "o", "", "Where to write the kubeconfig.")
	return cmd
}
