package bootstrap

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// The names of the bootstrap ClusterRoles. Each binding is named after the role it
// binds.
const (
	// ClusterAdmin may do anything: every verb on every resource and URL.
	ClusterAdmin = "cluster-admin"
	// Admin, Edit and View are the user-facing roles, meant for RoleBindings in a
	// namespace; their rules are aggregated (see AggregateToAdminLabel).
	Admin = "admin"
	Edit  = "edit"
	View  = "view"
	// AggregateToAdmin, AggregateToEdit and AggregateToView carry the rules Admin,
	// Edit and View aggregate.
	AggregateToAdmin = "system:aggregate-to-admin"
	AggregateToEdit  = "system:aggregate-to-edit"
	AggregateToView  = "system:aggregate-to-view"
	// BasicUser lets a user learn about itself (self subject reviews).
	BasicUser = "system:basic-user"
	// Discovery lets a client discover the APIs and the server's health and version.
	Discovery = "system:discovery"
	// PublicInfoViewer reads what may be shown to anyone: health and version.
	PublicInfoViewer = "system:public-info-viewer"
	// Monitoring reads the metrics and the individual health checks.
	Monitoring = "system:monitoring"
	// ControllerManager is the role of Concord's out-of-process controller manager;
	// it is bound to the user of the same name (ControllerManagerUser).
	ControllerManager = "system:concord:controller-manager"
	// AuthDelegator lets a server delegate authentication and authorization to
	// Concord (TokenReview, SubjectAccessReview), as aggregated API servers do; it is
	// not bound by default.
	AuthDelegator = "system:auth-delegator"
	// IssuerDiscovery reads the service account issuer's OpenID discovery document
	// and keys; it is bound to every service account.
	IssuerDiscovery = "system:service-account-issuer-discovery"
)

// The subjects of the bootstrap bindings.
const (
	// MastersGroup is bound to ClusterAdmin.
	MastersGroup = user.SystemPrivilegedGroup
	// AuthenticatedGroup and UnauthenticatedGroup hold every authenticated and every
	// anonymous user.
	AuthenticatedGroup   = user.AllAuthenticated
	UnauthenticatedGroup = user.AllUnauthenticated
	// MonitoringGroup is bound to Monitoring.
	MonitoringGroup = user.MonitoringGroup
	// ServiceAccountsGroup holds every service account.
	ServiceAccountsGroup = "system:serviceaccounts"
	// ControllerManagerUser is the user Concord's controller manager authenticates
	// as.
	ControllerManagerUser = "system:concord:controller-manager"
)

// The labels and annotation of the bootstrap objects.
const (
	// BootstrappingLabel, with the value BootstrappingValue, marks every bootstrap
	// object.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	BootstrappingValue = "rbac-defaults"
	// AggregateToAdminLabel, AggregateToEditLabel and AggregateToViewLabel, with the
	// value "true", add a ClusterRole's rules to Admin, Edit and View.
	AggregateToAdminLabel = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEditLabel  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToViewLabel  = "rbac.authorization.k8s.io/aggregate-to-view"
	// AutoUpdateAnnotation set to "false" keeps Ensure from changing an object.
	AutoUpdateAnnotation = rbacv1.AutoUpdateAnnotationKey
)

// The API groups the rules name.
const (
	coreGroup             = ""
	authorizationGroup    = "authorization.k8s.io"
	authenticationGroup   = "authentication.k8s.io"
	appsGroup             = "apps"
	autoscalingGroup      = "autoscaling"
	batchGroup            = "batch"
	coordinationGroup     = "coordination.k8s.io"
	discoveryGroup        = "discovery.k8s.io"
	eventsGroup           = "events.k8s.io"
	extensionsGroup       = "extensions"
	networkingGroup       = "networking.k8s.io"
	policyGroup           = "policy"
	rbacGroup             = rbacv1.GroupName
	resourceGroup         = "resource.k8s.io"
	apiextensionsGroup    = "apiextensions.k8s.io"
	internalAPIGroup      = "internal.apiserver.k8s.io"
	storageMigrationGroup = "storagemigration.k8s.io"
	concordMigrationGroup = "migration.k8s.io"
)

// Verb sets.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	all       = []string{rbacv1.VerbAll}
)

