// Package trainjobs queues Kubeflow Trainer's TrainJobs
// (trainer.kubeflow.org/v1alpha1): each is one Workload, held through
// spec.suspend, with a pod set per replicated Job of the JobSet Trainer
// makes for it.
//
// berth does not work out a TrainJob's pods itself: Trainer makes the
// TrainJob's JobSet, suspended with it, from its runtime and the TrainJob's
// overrides, and the Workload asks for that JobSet's pods. Admitted, the
// TrainJob starts in two writes, since Trainer's validation lets its
// podTemplateOverrides change only while it is suspended: first an override
// per replicated Job carrying its flavors' node labels and tolerations, then,
// once Trainer's JobSet shows them and still asks for what was admitted,
// spec.suspend false. Running, a JobSet that asks for more than was admitted
// stops the TrainJob.
package trainjobs
