package kubesemantics

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/typedconv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/nodedeclaredfeatures"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/podresize"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"
)

// kubePlugins are the admission plugins kube-apiserver enables by default that act
// on built-in resources, in kube-apiserver's order. Those Concord has its own of
// are not here: NamespaceLifecycle (the store's namespace admission), the policies
// and webhooks (package admission), ResourceQuota (package quota); nor is
// PodGroupProtection, whose finalizer nothing in Concord would remove (it acts only
// under the alpha GenericWorkload gate).
var kubePlugins = []struct {
	name     string
	register func(*admission.Plugins)
}{
	{limitranger.PluginName, limitranger.Register},
	{serviceaccount.PluginName, serviceaccount.Register},
	{nodetaint.PluginName, nodetaint.Register},
	{podsecurity.PluginName, podsecurity.Register},
	{priority.PluginName, priority.Register},
	{defaulttolerationseconds.PluginName, defaulttolerationseconds.Register},
	{setdefault.PluginName, setdefault.Register},
	{storageobjectinuseprotection.PluginName, storageobjectinuseprotection.Register},
	{resize.PluginName, resize.Register},
	{runtimeclass.PluginName, runtimeclass.Register},
	{approval.PluginName, approval.Register},
	{signing.PluginName, signing.Register},
	{ctbattest.PluginName, ctbattest.Register},
	{subjectrestriction.PluginName, subjectrestriction.Register},
	{defaultingressclass.PluginName, defaultingressclass.Register},
	{podtopologylabels.PluginName, podtopologylabels.Register},
	{nodedeclaredfeatures.PluginName, nodedeclaredfeatures.Register},
	{podresize.PluginName, podresize.Register},
}

// admitted are the resources kubePlugins act on: the writes of no other resource
// are converted to kube's internal types for them.
var admitted = func() map[schema.GroupResource]bool {
	out := map[schema.GroupResource]bool{}
	for _, gr := range []string{
		"pods", "nodes", "namespaces", "persistentvolumes", "persistentvolumeclaims",
		"podtemplates", "replicationcontrollers",
		"deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps",
		"jobs.batch", "cronjobs.batch",
		"priorityclasses.scheduling.k8s.io", "podgroups.scheduling.k8s.io", "compositepodgroups.scheduling.k8s.io",
		"volumeattributesclasses.storage.k8s.io", "ingresses.networking.k8s.io",
		"certificatesigningrequests.certificates.k8s.io", "clustertrustbundles.certificates.k8s.io",
		"resourceslices.resource.k8s.io",
	} {
		out[schema.ParseGroupResource(gr)] = true
	}
	return out
}()

// Admission returns kube-apiserver's own admission plugins of built-in resources
// (kubePlugins), initialized by init (its clients, informers, authorizer, and the
// server's gates, FeatureGate's), as one mutating and one validating plugin that
// run them in kube's order. They read and change kube's internal types, which each
// pass converts a request's objects to once and, after the mutating pass, back.
//
// Among them: a Pod gets its ServiceAccount's token volume, its priority and
// the default not-ready and unreachable tolerations; a Node is created tainted
// not-ready; PersistentVolumes, claims and VolumeAttributesClasses get their
// protection finalizers; PodSecurity enforces namespaces' pod-security labels;
// approving or signing a CertificateSigningRequest takes the signer's verbs.
func (s *Semantics) Admission(init admission.PluginInitializer) (admission.MutationInterface, admission.ValidationInterface, error) {
	registered := admission.NewPlugins()
	for _, p := range kubePlugins {
		p.register(registered)
	}
	out := &kubeAdmission{sem: s}
	for _, p := range kubePlugins {
		plugin, err := registered.InitPlugin(p.name, nil, init)
		if err != nil {
			return nil, nil, fmt.Errorf("kube's %s admission: %w", p.name, err)
		}
		if m, ok := plugin.(admission.MutationInterface); ok {
			out.mutating = append(out.mutating, m)
		}
		if v, ok := plugin.(admission.ValidationInterface); ok {
			out.validating = append(out.validating, v)
		}
	}
	return mutatingAdmission{out}, validatingAdmission{out}, nil
}

