package integration

import (
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
)

// servedBy returns the server IDs an APIService's served-by annotation lists.
func servedBy(s *apiregistrationv1.APIService) []string {
	ids := strings.Split(s.Annotations[aggregator.AnnotationServedBy], ",")
	slices.Sort(ids)
	return ids
}

func localAvailable(s *apiregistrationv1.APIService) bool {
	for _, c := range s.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			return c.Status == apiregistrationv1.ConditionTrue && c.Reason == "Local"
		}
	}
	return false
}

// TestLocalAPIServices: the servers keep an APIService for every group-version they
// serve, as kube-aggregator's auto-registration does (kube-apiserver's priorities,
// label automanaged onstart, or true for a CRD's group-version, Available with reason
// Local), created as a CRD comes and removed once it goes. A group-version one server
// serves and the other does not (batch/v1 off on server 1) stays registered while the
// server that serves it runs, and is removed once it stops. Local APIServices are not
// aggregated groups: discovery lists each group once.
func TestLocalAPIServices(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 1 {
			o.Compatibility.RuntimeConfig = []string{"batch/v1=false"}
		}
	}))
	ctx := t.Context()
	apis := aggregatorclient.NewForConfigOrDie(c.Servers[1].Config()).ApiregistrationV1().APIServices()
	both := []string{c.Servers[0].ServerID, c.Servers[1].ServerID}
	slices.Sort(both)

	t.Run("built-in group-versions", func(t *testing.T) {
		var list *apiregistrationv1.APIServiceList
		waitFor(t, "every local APIService served by both servers and Available", func() (bool, error) {
			var err error
			if list, err = apis.List(ctx, metav1.ListOptions{}); err != nil {
				return false, err
			}
			for i := range list.Items {
				s := &list.Items[i]
				want := both
				if s.Name == "v1.batch" {
					want = []string{c.Servers[0].ServerID}
				}
				if !slices.Equal(servedBy(s), want) || !localAvailable(s) {
					return false, nil
				}
			}
			return true, nil
		})
		byName := map[string]apiregistrationv1.APIService{}
		for _, s := range list.Items {
			byName[s.Name] = s
		}
		for name, want := range map[string][2]int32{"v1.": {18000, 1}, "v1.apps": {17800, 15}, "v2.autoscaling": {17500, 30}, "v1.batch": {17400, 15},
			"v1.rbac.authorization.k8s.io": {17000, 15}, "v1.scheduling.k8s.io": {16600, 15}} {
			s, ok := byName[name]
			if !ok || s.Spec.Service != nil || s.Spec.GroupPriorityMinimum != want[0] || s.Spec.VersionPriority != want[1] ||
				s.Labels[aggregator.LabelAutoManaged] != "onstart" {
				t.Fatalf("APIService %s = %+v (present %t)", name, s, ok)
			}
		}
		if _, ok := byName["v1.apiregistration.k8s.io"]; ok {
			t.Fatal("apiregistration.k8s.io has an APIService; Kubernetes' has none")
		}
	})

	t.Run("a CRD's group-version", func(t *testing.T) {
		// A local APIService a user made, without the label, is left alone (every
		// registry change queues all of them).
		mine := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.mine.example.com"},
			Spec: apiregistrationv1.APIServiceSpec{Group: "mine.example.com", Version: "v1", GroupPriorityMinimum: 100, VersionPriority: 1}}
		if _, err := apis.Create(ctx, mine, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			s, err := apis.Get(ctx, mine.Name, metav1.GetOptions{})
			if err != nil || !localAvailable(s) || s.Labels[aggregator.LabelAutoManaged] != "" {
				t.Errorf("the user's local APIService after a CRD came and went: %+v %v", s, err)
			}
		}()
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.local.example.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "local.example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
			},
		}
		crds := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions()
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "v1.local.example.com registered by both servers", func() (bool, error) {
			s, err := apis.Get(ctx, "v1.local.example.com", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && s.Labels[aggregator.LabelAutoManaged] == "true" && s.Spec.GroupPriorityMinimum == 1000 &&
				s.Spec.VersionPriority == 100 && s.Spec.Service == nil && slices.Equal(servedBy(s), both) && localAvailable(s), err
		})
		if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "v1.local.example.com removed", func() (bool, error) {
			_, err := apis.Get(ctx, "v1.local.example.com", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("discovery lists local groups once", func(t *testing.T) {
		groups, err := c.Servers[0].Clientset(t).Discovery().ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, g := range groups.Groups {
			if seen[g.Name] {
				t.Fatalf("group %s listed twice", g.Name)
			}
			seen[g.Name] = true
		}
		if !seen["apps"] {
			t.Fatal("apps is not discovered")
		}
	})

	t.Run("served by one server until it stops", func(t *testing.T) {
		before, err := apis.Get(ctx, "v1.batch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Server 1 does not serve batch/v1: restarting it leaves the APIService be.
		c.Servers[1].Restart(t)
		apis = aggregatorclient.NewForConfigOrDie(c.Servers[1].Config()).ApiregistrationV1().APIServices()
		after, err := apis.Get(ctx, "v1.batch", metav1.GetOptions{})
		if err != nil || after.UID != before.UID || !slices.Equal(servedBy(after), []string{c.Servers[0].ServerID}) {
			t.Fatalf("v1.batch after server 1 restarted: %+v %v", after, err)
		}
		c.Servers[0].Stop(t)
		waitFor(t, "v1.batch removed once no server serves it", func() (bool, error) {
			_, err := apis.Get(ctx, "v1.batch", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		// Each APIService is its own reconcile, v1.apps perhaps after v1.batch.
		waitFor(t, "v1.apps served by server 1 alone", func() (bool, error) {
			s, err := apis.Get(ctx, "v1.apps", metav1.GetOptions{})
			return err == nil && slices.Equal(servedBy(s), []string{c.Servers[1].ServerID}), err
		})
	})
}
