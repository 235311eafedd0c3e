package jobs

import "sigs.k8s.io/controller-runtime/pkg/controller"

// controllerOptions: Job reconciles are short and independent; a few in
// parallel keep a burst of new Jobs from queueing behind each other.
func controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: 8}
}