// ClusterRoles returns the bootstrap ClusterRoles, a fresh copy on every call.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: ClusterAdmin},
			Rules: []rbacv1.PolicyRule{
				allow(all, in(rbacv1.APIGroupAll), rbacv1.ResourceAll),
				allowURLs(all, rbacv1.NonResourceAll),
			},
		},
		aggregated(Admin, AggregateToAdminLabel, ""),
		aggregated(Edit, AggregateToEditLabel, AggregateToAdminLabel),
		aggregated(View, AggregateToViewLabel, AggregateToEditLabel),
		{
			ObjectMeta: metav1.ObjectMeta{Name: AggregateToAdmin, Labels: map[string]string{AggregateToAdminLabel: "true"}},
			Rules: []rbacv1.PolicyRule{
				allow([]string{"create"}, in(authorizationGroup), "localsubjectaccessreviews"),
				allow(readWrite, in(rbacGroup), "roles", "rolebindings"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: AggregateToEdit, Labels: map[string]string{AggregateToEditLabel: "true"}},
			Rules:      editRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: AggregateToView, Labels: map[string]string{AggregateToViewLabel: "true"}},
			Rules:      viewRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: BasicUser},
			Rules: []rbacv1.PolicyRule{
				allow([]string{"create"}, in(authorizationGroup), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
				allow([]string{"create"}, in(authenticationGroup), "selfsubjectreviews"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: Discovery},
			Rules: []rbacv1.PolicyRule{allowURLs([]string{"get"},
				"/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: PublicInfoViewer},
			Rules: []rbacv1.PolicyRule{allowURLs([]string{"get"},
				"/livez", "/readyz", "/healthz", "/version", "/version/")},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: Monitoring},
			Rules: []rbacv1.PolicyRule{
				allowURLs([]string{"get"}, "/metrics", "/metrics/slis",
					"/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*",
					"/flagz", "/statusz"),
				allow([]string{"get"}, in(coreGroup), "nodes/metrics"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: AuthDelegator},
			Rules: []rbacv1.PolicyRule{
				allow([]string{"create"}, in(authenticationGroup), "tokenreviews"),
				allow([]string{"create"}, in(authorizationGroup), "subjectaccessreviews"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: IssuerDiscovery},
			Rules:      []rbacv1.PolicyRule{allowURLs([]string{"get"}, "/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")},
		},
		controllerManagerRole(),
	}
	for i := range roles {
		markBootstrap(&roles[i].ObjectMeta)
	}
	return roles
}

// AuthenticationReader is the Role in kube-system that lets aggregated API servers
// read the request-header configuration (kube-system/extension-apiserver-authentication);
// they bind their own identities to it, as with Kubernetes.
const AuthenticationReader = "extension-apiserver-authentication-reader"

// Roles returns the bootstrap Roles of namespaces, a fresh copy on every call.
func Roles() []rbacv1.Role {
	reader := allow([]string{"get", "list", "watch"}, in(""), "configmaps")
	reader.ResourceNames = []string{"extension-apiserver-authentication"}
	roles := []rbacv1.Role{{
		ObjectMeta: metav1.ObjectMeta{Name: AuthenticationReader, Namespace: metav1.NamespaceSystem},
		Rules:      []rbacv1.PolicyRule{reader},
	}}
	for i := range roles {
		markBootstrap(&roles[i].ObjectMeta)
	}
	return roles
}

// ClusterRoleBindings returns the bootstrap ClusterRoleBindings, a fresh copy on
// every call. Each is named after the ClusterRole it binds.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		binding(ClusterAdmin, groups(MastersGroup)),
		binding(BasicUser, groups(AuthenticatedGroup)),
		binding(Discovery, groups(AuthenticatedGroup)),
		binding(PublicInfoViewer, groups(AuthenticatedGroup, UnauthenticatedGroup)),
		binding(Monitoring, groups(MonitoringGroup)),
		binding(IssuerDiscovery, groups(ServiceAccountsGroup)),
		binding(ControllerManager, []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ControllerManagerUser}}),
	}
	for i := range bindings {
		markBootstrap(&bindings[i].ObjectMeta)
	}
	return bindings
}

// controllerManagerRole is the least a storage-version migrator needs, and what
// Concord's controller manager (package migration) does with it:
//
//   - get, list, watch, update, patch and rewrite on every resource of every group:
//     it reads every object and writes it back as it is (client-side path), or asks
//     the server to re-encode a page of them (the "rewrite" verb of Concord's
//     server-side path); update on "*" also covers the status of
//     CustomResourceDefinitions, whose storedVersions it trims;
//   - everything but deletecollection on storagemigration.k8s.io
//     storageversionmigrations and their status: it creates, runs, reports and
//     prunes migrations;
//   - the same on migration.k8s.io storagestates and their status: its trigger
//     creates, updates and deletes them;
//   - get, list, watch on internal.apiserver.k8s.io storageversions: what every
//     server encodes with;
//   - get, list, watch and create on apiextensions.k8s.io
//     customresourcedefinitions: it installs the definitions of its own APIs where
//     the server does not serve them (not needed with --skip-crds);
//   - get, create and update on coordination.k8s.io leases: its leader election;
//   - create and patch on events, core and events.k8s.io: the Events it records;
//   - create on authentication.k8s.io tokenreviews and authorization.k8s.io
//     subjectaccessreviews: its /metrics asks the server who sent a request and
//     whether that user may read it (kube's system:auth-delegator grants the same).
//
// It has no delete or create on other resources and no non-resource URLs beyond
// what system:discovery grants every authenticated user.
func controllerManagerRole() rbacv1.ClusterRole {
	manage := []string{"create", "get", "list", "watch", "update", "patch", "delete"}
	return rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ControllerManager},
		Rules: []rbacv1.PolicyRule{
			allow([]string{"get", "list", "watch", "update", "patch", "rewrite"}, in(rbacv1.APIGroupAll), rbacv1.ResourceAll),
			allow(manage, in(storageMigrationGroup), "storageversionmigrations", "storageversionmigrations/status"),
			allow(manage, in(concordMigrationGroup), "storagestates", "storagestates/status"),
			allow(read, in(internalAPIGroup), "storageversions"),
			allow([]string{"get", "list", "watch", "create"}, in(apiextensionsGroup), "customresourcedefinitions"),
			allow([]string{"get", "create", "update"}, in(coordinationGroup), "leases"),
			allow([]string{"create", "patch"}, in(coreGroup, eventsGroup), "events"),
			allow([]string{"create"}, in("authentication.k8s.io"), "tokenreviews"),
			allow([]string{"create"}, in("authorization.k8s.io"), "subjectaccessreviews"),
		},
	}
}

