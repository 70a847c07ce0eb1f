package builtin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"

	"github.com/concordproject/concord/registry"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var secretsGR = schema.GroupResource{Resource: "secrets"}

// maxSecretSize is the most a Secret's data may hold, in bytes, as in Kubernetes.
const maxSecretSize = 1 << 20

// secretColumns are the printer columns secretTableCells fills, the catalog's.
var secretColumns = []string{"Type", "Data", "Age"}

// requiredKeys are the keys each type of Secret must have (one of them for basic
// auth, which secretTypeErrors checks apart).
var requiredKeys = map[corev1.SecretType][]string{
	corev1.SecretTypeDockercfg:        {corev1.DockerConfigKey},
	corev1.SecretTypeDockerConfigJson: {corev1.DockerConfigJsonKey},
	corev1.SecretTypeSSHAuth:          {corev1.SSHAuthPrivateKey},
	corev1.SecretTypeTLS:              {corev1.TLSCertKey, corev1.TLSPrivateKeyKey},
}

// dockerKeys are the keys of the docker config types, which must hold JSON.
var dockerKeys = map[corev1.SecretType]string{
	corev1.SecretTypeDockercfg:        corev1.DockerConfigKey,
	corev1.SecretTypeDockerConfigJson: corev1.DockerConfigJsonKey,
}

// configureSecrets gives core Secrets what Kubernetes' API server gives them:
// stringData merged into data (and never stored), type Opaque by default, the keys
// each type requires, key names and a size bound, immutability (of the type always,
// of the data once immutable is set), the type field selector, and kubectl's columns.
func configureSecrets(res *registry.Resource) error {
	for i := range res.Versions {
		res.Versions[i].SelectableFields = append(res.Versions[i].SelectableFields, apiextensionsv1.SelectableField{JSONPath: ".type"})
	}
	res.Hooks = &registry.Hooks{
		PrepareForCreate: func(_ context.Context, obj *unstructured.Unstructured) { prepareSecret(obj.Object) },
		PrepareForUpdate: func(_ context.Context, obj, _ *unstructured.Unstructured) { prepareSecret(obj.Object) },
		Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
			return validateSecret(obj.Object)
		},
		ValidateUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			return append(validateSecret(obj.Object), validateSecretUpdate(obj.Object, old.Object)...)
		},
	}
	if res.HasPrinterColumns(secretColumns) {
		res.Hooks.TableCells = secretTableCells
	}
	return nil
}

// prepareSecret merges stringData into data (stringData wins) and drops it, and
// defaults the type to Opaque.
func prepareSecret(obj map[string]interface{}) {
	if sd, ok := obj["stringData"].(map[string]interface{}); ok {
		data, _ := obj["data"].(map[string]interface{})
		if data == nil {
			data = map[string]interface{}{}
		}
		for k, v := range sd {
			s, _ := v.(string)
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
		obj["data"] = data
	}
	delete(obj, "stringData")
	if t, _ := obj["type"].(string); t == "" {
		obj["type"] = string(corev1.SecretTypeOpaque)
	}
}

// validateSecret checks a Secret as Kubernetes' validation does: key names, total
// size, and what its type requires.
func validateSecret(obj map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	dataPath := field.NewPath("data")
	data, _ := obj["data"].(map[string]interface{})
	size := 0
	for key, v := range data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		s, _ := v.(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<value omitted>", "must be base64 encoded: "+err.Error()))
		}
		size += len(b)
	}
	if size > maxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", maxSecretSize))
	}
	return append(errs, secretTypeErrors(obj, data)...)
}

// secretTypeErrors checks the keys and annotations a Secret's type requires.
func secretTypeErrors(obj map[string]interface{}, data map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	typ, _ := obj["type"].(string)
	dataPath := field.NewPath("data")
	switch corev1.SecretType(typ) {
	case corev1.SecretTypeServiceAccountToken:
		annotations, _, _ := unstructured.NestedStringMap(obj, "metadata", "annotations")
		if annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeBasicAuth:
		if data[corev1.BasicAuthUsernameKey] == nil && data[corev1.BasicAuthPasswordKey] == nil {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""), field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	}
	for _, key := range requiredKeys[corev1.SecretType(typ)] {
		if data[key] == nil {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	if key, ok := dockerKeys[corev1.SecretType(typ)]; ok && data[key] != nil {
		s, _ := data[key].(string)
		b, _ := base64.StdEncoding.DecodeString(s)
		if err := json.Unmarshal(b, new(map[string]interface{})); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	return errs
}

// validateSecretUpdate checks what may not change: the type, and once a Secret is
// immutable, its data and immutability.
func validateSecretUpdate(obj, old map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	if obj["type"] != old["type"] {
		errs = append(errs, field.Invalid(field.NewPath("type"), obj["type"], "field is immutable"))
	}
	if wasImmutable, _ := old["immutable"].(bool); wasImmutable {
		if now, _ := obj["immutable"].(bool); !now {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(obj["data"], old["data"]) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return errs
}

// secretTableCells prints TYPE, DATA (the number of keys) and AGE as kubectl does.
func secretTableCells(obj *unstructured.Unstructured) []interface{} {
	typ, _, _ := unstructured.NestedString(obj.Object, "type")
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	return []interface{}{typ, int64(len(data)), metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}
