package syncer

import (
	"context"
	"fmt"
	"net/http"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// Options configure Run.
type Options struct {
	translate.Options
	// Virtual and Host reach the two clusters.
	Virtual, Host *rest.Config
	// OwnerServiceAccount is the host ServiceAccount (in HostNamespace) that
	// owns every host object the syncer makes; default ServiceAccountName.
	OwnerServiceAccount string
	// HealthAddr serves /healthz and /readyz; MetricsAddr /metrics (its API
	// requests among them), "" for none.
	HealthAddr, MetricsAddr string
	// Workers is how many virtual Pods are synced at once.
	Workers int
}

// ServiceAccountName is the host ServiceAccount `berth vcluster create`
// makes for the syncer of virtual cluster vc.
func ServiceAccountName(vc string) string { return "berth-vcluster-" + vc }

// nodeNameIndex indexes host Pods by the node they run on.
const nodeNameIndex = "spec.nodeName"

// Run syncs until ctx ends.
func Run(ctx context.Context, o Options) error {
	if err := translate.ValidateName(o.VCluster); err != nil {
		return err
	}
	if o.HostNamespace == "" {
		return fmt.Errorf("no host namespace given")
	}
	if o.OwnerServiceAccount == "" {
		o.OwnerServiceAccount = ServiceAccountName(o.VCluster)
	}
	if o.Workers == 0 {
		o.Workers = 16
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	// The owner is read once, directly: the syncer cannot work without it.
	direct, err := client.New(o.Host, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	var sa corev1.ServiceAccount
	if err := direct.Get(ctx, client.ObjectKey{Namespace: o.HostNamespace, Name: o.OwnerServiceAccount}, &sa); err != nil {
		return fmt.Errorf("host ServiceAccount %s/%s, the owner of every host object of virtual cluster %s: %w",
			o.HostNamespace, o.OwnerServiceAccount, o.VCluster, err)
	}
	// As their controller: no host controller adopts a tenant's Pod, whatever
	// its labels.
	o.Owner = &metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: sa.Name, UID: sa.UID, Controller: ptr.To(true)}

	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	mgr, err := ctrl.NewManager(o.Virtual, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: o.MetricsAddr}, HealthProbeBindAddress: o.HealthAddr,
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		return fmt.Errorf("virtual cluster: %w", err)
	}
	mine := labels.SelectorFromSet(labels.Set{translate.Label: o.VCluster})
	host, err := cluster.New(o.Host, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Cache.DefaultTransform = cache.TransformStripManagedFields()
		co.Cache.DefaultNamespaces = map[string]cache.Config{o.HostNamespace: {}}
		co.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: mine}, &corev1.ConfigMap{}: {Label: mine},
			&corev1.Secret{}: {Label: mine}, &corev1.ServiceAccount{}: {Label: mine},
			&corev1.Service{}: {Label: mine},
			// Events about Pods only; the syncer copies those about its own.
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", "Pod")},
		}
	})
	if err != nil {
		return fmt.Errorf("host cluster: %w", err)
	}
	if err := host.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, nodeNameIndex, func(obj client.Object) []string {
		if n := obj.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.Add(host); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once both sides' caches have their first lists.
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) || !host.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("caches not synced yet")
		}
		return nil
	}); err != nil {
		return err
	}

	s := &syncer{opts: o.Options, virtual: mgr.GetClient(), host: host.GetClient(),
		recorder: mgr.GetEventRecorder("berth-vcluster-syncer")}
	toVirtual := func(_ context.Context, obj client.Object) []reconcile.Request {
		ns, name, _, ok := translate.Origin(obj, o.VCluster)
		if !ok {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("pods").For(&corev1.Pod{}).
		WatchesRawSource(source.Kind(host.GetCache(), client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(toVirtual))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(reconcile.Func(s.pod)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("jobs").For(&batchv1.Job{}).Complete(reconcile.Func(s.job)); err != nil {
		return err
	}
	nodeOf := func(_ context.Context, obj client.Object) []reconcile.Request {
		if n := obj.(*corev1.Pod).Spec.NodeName; n != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: n}}}
		}
		return nil
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("nodes").For(&corev1.Node{}).
		WatchesRawSource(source.Kind(host.GetCache(), client.Object(&corev1.Node{}), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Kind(host.GetCache(), client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(nodeOf))).
		Complete(reconcile.Func(s.node)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("events").
		WatchesRawSource(source.Kind(host.GetCache(), client.Object(&corev1.Event{}), &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(s.event)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("services").For(&corev1.Service{}).
		WatchesRawSource(source.Kind(host.GetCache(), client.Object(&corev1.Service{}), handler.EnqueueRequestsFromMapFunc(toVirtual))).
		Complete(reconcile.Func(s.service)); err != nil {
		return err
	}
	for _, kind := range []func() client.Object{
		func() client.Object { return &corev1.ConfigMap{} },
		func() client.Object { return &corev1.Secret{} },
		func() client.Object { return &corev1.ServiceAccount{} },
	} {
		r := &copies{syncer: s, newObj: kind}
		name := fmt.Sprintf("%T", kind())
		if err := ctrl.NewControllerManagedBy(mgr).Named(name[len("*v1."):] + "s").For(kind()).
			WatchesRawSource(source.Kind(host.GetCache(), kind(), handler.EnqueueRequestsFromMapFunc(toVirtual))).
			Complete(r); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// retry is how soon a Pod waiting for something the syncer does not watch
// for is looked at again.
const retry = 2 * time.Second

// getOrNil reads key into obj, and gives nil (and no error) when there is
// no such object: the syncer's decisions take "gone" as an input.
func getOrNil[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T) (T, error) {
	var none T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return none, err
	}
	return obj, nil
}