// kubeAdmission runs kube's plugins on the writes of the resources they act on.
type kubeAdmission struct {
	sem        *Semantics
	mutating   []admission.MutationInterface
	validating []admission.ValidationInterface
}

// mutatingAdmission and validatingAdmission are kubeAdmission's two passes.
type (
	mutatingAdmission   struct{ *kubeAdmission }
	validatingAdmission struct{ *kubeAdmission }
)

func (m mutatingAdmission) Handles(op admission.Operation) bool {
	for _, p := range m.mutating {
		if p.Handles(op) {
			return true
		}
	}
	return false
}

func (v validatingAdmission) Handles(op admission.Operation) bool {
	for _, p := range v.validating {
		if p.Handles(op) {
			return true
		}
	}
	return false
}

// Admit runs the mutating plugins on a's objects as kube's internal types, then
// writes the object they changed back into a's, in its version.
func (m mutatingAdmission) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if !admitted[a.GetResource().GroupResource()] {
		return nil
	}
	attrs, err := m.internal(a)
	if err != nil {
		return err
	}
	for _, p := range m.mutating {
		if !p.Handles(a.GetOperation()) {
			continue
		}
		waitForReady(p)
		m.sem.gates.Do(func() { err = p.Admit(ctx, attrs, o) })
		if err != nil {
			return err
		}
	}
	return fromInternal(attrs.GetObject(), a.GetObject())
}

// Validate runs the validating plugins on a's objects as kube's internal types.
func (v validatingAdmission) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if !admitted[a.GetResource().GroupResource()] {
		return nil
	}
	attrs, err := v.internal(a)
	if err != nil {
		return err
	}
	for _, p := range v.validating {
		if !p.Handles(a.GetOperation()) {
			continue
		}
		waitForReady(p)
		v.sem.gates.Do(func() { err = p.Validate(ctx, attrs, o) })
		if err != nil {
			return err
		}
	}
	return nil
}

// waitForReady waits, as kube's plugins do themselves, until p has read what it
// reads (its informers), or for the time kube's admission.Handler allows; outside
// Gates.Do, so that no other server's calls wait meanwhile.
func waitForReady(p any) {
	if r, ok := p.(interface{ WaitForReady() bool }); ok {
		r.WaitForReady()
	}
}

// internal returns a with its objects as kube's internal types.
func (k *kubeAdmission) internal(a admission.Attributes) (admission.Attributes, error) {
	obj, err := toInternal(a.GetObject())
	if err != nil {
		return nil, err
	}
	old, err := toInternal(a.GetOldObject())
	if err != nil {
		return nil, err
	}
	return admission.NewAttributesRecord(obj, old, a.GetKind(), a.GetNamespace(), a.GetName(), a.GetResource(),
		a.GetSubresource(), a.GetOperation(), a.GetOperationOptions(), a.IsDryRun(), a.GetUserInfo()), nil
}

// toInternal returns obj, an object of a request (unstructured, or nil), as kube's
// internal type of its kind.
func toInternal(obj runtime.Object) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return obj, nil
	}
	gvk := u.GroupVersionKind()
	ext, err := typed(gvk, u.Object)
	if err != nil {
		return nil, err
	}
	internal, err := legacyscheme.Scheme.UnsafeConvertToVersion(ext, runtime.InternalGroupVersioner)
	if err != nil {
		return nil, fmt.Errorf("converting %s to kube's internal version: %w", gvk, err)
	}
	return internal, nil
}

// fromInternal writes internal, the internal form of into, back into into, in
// into's version.
func fromInternal(internal, into runtime.Object) error {
	u, ok := into.(*unstructured.Unstructured)
	if !ok || u == nil || internal == into {
		return nil
	}
	gvk := u.GroupVersionKind()
	ext, err := legacyscheme.Scheme.ConvertToVersion(internal, gvk.GroupVersion())
	if err != nil {
		return fmt.Errorf("converting %s from kube's internal version: %w", gvk, err)
	}
	m, err := typedconv.ToUnstructured(ext)
	if err != nil {
		return fmt.Errorf("%s from kube's type: %w", gvk, err)
	}
	u.Object = m
	u.SetGroupVersionKind(gvk)
	return nil
}