// viewRules are the rules of AggregateToView: reading what a namespace's users
// create, without the escalating resources (secrets, pods' exec and proxy).
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		allow(read, in(coreGroup), "pods", "replicationcontrollers", "replicationcontrollers/scale",
			"serviceaccounts", "services", "services/status", "endpoints", "persistentvolumeclaims",
			"persistentvolumeclaims/status", "configmaps"),
		allow(read, in(coreGroup), "limitranges", "resourcequotas", "bindings", "pods/status",
			"resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		// Bound in a namespace, this reads that namespace only.
		allow(read, in(coreGroup), "namespaces"),
		allow(read, in(coreGroup, eventsGroup), "events"),
		allow(read, in(discoveryGroup), "endpointslices"),
		allow(read, in(appsGroup), "controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale"),
		allow(read, in(autoscalingGroup), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		allow(read, in(batchGroup), "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
		allow(read, in(extensionsGroup), "daemonsets", "daemonsets/status", "deployments",
			"deployments/scale", "deployments/status", "ingresses", "ingresses/status", "replicasets",
			"replicasets/scale", "replicasets/status", "replicationcontrollers/scale", "networkpolicies"),
		allow(read, in(policyGroup), "poddisruptionbudgets", "poddisruptionbudgets/status"),
		allow(read, in(networkingGroup), "networkpolicies", "ingresses", "ingresses/status"),
		allow(read, in(resourceGroup), "resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// editRules are the rules of AggregateToEdit: writing what a namespace's users
// create, and reading the escalating resources, but neither the status of objects
// nor quotas and limits, which are the system's and the namespace owner's.
func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		allow(read, in(coreGroup), "pods/attach", "pods/proxy", "pods/exec", "pods/portforward",
			"secrets", "services/proxy"),
		allow([]string{"impersonate"}, in(coreGroup), "serviceaccounts"),
		allow(write, in(coreGroup), "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		allow([]string{"create"}, in(coreGroup), "pods/eviction"),
		allow(write, in(coreGroup), "replicationcontrollers", "replicationcontrollers/scale",
			"serviceaccounts", "services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets"),
		allow([]string{"create"}, in(coreGroup), "serviceaccounts/token"),
		allow(write, in(coreGroup, eventsGroup), "events"),
		allow(write, in(appsGroup), "statefulsets", "statefulsets/scale", "daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
		allow(write, in(autoscalingGroup), "horizontalpodautoscalers"),
		allow(write, in(batchGroup), "jobs", "cronjobs"),
		allow(write, in(extensionsGroup), "daemonsets", "deployments", "deployments/scale",
			"deployments/rollback", "ingresses", "replicasets", "replicasets/scale",
			"replicationcontrollers/scale", "networkpolicies"),
		allow(write, in(policyGroup), "poddisruptionbudgets"),
		allow(write, in(networkingGroup), "networkpolicies", "ingresses"),
		allow(readWrite, in(coordinationGroup), "leases"),
		allow(write, in(resourceGroup), "resourceclaims", "resourceclaimtemplates"),
	}
}

// aggregated returns an aggregated ClusterRole: its rules are those of the roles
// labelled selects=true; labelled, if label is set, label=true itself.
func aggregated(name, selects, label string) rbacv1.ClusterRole {
	role := rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{selects: "true"}},
		}},
	}
	if label != "" {
		role.Labels = map[string]string{label: "true"}
	}
	return role
}

// binding returns the ClusterRoleBinding of role to subjects, named after role.
func binding(role string, subjects []rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// groups returns the subjects naming groups.
func groups(names ...string) []rbacv1.Subject {
	out := make([]rbacv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return out
}

// markBootstrap labels and annotates a bootstrap object.
func markBootstrap(meta *metav1.ObjectMeta) {
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[BootstrappingLabel] = BootstrappingValue
	meta.Annotations = map[string]string{AutoUpdateAnnotation: "true"}
}

// in lists API groups, for allow.
func in(names ...string) []string { return names }

// allow returns the rule granting verbs on resources of groups. Each list is sorted
// and deduplicated, as Kubernetes stores its bootstrap rules, so that the objects
// read the same on both.
func allow(verbs, apiGroups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: set(verbs), APIGroups: set(apiGroups), Resources: set(resources)}
}

// allowURLs returns the rule granting verbs on non-resource URLs.
func allowURLs(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: set(verbs), NonResourceURLs: set(urls)}
}

// set returns a sorted copy of list without duplicates.
func set(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}
