package ray

import (
	"context"

	configapi "github.com/ray-project/kuberay/ray-operator/apis/config/v1alpha1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	kuberay "github.com/ray-project/kuberay/ray-operator/controllers/ray"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/addon"
	"github.com/berth-dev/berth/internal/sim/raydashboard"
)

// concurrency is how many objects of each kind KubeRay reconciles at once:
// its operator's default.
const concurrency = configapi.DefaultReconcileConcurrency

// Runner runs KubeRay's controllers. The RayJob and RayService controllers
// reach the Ray dashboard of a cluster whose head runs on a real node at
// its head Service, as KubeRay's operator does; for one on a simulated
// node, the simulation answers (package raydashboard).
var Runner = addon.Runner{
	Name:        addon.Ray.Component,
	AddToScheme: rayv1.AddToScheme,
	Setup: func(ctx context.Context, mgr ctrl.Manager) error {
		var config configapi.Configuration // KubeRay's defaults: its dashboard clients
		if err := kuberay.NewReconciler(ctx, mgr, kuberay.RayClusterReconcilerOptions{}).SetupWithManager(mgr, concurrency); err != nil {
			return err
		}
		dashboards := raydashboard.Provider{Real: config, Clock: clock.RealClock{}}
		if err := kuberay.NewRayServiceReconciler(ctx, mgr, dashboards).SetupWithManager(mgr, concurrency); err != nil {
			return err
		}
		return kuberay.NewRayJobReconciler(ctx, mgr, kuberay.RayJobReconcilerOptions{}, dashboards).SetupWithManager(mgr, concurrency)
	},
	Configurations: func(string, []byte) []client.Object { return nil },
}
