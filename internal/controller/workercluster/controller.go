package workercluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workercluster"
)

// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters/status,verbs=patch
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// DialTimeout bounds one attempt to reach a worker.
const DialTimeout = 10 * time.Second

// Reconciler keeps each WorkerCluster's Active condition true to what
// reaching the worker shows.
type Reconciler struct {
	client    client.Client
	rec       events.EventRecorder
	clock     clock.PassiveClock
	namespace string
	// dial reaches a worker and says which Kubernetes it runs.
	dial func(ctx context.Context, cfg *rest.Config) (string, error)

	mu       sync.Mutex
	failures map[string]int // failed attempts in a row, by WorkerCluster
}

// Setup registers the reconciler; namespace is where the kubeconfig
// Secrets are (the manager's cache must watch Secrets there only).
func Setup(mgr ctrl.Manager, namespace string) error {
	r := &Reconciler{client: mgr.GetClient(), rec: mgr.GetEventRecorder("berth-workercluster"), clock: clock.RealClock{},
		namespace: namespace, dial: serverVersion, failures: map[string]int{}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workercluster").
		// Its own status writes are no news: a spec change, the Secret, or
		// the next attempt brings it back.
		For(&berthv1.WorkerCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(UsersOf(r.client, namespace))).
		Complete(r)
}

// UsersOf maps a Secret in namespace to the WorkerClusters whose kubeconfig
// it holds.
func UsersOf(c client.Reader, namespace string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != namespace {
			return nil
		}
		var list berthv1.WorkerClusterList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, wc := range list.Items {
			if wc.Spec.KubeconfigSecret == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: wc.Name}})
			}
		}
		return out
	}
}

func serverVersion(ctx context.Context, cfg *rest.Config) (string, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = DialTimeout
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	v, err := d.ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// Reconcile reads the kubeconfig, reaches the worker and reports.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wc berthv1.WorkerCluster
	if err := r.client.Get(ctx, req.NamespacedName, &wc); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.failures, req.Name)
			r.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	reason, message := r.attempt(ctx, &wc)
	r.mu.Lock()
	if reason == workercluster.Connected {
		delete(r.failures, wc.Name)
	} else {
		r.failures[wc.Name]++
	}
	failures := r.failures[wc.Name]
	r.mu.Unlock()

	active := metav1.Condition{Type: berthv1.WorkerClusterActive, Status: metav1.ConditionFalse, Reason: reason,
		Message: message, ObservedGeneration: wc.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now())}
	if reason == workercluster.Connected {
		active.Status = metav1.ConditionTrue
	}
	old := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive)
	if old == nil || old.Status != active.Status || old.Reason != active.Reason || old.Message != active.Message ||
		old.ObservedGeneration != active.ObservedGeneration {
		orig := wc.DeepCopy()
		meta.SetStatusCondition(&wc.Status.Conditions, active)
		if err := r.client.Status().Patch(ctx, &wc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if old == nil || old.Reason != active.Reason {
			kind := corev1.EventTypeNormal
			if active.Status != metav1.ConditionTrue {
				kind = corev1.EventTypeWarning
			}
			r.rec.Eventf(&wc, nil, kind, reason, "Connect", "%s", message)
		}
	}
	switch reason {
	case workercluster.Connected, workercluster.Unreachable:
		return reconcile.Result{RequeueAfter: workercluster.NextAttempt(failures)}, nil
	}
	return reconcile.Result{}, nil // a change of the Secret or the WorkerCluster brings it back
}

// attempt says what reaching the worker leads to: a reason of the Active
// condition and a message.
func (r *Reconciler) attempt(ctx context.Context, wc *berthv1.WorkerCluster) (reason, message string) {
	cfg, reason, message := Kubeconfig(ctx, r.client, r.namespace, wc)
	if cfg == nil {
		return reason, message
	}
	version, err := r.dial(ctx, cfg)
	if err != nil {
		return workercluster.Unreachable, fmt.Sprintf("%s: %v", cfg.Host, err)
	}
	return workercluster.Connected, fmt.Sprintf("reached %s (Kubernetes %s)", cfg.Host, version)
}

// Kubeconfig reads a WorkerCluster's kubeconfig from its Secret in namespace
// and makes a client configuration of it (workercluster.Config). When it
// cannot, it returns nil with the Active reason and a message saying why.
func Kubeconfig(ctx context.Context, c client.Reader, namespace string, wc *berthv1.WorkerCluster) (cfg *rest.Config, reason, message string) {
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: namespace, Name: wc.Spec.KubeconfigSecret}
	if err := c.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, workercluster.SecretNotFound, fmt.Sprintf("Secret %s not found", key)
		}
		return nil, workercluster.SecretNotFound, fmt.Sprintf("reading Secret %s: %v", key, err)
	}
	data, ok := secret.Data[workercluster.SecretKey]
	if !ok {
		return nil, workercluster.BadKubeconfig, fmt.Sprintf("Secret %s has no key %q", key, workercluster.SecretKey)
	}
	cfg, err := workercluster.Config(data)
	if err != nil {
		return nil, workercluster.BadKubeconfig, fmt.Sprintf("Secret %s: %v", key, err)
	}
	return cfg, "", ""
}
