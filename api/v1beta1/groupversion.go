package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is berth.dev/v1beta1.
var GroupVersion = schema.GroupVersion{Group: "berth.dev", Version: "v1beta1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers berth's types with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

// objects lists every top-level type with its list type; each file adds its own.
var objects []runtime.Object

func register(o ...runtime.Object) { objects = append(objects, o...) }

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, objects...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
