package trainingoperator

import (
	"context"
	"fmt"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/config"
	trainingcontrollers "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/addon"
)

// Kinds are the kinds whose controllers run: all the operator has but
// MPIJob.
var Kinds = []string{kubeflowv1.PyTorchJobKind, kubeflowv1.TFJobKind, kubeflowv1.XGBoostJobKind,
	kubeflowv1.PaddleJobKind, kubeflowv1.JAXJobKind}

// threads is how many objects of each kind are reconciled at once: the
// operator's default.
const threads = 1

// Runner runs the operator's controllers.
var Runner = addon.Runner{
	Name:        addon.TrainingOperator.Component,
	AddToScheme: kubeflowv1.AddToScheme,
	Setup: func(_ context.Context, mgr ctrl.Manager) error {
		// What the operator's own flags default to: a PyTorchJob's workers
		// wait for its master in an init container of this image, from the
		// operator's built-in template (no template file).
		config.Config.PyTorchInitContainerImage = config.PyTorchInitContainerImageDefault
		config.Config.PyTorchInitContainerMaxTries = config.PyTorchInitContainerMaxTriesDefault
		config.Config.MPIKubectlDeliveryImage = config.MPIKubectlDeliveryImageDefault
		for _, kind := range Kinds {
			setup, ok := trainingcontrollers.SupportedSchemeReconciler[kind]
			if !ok {
				return fmt.Errorf("the training operator has no %s controller", kind)
			}
			if err := setup(mgr, common.GenNonGangSchedulerSetupFunc(), threads); err != nil {
				return fmt.Errorf("the training operator's %s controller: %w", kind, err)
			}
		}
		return nil
	},
	Configurations: func(string, []byte) []client.Object { return nil },
}
