package serviceaccount

import (
	"github.com/golang-jwt/jwt/v5"
)

// claims is the payload of a service account token: the registered claims (iss, sub,
// aud, exp, nbf, iat, jti) and Kubernetes' private claim "kubernetes.io".
type claims struct {
	jwt.RegisteredClaims
	Kubernetes *kubernetesClaim `json:"kubernetes.io,omitempty"`
}

// kubernetesClaim is the "kubernetes.io" claim: the service account, and the object the
// token is bound to. A pod-bound token also names the pod's node.
type kubernetesClaim struct {
	Namespace      string     `json:"namespace,omitempty"`
	ServiceAccount objectRef  `json:"serviceaccount"`
	Pod            *objectRef `json:"pod,omitempty"`
	Secret         *objectRef `json:"secret,omitempty"`
	Node           *objectRef `json:"node,omitempty"`
}

// objectRef names an object of the token's claims.
type objectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}
