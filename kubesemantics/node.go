package kubesemantics

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	nodeapi "k8s.io/kubernetes/pkg/api/node"
	"k8s.io/kubernetes/pkg/apis/node"
	nodevalidation "k8s.io/kubernetes/pkg/apis/node/validation"

	_ "k8s.io/kubernetes/pkg/apis/node/install" // node's types, defaults and conversions
)

func init() { groups = append(groups, nodeKinds) }

// nodeKinds are the strategies of group node.k8s.io.
func nodeKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Group: node.GroupName, Resource: "runtimeclasses"}: kind[*node.RuntimeClass]{
			validate: func(_ context.Context, rc *node.RuntimeClass) field.ErrorList {
				return nodevalidation.ValidateRuntimeClass(rc)
			},
			warnCreate: func(_ context.Context, rc *node.RuntimeClass) []string {
				return nodeapi.GetWarningsForRuntimeClass(rc)
			},
			validateUpdate: func(_ context.Context, rc, old *node.RuntimeClass) field.ErrorList {
				return append(nodevalidation.ValidateRuntimeClass(rc), nodevalidation.ValidateRuntimeClassUpdate(rc, old)...)
			},
			warnUpdate: func(_ context.Context, rc, _ *node.RuntimeClass) []string {
				return nodeapi.GetWarningsForRuntimeClass(rc)
			},
			declarative: func(context.Context, *node.RuntimeClass, *node.RuntimeClass) rest.DeclarativeValidationConfig {
				return rest.DeclarativeValidationConfig{NormalizationRules: nodevalidation.NodeNormalizationRules}
			},
		}.erase(),
	}
}
