// Package trainer runs Kubeflow Trainer's controller manager
// (github.com/kubeflow/trainer/v2) as a component of a local instance
// (berth up --with trainer): its TrainJob, TrainingRuntime and
// ClusterTrainingRuntime controllers, and its TrainJob validation, served
// on loopback. A TrainJob runs as a JobSet, so the JobSet addon runs too.
//
// Trainer's certificate rotation is left off (the runner makes the
// webhooks' certificate), as are its validation of runtimes (its
// registration does not build against berth's controller-runtime) and the
// gang-scheduling plugins' PodGroups (no coscheduling or Volcano scheduler
// runs here).
package trainer
