// Package rbac owns Role-Based Access Control (rbac.authorization.k8s.io/v1) with
// Kubernetes' semantics: the authorizer that decides requests from Roles,
// ClusterRoles and their bindings, kubectl's columns of bindings, and the admission
// that keeps users from granting permissions they do not hold. The four resources'
// defaults and validation are Kubernetes' own (package kubesemantics); the default
// roles and bindings every cluster starts with are package bootstrap's.
//
// # Authorizer
//
// Authorizer reads the four kinds through client-go listers (an informer's cache).
// A request is allowed if a rule bound to its user allows it: ClusterRoleBindings
// apply everywhere, RoleBindings in their namespace only (a RoleBinding to a
// ClusterRole grants its rules in that namespace alone). Subjects are users and
// groups by name and service accounts as the user
// system:serviceaccount:<namespace>:<name>. Otherwise the Authorizer has no opinion,
// leaving the request to the next authorizer of the chain. It is also the
// authorizer.RuleResolver of SelfSubjectRulesReviews, and Rules gives the escalation
// check a user's rules.
//
//	rbacAuthz := rbac.NewAuthorizer(rbac.Listers{
//		Roles:               factory.Rbac().V1().Roles().Lister(),
//		RoleBindings:        factory.Rbac().V1().RoleBindings().Lister(),
//		ClusterRoles:        factory.Rbac().V1().ClusterRoles().Lister(),
//		ClusterRoleBindings: factory.Rbac().V1().ClusterRoleBindings().Lister(),
//	})
//	decision, reason, _ := rbacAuthz.Authorize(ctx, attrs)
//	// Allow, `RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole "admin" to Group "ops"`
//
// # Resources
//
// ConfigureRoleBindings and ConfigureClusterRoleBindings give the bindings
// kubectl's columns.
//
// # Escalation check
//
// NewEscalationCheck is a validating admission plugin for the server's chain: a
// user may write a role only with the permissions it grants (or the "escalate" verb
// on it), and a binding only to a role whose permissions they hold (or with the
// "bind" verb on it). Members of system:masters are exempt.
//
//	check := rbac.NewEscalationCheck(serverAuthorizer, rbacAuthz)
//	err := check.Validate(ctx, attrs, nil) // a Forbidden StatusError, or nil
//
// # Server wiring
//
// Feature is RBAC as one server runs it, the wiring the server once held: NewFeature
// takes the typed informers of the four kinds from the server's shared informers and
// builds the Authorizer over their caches, and package bootstrap's Feature of the
// default roles over the ClusterRoles' informer (Roles); Start starts the informers as
// one component, ready once they have read every role and binding; EscalationCheck
// gives the admission chain its check. NewFeature builds nothing (nil) unless
// --authorization-mode names RBAC.
//
// # What it must not touch
//
// It stores, serves and writes nothing: the registry stores the four kinds like any
// resource, the server's shared informers feed the listers, and the server decides
// where the authorizer sits in its chain and where admission runs. It creates no
// roles or bindings (package bootstrap does).
package rbac
