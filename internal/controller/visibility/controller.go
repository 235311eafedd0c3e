package visibility

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/internal/upsert"
	"github.com/berth-dev/berth/internal/visibility"
)

// Only its own APIService, which its install makes (the chart; berth up):
// one that could make any could serve any API group of the cluster.
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,resourceNames=v1beta1.visibility.berth.dev,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=services,verbs=get;create;update
// +kubebuilder:rbac:groups=discovery.k8s.io,namespace=berth-system,resources=endpointslices,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,resourceNames=extension-apiserver-authentication,verbs=get
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=workloads.berth.dev,verbs=get

const (
	// ServiceName is the Service the APIService names.
	ServiceName = "berth-visibility"
	// APIServiceName registers the API group and version.
	APIServiceName = visibilityv1.Version + "." + visibilityv1.GroupName
)

// Options say where the API server reaches the controller.
type Options struct {
	// Namespace holds the Service.
	Namespace string
	// URL, on a local control plane, is the webhook server's base URL
	// (https://127.0.0.1:9443): the Service is an ExternalName for its host,
	// and the APIService names its port.
	URL string
	// PodIP, in a cluster, is this replica's address; Port is the webhook
	// server's. The leader writes them as the Service's only endpoint.
	PodIP string
	Port  int
	// CABundle verifies the webhook server's certificate. Empty, the
	// certificate's provider (cert-manager's CA injector) fills it in and
	// berth keeps what it wrote.
	CABundle []byte
	// CurrentCA, when set, is the CA bundle as it is now (berth renews its
	// certificate while it runs): the leader registers with it, not with
	// CABundle as it was at start.
	CurrentCA func() []byte
	// Owner, when set, owns the APIService: berth's Workload CRD, so that
	// removing berth's CRDs removes the APIService too, rather than leave
	// one no server answers (which stalls every namespace deletion).
	Owner *metav1.OwnerReference
	// NamespaceOwner, when set, owns the Service and its endpoint: the
	// controller's ServiceAccount in a cluster, so that uninstalling berth
	// removes them.
	NamespaceOwner *metav1.OwnerReference
}

// OwnerCRD is the CustomResourceDefinition the APIService belongs to.
const OwnerCRD = "workloads.berth.dev"

// Objects are what registers the API: the APIService, its Service and, in
// a cluster, the leader's endpoint. Pure.
func Objects(o Options) (*apiregistrationv1.APIService, *corev1.Service, *discoveryv1.EndpointSlice, error) {
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/managed-by": "berth"}}
	}
	svc := &corev1.Service{ObjectMeta: meta(ServiceName, o.Namespace)}
	var port int32 = 443
	var slice *discoveryv1.EndpointSlice
	switch {
	case o.URL != "":
		u, err := url.Parse(o.URL)
		if err != nil || u.Hostname() == "" {
			return nil, nil, nil, fmt.Errorf("webhook URL %q: not an https://host:port URL", o.URL)
		}
		p, err := strconv.ParseUint(u.Port(), 10, 16)
		if err != nil || p == 0 {
			return nil, nil, nil, fmt.Errorf("webhook URL %q: names no port", o.URL)
		}
		port = int32(p)
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: u.Hostname()}
	case o.PodIP != "":
		ip := net.ParseIP(o.PodIP)
		if ip == nil {
			return nil, nil, nil, fmt.Errorf("pod IP %q: not an IP address", o.PodIP)
		}
		family := discoveryv1.AddressTypeIPv4
		if ip.To4() == nil {
			family = discoveryv1.AddressTypeIPv6
		}
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "https", Port: port, TargetPort: intstr.FromInt(o.Port)}}}
		slice = &discoveryv1.EndpointSlice{ObjectMeta: meta(ServiceName+"-leader", o.Namespace), AddressType: family,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{o.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(o.Port)), Protocol: ptr.To(corev1.ProtocolTCP)}}}
		slice.Labels[discoveryv1.LabelServiceName] = ServiceName
		slice.Labels[discoveryv1.LabelManagedBy] = "berth.dev"
	default:
		return nil, nil, nil, fmt.Errorf("neither a webhook URL nor a pod IP: the API server would have no way to reach the visibility API")
	}
	api := &apiregistrationv1.APIService{ObjectMeta: meta(APIServiceName, ""), Spec: apiregistrationv1.APIServiceSpec{
		Group: visibilityv1.GroupName, Version: visibilityv1.Version,
		Service:              &apiregistrationv1.ServiceReference{Namespace: o.Namespace, Name: ServiceName, Port: ptr.To(port)},
		CABundle:             o.CABundle,
		GroupPriorityMinimum: 100, VersionPriority: 100,
	}}
	if o.Owner != nil {
		api.OwnerReferences = []metav1.OwnerReference{*o.Owner}
	}
	if o.NamespaceOwner != nil {
		svc.OwnerReferences = []metav1.OwnerReference{*o.NamespaceOwner}
		if slice != nil {
			slice.OwnerReferences = []metav1.OwnerReference{*o.NamespaceOwner}
		}
	}
	return api, svc, slice, nil
}

