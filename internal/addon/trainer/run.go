package trainer

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainercontrollers "github.com/kubeflow/trainer/v2/pkg/controller"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"

	"github.com/berth-dev/berth/internal/addon"
)

// Beside what Trainer's controllers need, the runner keeps its own webhook
// configuration.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;create;update

// ConfigName names the webhook configuration the runner keeps.
const ConfigName = "berth-trainer"

// validateTrainJob is where the TrainJob validation is served.
const validateTrainJob = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"

// Runner runs Trainer's controllers and its TrainJob validation.
var Runner = addon.Runner{
	Name: addon.Trainer.Component,
	AddToScheme: func(s *runtime.Scheme) error {
		if err := jobsetv1.AddToScheme(s); err != nil {
			return err
		}
		return trainerv1.AddToScheme(s)
	},
	Setup: func(ctx context.Context, mgr ctrl.Manager) error {
		runtimes, err := runtimecore.New(ctx, mgr.GetClient(), mgr.GetFieldIndexer())
		if err != nil {
			return fmt.Errorf("Trainer's runtimes: %w", err)
		}
		if failed, err := trainercontrollers.SetupControllers(mgr, runtimes, controller.Options{}); err != nil {
			return fmt.Errorf("Trainer's %s controller: %w", failed, err)
		}
		mgr.GetWebhookServer().Register(validateTrainJob,
			admission.WithValidator[*trainerv1.TrainJob](mgr.GetScheme(), validator{runtimes: runtimes}))
		return nil
	},
	Configurations: func(url string, caPEM []byte) []client.Object { return []client.Object{Configuration(url, caPEM)} },
}

// validator is Trainer's TrainJob validation: the TrainJob's runtime
// checks it (its runtimes' ValidateObjects), as Trainer's own webhook does.
type validator struct {
	runtimes map[string]trainerruntime.Runtime
}

func (v validator) validate(ctx context.Context, old, tj *trainerv1.TrainJob) (admission.Warnings, error) {
	key := trainerruntime.RuntimeRefToRuntimeRegistryKey(tj.Spec.RuntimeRef)
	r, ok := v.runtimes[key]
	if !ok {
		return nil, fmt.Errorf("TrainJob %s: spec.runtimeRef: %s is not a runtime Trainer has", tj.Name, key)
	}
	warnings, errs := r.ValidateObjects(ctx, old, tj)
	return warnings, errs.ToAggregate()
}

func (v validator) ValidateCreate(ctx context.Context, tj *trainerv1.TrainJob) (admission.Warnings, error) {
	return v.validate(ctx, nil, tj)
}

func (v validator) ValidateUpdate(ctx context.Context, old, tj *trainerv1.TrainJob) (admission.Warnings, error) {
	return v.validate(ctx, old, tj)
}

func (validator) ValidateDelete(context.Context, *trainerv1.TrainJob) (admission.Warnings, error) {
	return nil, nil
}

// Configuration is Trainer's TrainJob validation, called at url. It fails
// closed, as Trainer's own install does.
func Configuration(url string, caPEM []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	u := url + validateTrainJob
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigName, Labels: map[string]string{"app.kubernetes.io/managed-by": "berth"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "vtrainjob.trainer.berth.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{trainerv1.GroupVersion.Group},
					APIVersions: []string{trainerv1.GroupVersion.Version}, Resources: []string{"trainjobs"}}}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
