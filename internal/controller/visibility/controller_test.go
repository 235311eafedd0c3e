package visibility

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// On a local control plane the API server reaches the controller by an
// ExternalName for its loopback address; the APIService names the port.
func TestObjectsForALocalControlPlane(t *testing.T) {
	owner := &metav1.OwnerReference{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: OwnerCRD, UID: "u1"}
	api, svc, slice, err := Objects(Options{Namespace: "berth-system", URL: "https://127.0.0.1:20232", CABundle: []byte("ca"), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName || svc.Spec.ExternalName != "127.0.0.1" || svc.Name != ServiceName {
		t.Errorf("Service %s: %+v", svc.Name, svc.Spec)
	}
	s := api.Spec.Service
	if api.Name != "v1beta1.visibility.berth.dev" || s.Name != ServiceName || s.Namespace != "berth-system" || *s.Port != 20232 ||
		string(api.Spec.CABundle) != "ca" || api.Spec.InsecureSkipTLSVerify {
		t.Errorf("APIService %s: %+v", api.Name, api.Spec)
	}
	if slice != nil {
		t.Errorf("an EndpointSlice for an ExternalName Service: %+v", slice)
	}
	if len(api.OwnerReferences) != 1 || api.OwnerReferences[0].UID != "u1" {
		t.Errorf("APIService owners %+v, want the CRD", api.OwnerReferences)
	}
}

// In a cluster the Service has no selector: its one endpoint is the leader.
func TestObjectsInACluster(t *testing.T) {
	api, svc, slice, err := Objects(Options{Namespace: "berth-system", PodIP: "10.1.2.3", Port: 9443})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.Selector) != 0 || svc.Spec.Ports[0].Port != 443 {
		t.Errorf("Service: %+v", svc.Spec)
	}
	if *api.Spec.Service.Port != 443 {
		t.Errorf("APIService port %d, want the Service's 443", *api.Spec.Service.Port)
	}
	if slice.Labels[discoveryv1.LabelServiceName] != ServiceName || slice.AddressType != discoveryv1.AddressTypeIPv4 ||
		slice.Endpoints[0].Addresses[0] != "10.1.2.3" || *slice.Ports[0].Port != 9443 || *slice.Ports[0].Name != svc.Spec.Ports[0].Name {
		t.Errorf("EndpointSlice: %+v", slice)
	}
	if _, _, slice, _ := Objects(Options{Namespace: "n", PodIP: "fd00::1", Port: 9443}); slice.AddressType != discoveryv1.AddressTypeIPv6 {
		t.Errorf("an IPv6 pod address gives an %s slice", slice.AddressType)
	}
	// Owned by the controller's ServiceAccount, they go when berth is
	// uninstalled; the APIService keeps its own owner.
	sa := &metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: "berth-controller", UID: "sa-uid"}
	crd := &metav1.OwnerReference{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: OwnerCRD, UID: "crd-uid"}
	api, svc, slice, err = Objects(Options{Namespace: "berth-system", PodIP: "10.1.2.3", Port: 9443, NamespaceOwner: sa, Owner: crd})
	if err != nil {
		t.Fatal(err)
	}
	if len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].UID != "sa-uid" || len(slice.OwnerReferences) != 1 || slice.OwnerReferences[0].UID != "sa-uid" {
		t.Errorf("owners: Service %v, EndpointSlice %v; want the ServiceAccount", svc.OwnerReferences, slice.OwnerReferences)
	}
	if len(api.OwnerReferences) != 1 || api.OwnerReferences[0].UID != "crd-uid" {
		t.Errorf("APIService owners %v; want the CRD", api.OwnerReferences)
	}
}

func TestObjectsRefuseWhatCannotBeReached(t *testing.T) {
	for _, c := range []struct {
		o    Options
		says string
	}{
		{Options{}, "neither a webhook URL nor a pod IP"},
		{Options{URL: "https://127.0.0.1"}, "names no port"},
		{Options{URL: "::"}, "not an https://host:port URL"},
		{Options{PodIP: "pod-1"}, `pod IP "pod-1"`},
	} {
		if _, _, _, err := Objects(c.o); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Objects(%+v) = %v, want an error saying %q", c.o, err, c.says)
		}
	}
}

