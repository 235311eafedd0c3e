package ray

import (
	"context"

	configapi "github.com/ray-project/kuberay/ray-operator/apis/config/v1alpha1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	kuberay "github.com/ray-project/kuberay/ray-operator/controllers/ray"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/addon"
)

// concurrency is how many objects of each kind KubeRay reconciles at once:
// its operator's default.
const concurrency = configapi.DefaultReconcileConcurrency

// Runner runs KubeRay's controllers. The RayJob and RayService controllers
// reach a cluster's Ray dashboard at its head Service, as KubeRay's
// operator does.
var Runner = addon.Runner{
	Name:        addon.Ray.Component,
	AddToScheme: rayv1.AddToScheme,
	Setup: func(ctx context.Context, mgr ctrl.Manager) error {
		var config configapi.Configuration // KubeRay's defaults: its dashboard clients
		if err := kuberay.NewReconciler(ctx, mgr, kuberay.RayClusterReconcilerOptions{}).SetupWithManager(mgr, concurrency); err != nil {
			return err
		}
		if err := kuberay.NewRayServiceReconciler(ctx, mgr, config).SetupWithManager(mgr, concurrency); err != nil {
			return err
		}
		return kuberay.NewRayJobReconciler(ctx, mgr, kuberay.RayJobReconcilerOptions{}, config).SetupWithManager(mgr, concurrency)
	},
	Configurations: func(string, []byte) []client.Object { return nil },
}
