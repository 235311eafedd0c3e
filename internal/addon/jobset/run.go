package jobset

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/jobset/pkg/controllers"
	"sigs.k8s.io/jobset/pkg/webhooks"

	"github.com/berth-dev/berth/internal/addon"
)

// Beside what JobSet's controllers need, the runner keeps its own webhook
// configurations.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;create;update

// ConfigName names the webhook configurations the runner keeps.
const ConfigName = "berth-jobset"

// Webhook paths, as JobSet's webhooks register themselves.
const (
	mutateJobSet   = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
	validateJobSet = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
	mutatePod      = "/mutate--v1-pod"
	validatePod    = "/validate--v1-pod"
)

// Runner runs the JobSet controller: its reconcilers and webhooks.
var Runner = addon.Runner{
	Name:        addon.JobSet.Component,
	AddToScheme: jobsetv1.AddToScheme,
	Setup: func(ctx context.Context, mgr ctrl.Manager) error {
		if err := controllers.SetupJobSetIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		if err := controllers.SetupPodIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		if err := controllers.NewJobSetReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("jobset")).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := controllers.NewPodReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("pod")).SetupWithManager(mgr); err != nil {
			return err
		}
		return webhooks.Setup(mgr)
	},
	Configurations: func(url string, caPEM []byte) []client.Object {
		m, v := Configurations(url, caPEM)
		return []client.Object{m, v}
	},
}

// Configurations are JobSet's webhooks, called at url: JobSets are
// defaulted and validated, and pods of JobSets (only those) are given
// their exclusive placement. They fail closed, as JobSet's own install
// does: a JobSet is never created without its defaults.
func Configurations(url string, caPEM []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cc := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := url + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caPEM}
	}
	jobsets := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{jobsetv1.GroupVersion.Group}, APIVersions: []string{jobsetv1.GroupVersion.Version}, Resources: []string{"jobsets"}}}}
	}
	pods := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	ofJobSets := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: jobsetv1.JobSetNameKey, Operator: metav1.LabelSelectorOpExists}}}
	meta := metav1.ObjectMeta{Name: ConfigName, Labels: map[string]string{"app.kubernetes.io/managed-by": "berth"}}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "mjobset.jobset.berth.dev", ClientConfig: cc(mutateJobSet), Rules: jobsets(admissionregistrationv1.Create),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		{Name: "mpod.jobset.berth.dev", ClientConfig: cc(mutatePod), Rules: pods, ObjectSelector: ofJobSets,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
	}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.ValidatingWebhook{
		{Name: "vjobset.jobset.berth.dev", ClientConfig: cc(validateJobSet), Rules: jobsets(admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		{Name: "vpod.jobset.berth.dev", ClientConfig: cc(validatePod), Rules: pods, ObjectSelector: ofJobSets,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
	}}
	return m, v
}
