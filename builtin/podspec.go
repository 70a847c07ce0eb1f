package builtin

import (
	"strings"
)

// defaultPodSpec sets Kubernetes' defaults of a pod spec and its containers.
func defaultPodSpec(pod map[string]interface{}) {
	setDefault(pod, "dnsPolicy", "ClusterFirst")
	setDefault(pod, "restartPolicy", "Always")
	setDefault(pod, "terminationGracePeriodSeconds", int64(30))
	setDefault(pod, "schedulerName", "default-scheduler")
	setDefault(pod, "securityContext", map[string]interface{}{})
	for _, list := range []string{"initContainers", "containers"} {
		containers, _ := pod[list].([]interface{})
		for _, c := range containers {
			container, ok := c.(map[string]interface{})
			if !ok {
				continue
			}
			image, _ := container["image"].(string)
			setDefault(container, "imagePullPolicy", pullPolicy(image))
			setDefault(container, "terminationMessagePath", "/dev/termination-log")
			setDefault(container, "terminationMessagePolicy", "File")
			ports, _ := container["ports"].([]interface{})
			for _, p := range ports {
				if port, ok := p.(map[string]interface{}); ok {
					setDefault(port, "protocol", "TCP")
				}
			}
		}
	}
}

// pullPolicy is the default pull policy of an image: Always for the latest tag (or
// none, which means latest), IfNotPresent for any other tag or a digest.
func pullPolicy(image string) string {
	if strings.Contains(image, "@") {
		return "IfNotPresent"
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i >= 0 && name[i+1:] != "latest" {
		return "IfNotPresent"
	}
	return "Always"
}

// child returns obj[key] as an object, creating it if absent. A value of another type
// is left alone, and a detached map returned, for validation to report.
func child(obj map[string]interface{}, key string) map[string]interface{} {
	switch v := obj[key].(type) {
	case map[string]interface{}:
		return v
	case nil:
		m := map[string]interface{}{}
		obj[key] = m
		return m
	}
	return map[string]interface{}{}
}

func setDefault(obj map[string]interface{}, key string, value interface{}) {
	if v, ok := obj[key]; !ok || v == nil {
		obj[key] = value
	}
}
