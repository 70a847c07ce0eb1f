package kubesemantics

import "testing"

const runtimeClassManifest = `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
scheduling:
  nodeSelector: {runtime: gvisor}
  tolerations: [{key: runtime, operator: Exists}]
`

func TestRuntimeClasses(t *testing.T) {
	g := rigCatalog(t, nil, "node.k8s.io", "runtimeclasses")
	rc, errs, warnings := g.create("v1", runtimeClassManifest)
	rigWantErrs(t, "valid", errs)
	rigWantWarnings(t, "valid", warnings)
	rigWant(t, rc, "metadata.generation", nil)

	_, errs, _ = g.create("v1", `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: "Not A Handler"
overhead: {podFixed: {cpu: "-1"}}
`)
	rigWantErrs(t, "invalid", errs, "handler: Invalid value", "overhead.limits[cpu]: Invalid value")

	_, errs, warnings = g.create("v1", `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: old}
handler: runc
scheduling: {nodeSelector: {beta.kubernetes.io/arch: amd64}}
`)
	rigWantErrs(t, "deprecated label", errs)
	rigWantWarnings(t, "deprecated label", warnings, "scheduling.nodeSelector")

	stored := g.mustCreate("v1", runtimeClassManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { o["handler"] = "runc" })
	rigWantErrs(t, "handler change", errs, "handler: Invalid value")
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "scheduling.nodeSelector.runtime", "kata") })
	rigWantErrs(t, "scheduling change", errs)
}
