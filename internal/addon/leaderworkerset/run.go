package leaderworkerset

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/lws/pkg/controllers"
	"sigs.k8s.io/lws/pkg/webhooks"

	"github.com/berth-dev/berth/internal/addon"
)

// Beside what LeaderWorkerSet's controllers need, the runner keeps its own
// webhook configurations.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;create;update

// ConfigName names the webhook configurations the runner keeps.
const ConfigName = "berth-leaderworkerset"

// Webhook paths, as LeaderWorkerSet's webhooks register themselves.
const (
	mutateLWS   = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
	validateLWS = "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
	mutatePod   = "/mutate--v1-pod"
	validatePod = "/validate--v1-pod"
)

// Runner runs the LeaderWorkerSet controller: its reconcilers (of
// LeaderWorkerSets and of their pods) and its webhooks, without gang
// scheduling through another scheduler (none is there) and without
// DisaggregatedSets (their CRD is not installed).
var Runner = addon.Runner{
	Name:        addon.LeaderWorkerSet.Component,
	AddToScheme: lwsv1.AddToScheme,
	Setup: func(_ context.Context, mgr ctrl.Manager) error {
		if err := controllers.SetupIndexes(mgr.GetFieldIndexer()); err != nil {
			return err
		}
		if err := controllers.NewLeaderWorkerSetReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("leaderworkerset")).
			SetupWithManager(mgr); err != nil {
			return err
		}
		if err := controllers.NewPodReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("leaderworkerset"), nil).
			SetupWithManager(mgr); err != nil {
			return err
		}
		if err := webhooks.SetupLeaderWorkerSetWebhook(mgr); err != nil {
			return err
		}
		return webhooks.NewPodWebhook(nil).Setup(mgr)
	},
	Configurations: Configurations,
}

// Configurations are LeaderWorkerSet's webhooks, called at url:
// LeaderWorkerSets are defaulted and validated, and pods of
// LeaderWorkerSets (only those) are given their group's labels. They fail
// closed, as its own install does.
func Configurations(url string, caPEM []byte) []client.Object {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cc := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := url + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caPEM}
	}
	rule := func(group, version, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}}}
	}
	create, update := admissionregistrationv1.Create, admissionregistrationv1.Update
	lws := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return rule(lwsv1.GroupVersion.Group, lwsv1.GroupVersion.Version, "leaderworkersets", ops...)
	}
	ofLWS := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: lwsv1.SetNameLabelKey, Operator: metav1.LabelSelectorOpExists}}}
	meta := metav1.ObjectMeta{Name: ConfigName, Labels: map[string]string{"app.kubernetes.io/managed-by": "berth"}}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "mleaderworkerset.leaderworkerset.berth.dev", ClientConfig: cc(mutateLWS), Rules: lws(create, update),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		{Name: "mpod.leaderworkerset.berth.dev", ClientConfig: cc(mutatePod), Rules: rule("", "v1", "pods", create), ObjectSelector: ofLWS,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
	}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.ValidatingWebhook{
		{Name: "vleaderworkerset.leaderworkerset.berth.dev", ClientConfig: cc(validateLWS), Rules: lws(create, update),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		{Name: "vpod.leaderworkerset.berth.dev", ClientConfig: cc(validatePod), Rules: rule("", "v1", "pods", create, update), ObjectSelector: ofLWS,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
	}}
	return []client.Object{m, v}
}
