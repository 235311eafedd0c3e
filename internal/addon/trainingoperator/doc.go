// Package trainingoperator runs Kubeflow's training operator
// (github.com/kubeflow/training-operator, v1) as a component of a local
// instance (berth up --with training-operator): its PyTorchJob, TFJob,
// XGBoostJob, PaddleJob and JAXJob controllers, without a gang scheduler
// and without its validating webhooks, which do not build against berth's
// controller-runtime (the controllers apply the kinds' defaults
// themselves). Its MPIJob (kubeflow.org/v1) is left out: the MPI
// Operator's MPIJob has the same group and kind, and berth queues one of
// the two (examples/configured/kinds.yaml).
package trainingoperator