// Setup serves the API on the manager's webhook server and, once this
// replica leads, registers it. lines are the scheduler's queues; synced
// says when they hold the cluster's workloads.
func Setup(mgr ctrl.Manager, lines visibility.Lines, synced func() bool, proxy visibility.FrontProxy, o Options) error {
	if _, _, _, err := Objects(o); err != nil {
		return fmt.Errorf("visibility API: %w", err)
	}
	elected := mgr.Elected()
	srv := &visibility.Server{Lines: lines, Proxy: proxy, Clock: clock.RealClock{}, Ready: func() error {
		select {
		case <-elected:
		default:
			return visibility.ErrNotLeading
		}
		if !synced() {
			return visibility.ErrNotSynced
		}
		return nil
	}}
	mgr.GetWebhookServer().Register(visibility.Path, srv)
	mgr.GetWebhookServer().Register(visibility.Path+"/", srv)
	mgr.GetWebhookServer().Register(visibility.OpenAPIPath, srv)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		log := ctrl.LoggerFrom(ctx).WithName("visibility")
		// Retried until it takes: the API is unreachable until registered.
		_ = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: 1 << 30},
			func(ctx context.Context) (bool, error) {
				o := o
				if o.CurrentCA != nil {
					o.CABundle = o.CurrentCA()
				}
				if err := register(ctx, mgr.GetClient(), mgr.GetAPIReader(), o); err != nil {
					log.Error(err, "registering the visibility API; trying again")
					return false, nil
				}
				return true, nil
			})
		<-ctx.Done()
		return nil
	}))
}

// TrustCA sets the CA bundle of the APIService, when it exists, to ca: the
// webhook certificate was renewed.
func TrustCA(ctx context.Context, c client.Client, ca []byte) error {
	var api apiregistrationv1.APIService
	if err := c.Get(ctx, client.ObjectKey{Name: APIServiceName}, &api); err != nil {
		return client.IgnoreNotFound(err)
	}
	if bytes.Equal(api.Spec.CABundle, ca) {
		return nil
	}
	orig := api.DeepCopy()
	api.Spec.CABundle = ca
	return c.Patch(ctx, &api, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// register writes each object, creating it or bringing it to what is
// wanted, the APIService owned by berth's Workload CRD.
func register(ctx context.Context, c client.Client, r client.Reader, o Options) error {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := r.Get(ctx, client.ObjectKey{Name: OwnerCRD}, crd); err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: %w", OwnerCRD, err)
	}
	o.Owner = &metav1.OwnerReference{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition",
		Name: crd.Name, UID: crd.UID}
	api, svc, slice, err := Objects(o)
	if err != nil {
		return err
	}
	if err := upsert.Object(ctx, c, r, svc, func(have *corev1.Service) error {
		if have.Spec.Type != svc.Spec.Type {
			return fmt.Errorf("is of type %s, want %s: delete it and berth will make it anew", have.Spec.Type, svc.Spec.Type)
		}
		have.Spec.ExternalName, have.Spec.Ports = svc.Spec.ExternalName, svc.Spec.Ports
		if svc.OwnerReferences != nil {
			have.OwnerReferences = svc.OwnerReferences
		}
		return nil
	}); err != nil {
		return err
	}
	// berth's install makes the APIService (its chart, config/deploy, berth
	// up), and uninstalling removes it: a replica still stopping then must
	// not make it again, and the controller may make none.
	if err := r.Get(ctx, client.ObjectKeyFromObject(api), &apiregistrationv1.APIService{}); err != nil {
		return fmt.Errorf("APIService %s (installed with berth: its chart, config/deploy, or berth up): %w", api.Name, err)
	}
	if err := upsert.Object(ctx, c, r, api, func(have *apiregistrationv1.APIService) error {
		ca := have.Spec.CABundle
		have.Spec, have.OwnerReferences = api.Spec, api.OwnerReferences
		if len(o.CABundle) == 0 {
			have.Spec.CABundle = ca
		}
		return nil
	}); err != nil {
		return err
	}
	if slice == nil {
		return nil
	}
	return upsert.Object(ctx, c, r, slice, func(have *discoveryv1.EndpointSlice) error {
		have.Endpoints, have.Ports, have.AddressType = slice.Endpoints, slice.Ports, slice.AddressType
		if slice.OwnerReferences != nil {
			have.OwnerReferences = slice.OwnerReferences
		}
		return nil
	})
}