// With a certificate that cert-manager provides (no CA bundle given), the
// leader registering the API keeps the bundle cert-manager's CA injector
// wrote in the APIService; with its own, it writes that.
func TestRegisterKeepsAnInjectedCABundle(t *testing.T) {
	ctx := context.Background()
	scheme := registerScheme(t)
	for _, tc := range []struct{ given, want string }{{"", "injected"}, {"berth's", "berth's"}} {
		o := Options{Namespace: "berth-system", PodIP: "10.0.0.5", Port: 9443, CABundle: []byte(tc.given)}
		api, _, _, err := Objects(o)
		if err != nil {
			t.Fatal(err)
		}
		api.Spec.CABundle = []byte("injected")
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: OwnerCRD, UID: "crd-uid"}}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd, api).Build()
		if err := register(ctx, c, c, o); err != nil {
			t.Fatal(err)
		}
		var have apiregistrationv1.APIService
		if err := c.Get(ctx, client.ObjectKeyFromObject(api), &have); err != nil {
			t.Fatal(err)
		}
		if string(have.Spec.CABundle) != tc.want {
			t.Errorf("given CA bundle %q: the APIService has %q; want %q", tc.given, have.Spec.CABundle, tc.want)
		}
		if have.Spec.Service == nil || have.Spec.Service.Name != ServiceName || len(have.OwnerReferences) != 1 {
			t.Errorf("given CA bundle %q: APIService %+v, owners %v; want it registered", tc.given, have.Spec, have.OwnerReferences)
		}
	}
}

// A renewed webhook certificate's CA bundle reaches the APIService; with
// no APIService (berth uninstalled while a replica stops) nothing is made.
func TestTrustCA(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := apiregistrationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	if err := TrustCA(ctx, c, []byte("new")); err != nil {
		t.Errorf("without an APIService: %v", err)
	}
	var list apiregistrationv1.APIServiceList
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 0 {
		t.Errorf("without an APIService, TrustCA made %d (%v)", len(list.Items), err)
	}
	api, _, _, err := Objects(Options{Namespace: "berth-system", PodIP: "10.0.0.5", Port: 9443, CABundle: []byte("old")})
	if err != nil {
		t.Fatal(err)
	}
	c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(api).Build()
	if err := TrustCA(ctx, c, []byte("new")); err != nil {
		t.Fatal(err)
	}
	var have apiregistrationv1.APIService
	if err := c.Get(ctx, client.ObjectKeyFromObject(api), &have); err != nil {
		t.Fatal(err)
	}
	if string(have.Spec.CABundle) != "new" || have.Spec.Service == nil {
		t.Errorf("APIService after TrustCA: %+v", have.Spec)
	}
}

// The APIService is the install's (the chart's, berth up's): the leader
// that finds none (berth uninstalled while it stops) says so and makes
// none, since an APIService no server answers stalls every namespace
// deletion, and since berth may make no APIService at all (one that could
// make any could serve any API group). One the install made it fills in.
func TestRegisterMakesNoAPIService(t *testing.T) {
	ctx := context.Background()
	scheme := registerScheme(t)
	for _, o := range []Options{
		{Namespace: "berth-system", PodIP: "10.0.0.5", Port: 9443, CABundle: []byte("ca")},
		{Namespace: "berth-system", URL: "https://127.0.0.1:20232", CABundle: []byte("ca")},
	} {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: OwnerCRD, UID: "crd-uid"}}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd).Build()
		err := register(ctx, c, c, o)
		getErr := c.Get(ctx, client.ObjectKey{Name: APIServiceName}, &apiregistrationv1.APIService{})
		if err == nil || !strings.Contains(err.Error(), APIServiceName) || getErr == nil {
			t.Errorf("%+v, without the APIService: register %v, APIService %v; want an error naming it and none made", o, err, getErr)
		}
		installed := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: APIServiceName}}
		if err := c.Create(ctx, installed); err != nil {
			t.Fatal(err)
		}
		if err := register(ctx, c, c, o); err != nil {
			t.Fatalf("%+v, with the APIService installed: %v", o, err)
		}
		var have apiregistrationv1.APIService
		if err := c.Get(ctx, client.ObjectKey{Name: APIServiceName}, &have); err != nil || string(have.Spec.CABundle) != "ca" || have.Spec.Service == nil {
			t.Errorf("%+v: the installed APIService after register: %+v, %v; want it filled in", o, have.Spec, err)
		}
	}
}

// registerScheme knows what register reads and writes.
func registerScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}
