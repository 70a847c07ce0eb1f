package aggregator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/concordproject/concord/openapi"
	"k8s.io/apimachinery/pkg/util/managedfields"
	generatedopenapi "k8s.io/kube-aggregator/pkg/generated/openapi"

	"github.com/concordproject/concord/registry"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"
)

// GroupResource is the APIService resource.
var GroupResource = schema.GroupResource{Group: apiregistration.GroupName, Resource: "apiservices"}

// ErrStorageVersion means APIServices are stored in a version other than v1, the one
// Configure's hooks read.
var ErrStorageVersion = errors.New("APIServices must be stored in v1")

// scheme converts APIServices to kube-aggregator's internal form, which its
// validation takes.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// Configure gives APIServices kube-aggregator's defaults, and its validation of the
// object, its updates and its status. (The store drops the status of a new one: the availability
// controller writes it.)
func Configure(res *registry.Resource) error {
	if res.StorageVersion != apiregistrationv1.SchemeGroupVersion.Version {
		return fmt.Errorf("%w: stored in %s", ErrStorageVersion, res.StorageVersion)
	}
	res.TypeConverter = typeConverter
	res.GoDefinitions = goDefinitions
	res.Hooks = &registry.Hooks{
		// As kube-aggregator's: its defaults (a Service's port 443), and no generation.
		Default:      defaults,
		NoGeneration: true,
		Validate: func(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
			in, errs := internal(obj)
			if errs != nil {
				return errs
			}
			return validation.ValidateAPIService(ctx, in)
		},
		ValidateUpdate: func(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			in, errs := internal(obj)
			if errs != nil {
				return errs
			}
			was, errs := internal(old)
			if errs != nil {
				return errs
			}
			// The status subresource's updates change only the status: validate it,
			// and the rest as an update of the object.
			return append(validation.ValidateAPIServiceUpdate(ctx, in, was),
				validation.ValidateAPIServiceStatus(&in.Status, field.NewPath("status"))...)
		},
		// Names are <version>.<group>, which ValidateAPIService checks.
		ValidateName: func(string, bool) []string { return nil },
	}
	if res.HasPrinterColumns(printerColumns) {
		res.Hooks.TableCells = tableCells
	}
	return nil
}

// typeConverter is server-side apply's type converter of APIServices, from
// kube-aggregator's generated OpenAPI definitions, as kube-apiserver builds it.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	return openapi.GoTypeConverter(scheme, generatedopenapi.GetOpenAPIDefinitions, apiregistrationv1.APIService{}.OpenAPIModelName())
})

// goDefinitions describe APIServices as kube-apiserver publishes them in its OpenAPI
// documents: kube-aggregator's generated definitions.
var goDefinitions = &registry.GoDefinitions{Definitions: generatedopenapi.GetOpenAPIDefinitions, Scheme: scheme}

// defaults applies kube-aggregator's defaults of v1 to obj. An object that does not
// fit the v1 type is left as it is: validation refuses it.
func defaults(_ string, obj *unstructured.Unstructured) {
	typed := &apiregistrationv1.APIService{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return
	}
	scheme.Default(typed)
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return
	}
	obj.Object["spec"] = out["spec"]
}

// printerColumns are the columns kubectl shows; tableCells fills them.
var printerColumns = []string{"Service", "Available", "Age"}

// tableCells are kube-aggregator's cells of an APIService: its Service as
// namespace/name or Local, its Available condition's status with the reason when not
// True (Unknown without one), and its age.
func tableCells(obj *unstructured.Unstructured) []interface{} {
	service := "Local"
	if ref, ok, _ := unstructured.NestedMap(obj.Object, "spec", "service"); ok && ref != nil {
		service = fmt.Sprintf("%v/%v", ref["namespace"], ref["name"])
	}
	status := string(apiregistrationv1.ConditionUnknown)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] != string(apiregistrationv1.Available) {
			continue
		}
		status, _ = m["status"].(string)
		if reason, _ := m["reason"].(string); status != string(apiregistrationv1.ConditionTrue) && reason != "" {
			status = fmt.Sprintf("%s (%s)", status, reason)
		}
	}
	return []interface{}{service, status, metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}

// internal converts an APIService in v1 to kube-aggregator's internal form.
func internal(obj *unstructured.Unstructured) (*apiregistration.APIService, field.ErrorList) {
	v1 := &apiregistrationv1.APIService{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, v1); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	scheme.Default(v1)
	out := &apiregistration.APIService{}
	if err := scheme.Convert(v1, out, nil); err != nil {
		return nil, field.ErrorList{field.InternalError(nil, err)}
	}
	return out, nil
}
