package kubesemantics

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestFlowSchemas(t *testing.T) {
	r := cpResource(t, "flowcontrol.apiserver.k8s.io", "flowschemas")
	ctx := t.Context()
	schema := func(precedence int32, level string) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "batch", ResourceVersion: "1"},
			Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: precedence, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "batch"}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true}},
				}}},
			Status: flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling", Status: "True"}}}}
	}
	created, errs := cpCreate(ctx, t, r, "v1", schema(0, "workload-low"))
	cpWant(t, "a valid FlowSchema, its precedence defaulted", errs)
	var fs flowcontrolv1.FlowSchema
	cpInto(t, created, &fs)
	if fs.Spec.MatchingPrecedence != 1000 || len(fs.Status.Conditions) != 0 || fs.Generation != 1 {
		t.Errorf("created: precedence %d, status %+v, generation %d; want 1000, none, 1", fs.Spec.MatchingPrecedence, fs.Status, fs.Generation)
	}
	_, errs = cpCreate(ctx, t, r, "v1", schema(1, ""))
	cpWant(t, "precedence 1, no priority level", errs, "spec.matchingPrecedence: Invalid value", "spec.priorityLevelConfiguration.name: Required value")

	updated, errs := cpUpdate(ctx, t, r, "v1", "", schema(2000, "workload-low"), created)
	cpWant(t, "a new precedence", errs)
	cpInto(t, updated, &fs)
	if fs.Generation != 2 || len(fs.Status.Conditions) != 0 {
		t.Errorf("updated: generation %d, status %+v; want 2 and the stored status", fs.Generation, fs.Status)
	}
	status, errs := cpUpdate(ctx, t, r, "v1", "status", schema(5, "elsewhere"), updated)
	cpWant(t, "a status update", errs)
	cpInto(t, status, &fs)
	if fs.Spec.MatchingPrecedence != 2000 || len(fs.Status.Conditions) != 1 || fs.Generation != 2 {
		t.Errorf("after a status update: %+v", fs)
	}
	bad := schema(5, "elsewhere")
	bad.Status.Conditions[0].Type = ""
	_, errs = cpUpdate(ctx, t, r, "v1", "status", bad, updated)
	cpWant(t, "a condition without a type", errs, "status.conditions[0].type: Required value")
}

func TestPriorityLevelConfigurations(t *testing.T) {
	r := cpResource(t, "flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations")
	ctx := t.Context()
	limited := func(shares int32, response flowcontrolv1.LimitResponseType) *flowcontrolv1.PriorityLevelConfiguration {
		return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "batch", ResourceVersion: "1"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(shares),
					LimitResponse: flowcontrolv1.LimitResponse{Type: response}}}}
	}
	created, errs := cpCreate(ctx, t, r, "v1", limited(5, flowcontrolv1.LimitResponseTypeReject))
	cpWant(t, "a valid PriorityLevelConfiguration", errs)
	var pl flowcontrolv1.PriorityLevelConfiguration
	cpInto(t, created, &pl)
	if pl.Spec.Limited.LendablePercent == nil || *pl.Spec.Limited.LendablePercent != 0 || pl.Generation != 1 {
		t.Errorf("created: %+v, want lendablePercent defaulted to 0, generation 1", pl)
	}
	_, errs = cpCreate(ctx, t, r, "v1", limited(5, "Drop"))
	cpWant(t, "a limit response of type Drop", errs, "spec.limited.limitResponse.type: Unsupported value")
	_, errs = cpUpdate(ctx, t, r, "v1", "", limited(-1, flowcontrolv1.LimitResponseTypeReject), created)
	cpWant(t, "an update to negative shares", errs, "spec.limited.nominalConcurrencyShares: Invalid value")
}

// A priority level is validated in the version of the request: v1beta2 names the
// shares assuredConcurrencyShares.
func TestPriorityLevelValidatedInRequestVersion(t *testing.T) {
	r := cpResource(t, "flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations")
	_, errs := cpCreate(t.Context(), t, r, "v1beta2", &flowcontrolv1beta2.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: flowcontrolv1beta2.PriorityLevelConfigurationSpec{Type: flowcontrolv1beta2.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1beta2.LimitedPriorityLevelConfiguration{AssuredConcurrencyShares: -1,
				LimitResponse: flowcontrolv1beta2.LimitResponse{Type: flowcontrolv1beta2.LimitResponseTypeReject}}}})
	cpWant(t, "v1beta2, negative shares", errs, "spec.limited.assuredConcurrencyShares: Invalid value")
}
