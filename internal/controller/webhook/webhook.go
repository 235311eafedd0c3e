// Package webhook prepares what the API server needs to call berth's admission
// webhooks: a serving certificate that berth manages itself (kept in a Secret,
// so every replica serves the same one) or that is provided (by cert-manager),
// and the MutatingWebhookConfiguration that points at the controller, by URL
// (local control plane) or by Service (in a cluster), with the CA bundle
// filled in when berth manages the certificate.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/integration/deployments"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/leaderworkersets"
	"github.com/berth-dev/berth/internal/integration/placement"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/integration/statefulsets"
	"github.com/berth-dev/berth/internal/integration/trainjobs"
	"github.com/berth-dev/berth/internal/pki"
)

// Only its own configuration, which its install makes (the chart; `berth
// up`, empty, for the controller to fill in): one that could make or change
// any other could intercept every request of the cluster.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=berth,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=secrets,verbs=get;create;update

// Options say where the webhook is and who may reach it.
type Options struct {
	// Namespace holds the certificate Secret.
	Namespace string
	// SecretName of the certificate Secret.
	SecretName string
	// ConfigName of the MutatingWebhookConfiguration.
	ConfigName string
	// CertDir receives tls.crt and tls.key for the webhook server.
	CertDir string
	// CertProvided says CertDir already holds them, kept fresh by someone
	// else (cert-manager, from the Secret), who also fills in the CA
	// bundle of the webhook configuration: berth writes neither.
	CertProvided bool
	// URL, when set, is the base URL the API server calls (https://127.0.0.1:9443).
	URL string
	// Service is used when URL is empty.
	Service     types.NamespacedName
	ServicePort int32
	// ManageAll queues every object of every kind on, in the namespaces
	// Managed selects (all when nil) but kube-system and berth's own: one
	// that asks for no queue when it is created goes to LocalQueue
	// "default". Namespaces labelled berth.dev/manage-pods=true are so
	// without it.
	ManageAll bool
	Managed   *metav1.LabelSelector
	// Integrations are the kinds queued; nil is all of them.
	Integrations integration.Set
	// Configured are the kinds queued from configuration that are on.
	Configured []*configured.Compiled
	// AlsoServes names other Services the API server reaches the same
	// server through (the visibility API's): the certificate covers them.
	AlsoServes []types.NamespacedName
	// Owner, when set, owns the certificate Secret: the controller's
	// ServiceAccount in a cluster, so that uninstalling berth removes it.
	Owner *metav1.OwnerReference
}

const (
	certValidity = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// jobGrows selects the Job requests berth's webhook must see: creations,
// and updates that raise parallelism or completions (a running Job would
// start the new pods before berth could queue it again).
const jobGrows = `request.operation == 'CREATE' ||
  (has(object.spec.parallelism) && (!has(oldObject.spec.parallelism) || object.spec.parallelism > oldObject.spec.parallelism)) ||
  (has(object.spec.completions) && has(oldObject.spec.completions) && object.spec.completions > oldObject.spec.completions)`

// unlabelledNow is true of a creation, and of an update that takes the
// queue label off (the object had one: objectSelector lets through an
// update when either side matches).
const unlabelledNow = `request.operation == 'CREATE' || (has(oldObject.metadata.labels) &&
  ('` + berthv1.QueueNameLabel + `' in oldObject.metadata.labels || '` + berthv1.KueueQueueNameLabel + `' in oldObject.metadata.labels))`

// templateQueued selects the Jobs whose pod template carries a queue label.
const templateQueued = `has(object.spec.template.metadata) && has(object.spec.template.metadata.labels) &&
  ('` + berthv1.QueueNameLabel + `' in object.spec.template.metadata.labels || '` + berthv1.KueueQueueNameLabel + `' in object.spec.template.metadata.labels)`

// jobSetTemplateQueued selects the JobSets a template of which (a
// replicated Job's, or its pods') carries a queue label.
const jobSetTemplateQueued = `object.spec.replicatedJobs.exists(r,
  (has(r.template.metadata) && has(r.template.metadata.labels) &&
    ('` + berthv1.QueueNameLabel + `' in r.template.metadata.labels || '` + berthv1.KueueQueueNameLabel + `' in r.template.metadata.labels)) ||
  (has(r.template.spec.template.metadata) && has(r.template.spec.template.metadata.labels) &&
    ('` + berthv1.QueueNameLabel + `' in r.template.spec.template.metadata.labels || '` + berthv1.KueueQueueNameLabel + `' in r.template.spec.template.metadata.labels)))`

// Prepare makes sure the certificate exists and is fresh, writes it for the
// server, and points the webhook configuration at the controller. It returns
// the CA bundle that verifies the server; none for a provided certificate,
// whose provider fills it in.
func Prepare(ctx context.Context, c client.Client, o Options, now time.Time) ([]byte, error) {
	var caPEM []byte
	var err error
	if o.CertProvided {
		err = provided(ctx, c, o)
	} else {
		caPEM, err = managed(ctx, c, o, now)
	}
	if err != nil {
		return nil, err
	}
	want := Configuration(o, caPEM)
	// A conflict is cert-manager's CA injector writing at the same moment.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var have admissionregistrationv1.MutatingWebhookConfiguration
		err := c.Get(ctx, types.NamespacedName{Name: o.ConfigName}, &have)
		switch {
		case apierrors.IsNotFound(err) && o.URL == "":
			// In a cluster berth's chart installs it, and uninstalling removes
			// it: a replica still stopping then must not make it again.
			return fmt.Errorf("not found: it is installed with berth (its chart, or config/deploy)")
		case apierrors.IsNotFound(err):
			return c.Create(ctx, want)
		case err != nil:
			return err
		}
		webhooks := slices.Clone(want.Webhooks)
		if o.CertProvided {
			keepCABundle(have.Webhooks, webhooks)
		}
		// Unchanged (as when Renew asks every hour), the API server stores
		// nothing.
		have.Webhooks = webhooks
		have.Labels = want.Labels
		return c.Update(ctx, &have)
	})
	if err != nil {
		return nil, fmt.Errorf("MutatingWebhookConfiguration %s: %w", o.ConfigName, err)
	}
	return caPEM, nil
}

// managed makes sure berth's own certificate exists and is fresh, and
// writes it for the server.
func managed(ctx context.Context, c client.Client, o Options, now time.Time) (caPEM []byte, err error) {
	caPEM, certPEM, keyPEM, err := ensureSecret(ctx, c, o, now)
	if err != nil {
		return nil, fmt.Errorf("webhook certificate (Secret %s/%s): %w", o.Namespace, o.SecretName, err)
	}
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.CertDir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	return caPEM, os.WriteFile(filepath.Join(o.CertDir, "tls.key"), keyPEM, 0o600)
}

// provided checks that the certificate given in CertDir can be served, and
// makes its Secret, when there is one, owned by Owner: cert-manager does
// not delete the Secrets it writes, and uninstalling berth should.
func provided(ctx context.Context, c client.Client, o Options) error {
	certPEM, err := os.ReadFile(filepath.Join(o.CertDir, "tls.crt"))
	if err != nil {
		return fmt.Errorf("the provided webhook certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(o.CertDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("the provided webhook certificate's key: %w", err)
	}
	// As the server will load it: any key encoding (cert-manager's RSA
	// keys are PKCS #1).
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("the provided webhook certificate in %s: %w", o.CertDir, err)
	}
	if o.Owner == nil {
		return nil
	}
	for attempt := 0; attempt < 5; attempt++ {
		var s corev1.Secret
		err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}, &s)
		if apierrors.IsNotFound(err) {
			return nil // provided some other way
		}
		if err != nil {
			return fmt.Errorf("Secret %s/%s: %w", o.Namespace, o.SecretName, err)
		}
		if slices.ContainsFunc(s.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == o.Owner.UID }) {
			return nil
		}
		// Added beside cert-manager's own owners, if it was told to set any.
		s.OwnerReferences = append(s.OwnerReferences, *o.Owner)
		if err := c.Update(ctx, &s); !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("Secret %s/%s: %w", o.Namespace, o.SecretName, err)
			}
			return nil
		}
	}
	return fmt.Errorf("Secret %s/%s: kept conflicting with other writers", o.Namespace, o.SecretName)
}

// keepCABundle gives each wanted webhook the CA bundle its namesake has,
// as the certificate's provider injected it.
func keepCABundle(have, want []admissionregistrationv1.MutatingWebhook) {
	var some []byte
	byName := map[string][]byte{}
	for _, h := range have {
		byName[h.Name] = h.ClientConfig.CABundle
		if len(h.ClientConfig.CABundle) > 0 {
			some = h.ClientConfig.CABundle
		}
	}
	for i := range want {
		if ca := byName[want[i].Name]; len(ca) > 0 {
			want[i].ClientConfig.CABundle = ca
		} else {
			want[i].ClientConfig.CABundle = some // a webhook new in this version
		}
	}
}

// ensureSecret returns the CA and serving certificate from the Secret,
// creating or renewing them when missing, unreadable or close to expiry.
func ensureSecret(ctx context.Context, c client.Client, o Options, now time.Time) (caPEM, certPEM, keyPEM []byte, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		var s corev1.Secret
		err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}, &s)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, nil, err
		}
		exists := err == nil
		if exists && usable(s.Data, dnsNames(o), now) {
			if o.Owner == nil || slices.ContainsFunc(s.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == o.Owner.UID }) {
				return s.Data["ca.crt"], s.Data["tls.crt"], s.Data["tls.key"], nil
			}
			// Made before berth knew its owner (or by another install): keep
			// the certificate, take the Secret.
			s.OwnerReferences = []metav1.OwnerReference{*o.Owner}
			if err := c.Update(ctx, &s); apierrors.IsConflict(err) {
				continue
			} else if err != nil {
				return nil, nil, nil, err
			}
			return s.Data["ca.crt"], s.Data["tls.crt"], s.Data["tls.key"], nil
		}
		ca, err := pki.NewCA("berth-webhook-ca", now, 10*certValidity)
		if err != nil {
			return nil, nil, nil, err
		}
		leaf, err := ca.Issue(pki.Spec{CommonName: "berth-webhook", DNSNames: dnsNames(o),
			IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: serverAuth}, now, certValidity)
		if err != nil {
			return nil, nil, nil, err
		}
		s.Namespace, s.Name = o.Namespace, o.SecretName
		s.Type = corev1.SecretTypeTLS
		if o.Owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{*o.Owner}
		}
		// The old CA stays trusted beside the new one, so that replicas
		// still serving the old certificate are called until they reload.
		bundle := ca.CertPEM()
		if exists {
			bundle = append(bundle, unexpired(s.Data["ca.crt"], now)...)
		}
		s.Data = map[string][]byte{"ca.crt": bundle, "tls.crt": leaf.CertPEM(), "tls.key": leaf.KeyPEM()}
		if exists {
			err = c.Update(ctx, &s)
		} else {
			err = c.Create(ctx, &s)
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue // another replica got there first; use theirs
		}
		if err != nil {
			return nil, nil, nil, err
		}
		return s.Data["ca.crt"], s.Data["tls.crt"], s.Data["tls.key"], nil
	}
	return nil, nil, nil, fmt.Errorf("kept conflicting with other writers")
}

// unexpired is the first certificate of bundle, when it is one and has not
// expired: the CA a renewal replaces (only the first, so the bundle never
// holds more than two).
func unexpired(bundle []byte, now time.Time) []byte {
	c, err := pki.ParseCert(bundle)
	if err != nil || !now.Before(c.NotAfter) {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// Renew keeps berth's own certificate fresh while the controller runs
// (Prepare sees to it only when a replica starts): every interval it renews
// a certificate close to expiry (any replica may), serves what the Secret
// holds (another replica's renewal too) and points the webhook
// configuration, and onCA, at its CA bundle. It returns when ctx ends.
func Renew(ctx context.Context, c client.Client, o func() Options, every time.Duration, clk clock.Clock, onCA func(context.Context, []byte) error) {
	log := ctrl.LoggerFrom(ctx).WithName("webhook-certificate")
	var served []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-clk.After(every):
		}
		ca, err := Prepare(ctx, c, o(), clk.Now())
		if err == nil && !bytes.Equal(ca, served) {
			if err = onCA(ctx, ca); err == nil {
				served = ca
			}
		}
		if err != nil {
			log.Error(err, "keeping the webhook certificate fresh; trying again", "in", every)
		}
	}
}

// usable reports whether a Secret's certificate is fresh, signed by its CA,
// and covers every name the server is reached by (a new name, after an
// upgrade, renews it).
func usable(data map[string][]byte, names []string, now time.Time) bool {
	kp, err := pki.Parse(data["tls.crt"], data["tls.key"])
	if err != nil || !pki.Fresh(kp.Cert, now, renewBefore) {
		return false
	}
	for _, n := range names {
		if kp.Cert.VerifyHostname(n) != nil {
			return false
		}
	}
	ca, err := pki.ParseCert(data["ca.crt"])
	return err == nil && kp.Cert.CheckSignatureFrom(ca) == nil
}

func dnsNames(o Options) []string {
	names := []string{"localhost"}
	for _, s := range append([]types.NamespacedName{o.Service}, o.AlsoServes...) {
		if s.Name != "" {
			svc := s.Name + "." + s.Namespace + ".svc"
			names = append(names, svc, svc+".cluster.local")
		}
	}
	return names
}

// Configuration is the MutatingWebhookConfiguration for Jobs and Pods: one
// webhook per queue label (so objects berth does not queue never reach it),
// one for every other Job when berth manages all Jobs, and one for the
// unlabelled Pods of namespaces labelled berth.dev/manage-pods=true. Pods of
// kube-system and of berth's own namespace never reach them. They fail
// closed: a queued Job or Pod is never created able to run because the
// controller was unreachable; the apiserver refuses it with the reason.
func Configuration(o Options, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		cc := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
		if o.URL != "" {
			url := o.URL + path
			cc.URL = &url
		} else {
			port := o.ServicePort
			cc.Service = &admissionregistrationv1.ServiceReference{Namespace: o.Service.Namespace, Name: o.Service.Name,
				Path: &path, Port: &port}
		}
		return cc
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(10)
	rules := func(group, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"},
				Resources: []string{resource}},
		}}
	}
	exists := func(k string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpExists}
	}
	absent := func(k string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpDoesNotExist}
	}
	selector := func(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: reqs}
	}
	notSystem := metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn,
		Values: []string{"kube-system", o.Namespace}}
	hook := func(name, path string, rules []admissionregistrationv1.RuleWithOperations, objects *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name: name, ClientConfig: clientConfig(path), Rules: rules, FailurePolicy: &fail, SideEffects: &none,
			TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}, ObjectSelector: objects,
		}
	}
	// Jobs are seen when created, and when an update makes them run more
	// pods at once (jobs.Kind.HoldGrowth); no other update reaches berth.
	jobRules := rules("batch", "jobs", admissionregistrationv1.Create, admissionregistrationv1.Update)
	podRules := rules("", "pods", admissionregistrationv1.Create)
	deploymentRules := rules("apps", "deployments", admissionregistrationv1.Create, admissionregistrationv1.Update)
	jobHook := func(name string, objects *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
		h := hook(name, jobs.WebhookPath, jobRules, objects)
		h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "created-or-grows", Expression: jobGrows}}
		return h
	}
	// A Job that asks for a queue only in its pod template is refused
	// (jobs.Kind.Refuse): its pods would run unqueued.
	templated := hook("template-labelled-jobs.berth.dev", jobs.WebhookPath, rules("batch", "jobs", admissionregistrationv1.Create),
		selector(absent(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel)))
	templated.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "template-asks-for-a-queue", Expression: templateQueued}}
	on := func(name string) bool { return o.Integrations == nil || o.Integrations.On(name) }
	ruleOf := func(group, version, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
		}}
	}
	var hooks []admissionregistrationv1.MutatingWebhook
	// Jobs asking for a queue; the others are left alone, but for those
	// whose pod template asks for one.
	if on(integration.BatchJob) {
		hooks = append(hooks,
			jobHook("jobs.berth.dev", selector(exists(berthv1.QueueNameLabel))),
			jobHook("kueue-labelled-jobs.berth.dev", selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))))
		templated.NamespaceSelector = selector(notSystem)
		hooks = append(hooks, templated)
	}
	if on(integration.Pod) {
		hooks = append(hooks,
			hook("pods.berth.dev", pods.WebhookPath, podRules, selector(exists(berthv1.QueueNameLabel))),
			hook("kueue-labelled-pods.berth.dev", pods.WebhookPath, podRules,
				selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))))
	}
	// The pods of a Job (or Pod) placed in a topology: whoever queued them.
	hooks = append(hooks, hook("topology-pods.berth.dev", placement.WebhookPath, podRules, selector(exists(berthv1.TopologyPlacedLabel))))
	if on(integration.Deployment) {
		// A queued Deployment's pods are queued one by one: its queue goes
		// on its pod template. Its status and scale are subresources, which
		// these rules leave out.
		hooks = append(hooks,
			hook("deployments.berth.dev", deployments.WebhookPath, deploymentRules, selector(exists(berthv1.QueueNameLabel))),
			hook("kueue-labelled-deployments.berth.dev", deployments.WebhookPath, deploymentRules,
				selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))))
	}
	if on(integration.StatefulSet) {
		// A queued StatefulSet's pods are one pod group: its queue and
		// group go on its pod template.
		stsRules := rules("apps", "statefulsets", admissionregistrationv1.Create, admissionregistrationv1.Update)
		hooks = append(hooks,
			hook("statefulsets.berth.dev", statefulsets.WebhookPath, stsRules, selector(exists(berthv1.QueueNameLabel))),
			hook("kueue-labelled-statefulsets.berth.dev", statefulsets.WebhookPath, stsRules,
				selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))))
	}
	if on(integration.JobSet) {
		// JobSets are seen when created; they cannot grow. One that asks
		// for a queue only in a template is refused (jobsets.Refuse).
		jobsetRules := []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{jobsets.GVK.Group}, APIVersions: []string{jobsets.GVK.Version},
				Resources: []string{"jobsets"}},
		}}
		templatedJobSets := hook("template-labelled-jobsets.berth.dev", jobsets.WebhookPath, jobsetRules,
			selector(absent(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel)))
		templatedJobSets.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "template-asks-for-a-queue", Expression: jobSetTemplateQueued}}
		hooks = append(hooks,
			hook("jobsets.berth.dev", jobsets.WebhookPath, jobsetRules, selector(exists(berthv1.QueueNameLabel))),
			hook("kueue-labelled-jobsets.berth.dev", jobsets.WebhookPath, jobsetRules,
				selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))),
			templatedJobSets)
	}
	if on(integration.LeaderWorkerSet) {
		// A queued LeaderWorkerSet's groups are pod groups: its queue goes
		// on its pod templates.
		lwsRules := []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{leaderworkersets.GVK.Group}, APIVersions: []string{leaderworkersets.GVK.Version},
				Resources: []string{"leaderworkersets"}},
		}}
		hooks = append(hooks,
			hook("leaderworkersets.berth.dev", leaderworkersets.WebhookPath, lwsRules, selector(exists(berthv1.QueueNameLabel))),
			hook("kueue-labelled-leaderworkersets.berth.dev", leaderworkersets.WebhookPath, lwsRules,
				selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))))
	}
	if on(integration.TrainJob) {
		// TrainJobs are seen when created; they grow only while held
		// (package guard).
		trainJobRules := ruleOf(trainjobs.GVK.Group, trainjobs.GVK.Version, "trainjobs", admissionregistrationv1.Create)
		hooks = append(hooks,
			hook("trainjobs.berth.dev", trainjobs.WebhookPath, trainJobRules, selector(exists(berthv1.QueueNameLabel))),
			hook("kueue-labelled-trainjobs.berth.dev", trainjobs.WebhookPath, trainJobRules,
				selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))))
	}
	for _, c := range o.Configured {
		// As JobSets: seen when created, whole; their templates and counts
		// change while they run only if package guard lets them.
		rules := ruleOf(c.Group, c.Version, c.Resource, admissionregistrationv1.Create)
		// Its scale subresource, where its CRD has one, carries no labels
		// to select by: every scale is sent, and the ScaleGuard reads the
		// object.
		scale := ruleOf(c.Group, c.Version, c.Resource+"/scale", admissionregistrationv1.Update)
		hooks = append(hooks,
			hook(c.Resource+"."+c.Group+".berth.dev", c.WebhookPath, rules, selector(exists(berthv1.QueueNameLabel))),
			hook("kueue-labelled-"+c.Resource+"."+c.Group+".berth.dev", c.WebhookPath, rules,
				selector(exists(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))),
			hook("scale-"+c.Resource+"."+c.Group+".berth.dev", c.ScalePath(), scale, nil))
	}
	for k := range hooks {
		if hooks[k].Name != "jobs.berth.dev" && hooks[k].Name != "kueue-labelled-jobs.berth.dev" {
			hooks[k].NamespaceSelector = selector(notSystem)
		}
	}
	// Where every object is queued, one that asks for no queue goes to
	// LocalQueue "default" when it is created, whatever its kind: in the
	// namespaces that opt in, and with ManageAll in those Managed selects.
	// Later updates find it labelled, and reach the hooks above; but a Job
	// or JobSet may lose its label while it is held (package guard lets it,
	// to move it), and then gets the default queue's back in the same
	// write, or it could be started unqueued. (The others' labels are for
	// life.)
	type scope struct {
		prefix     string
		namespaces *metav1.LabelSelector
	}
	scopes := []scope{{"opted-in", &metav1.LabelSelector{
		MatchLabels:      map[string]string{berthv1.ManagePodsLabel: "true"},
		MatchExpressions: []metav1.LabelSelectorRequirement{notSystem},
	}}}
	if o.ManageAll {
		managed := &metav1.LabelSelector{}
		if o.Managed != nil {
			managed = o.Managed.DeepCopy()
		}
		managed.MatchExpressions = append(managed.MatchExpressions, notSystem)
		scopes = append(scopes, scope{"unlabelled", managed})
	}
	create, update := admissionregistrationv1.Create, admissionregistrationv1.Update
	unlabelled := selector(absent(berthv1.KueueQueueNameLabel), absent(berthv1.QueueNameLabel))
	byDefault := []struct {
		integration, resource, path string
		rules                       []admissionregistrationv1.RuleWithOperations
	}{
		{integration.BatchJob, "jobs", jobs.DefaultWebhookPath, ruleOf("batch", "v1", "jobs", create, update)},
		{integration.Pod, "pods", pods.DefaultWebhookPath, podRules},
		{integration.Deployment, "deployments", deployments.DefaultWebhookPath, ruleOf("apps", "v1", "deployments", create)},
		{integration.StatefulSet, "statefulsets", statefulsets.DefaultWebhookPath, ruleOf("apps", "v1", "statefulsets", create)},
		{integration.JobSet, "jobsets", jobsets.DefaultWebhookPath, ruleOf(jobsets.GVK.Group, jobsets.GVK.Version, "jobsets", create, update)},
		{integration.LeaderWorkerSet, "leaderworkersets", leaderworkersets.DefaultWebhookPath,
			ruleOf(leaderworkersets.GVK.Group, leaderworkersets.GVK.Version, "leaderworkersets", create)},
		{integration.TrainJob, "trainjobs", trainjobs.DefaultWebhookPath, ruleOf(trainjobs.GVK.Group, trainjobs.GVK.Version, "trainjobs", create, update)},
	}
	for _, c := range o.Configured {
		byDefault = append(byDefault, struct {
			integration, resource, path string
			rules                       []admissionregistrationv1.RuleWithOperations
		}{"", c.Resource + "." + c.Group, c.DefaultWebhookPath, ruleOf(c.Group, c.Version, c.Resource, create, update)})
	}
	for _, sc := range scopes {
		for _, k := range byDefault {
			if k.integration != "" && !on(k.integration) {
				continue
			}
			h := hook(sc.prefix+"-"+k.resource+".berth.dev", k.path, k.rules, unlabelled)
			h.NamespaceSelector = sc.namespaces
			if slices.Contains(k.rules[0].Operations, update) {
				h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "created-or-unlabelled", Expression: unlabelledNow}}
			}
			hooks = append(hooks, h)
		}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: o.ConfigName, Labels: map[string]string{"app.kubernetes.io/managed-by": "berth"}},
		Webhooks:   hooks,
	}
}

var serverAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}

// hookOf names, for each integration, the webhook Configuration adds when
// it is on.
var hookOf = map[string]string{
	integration.BatchJob: "jobs.berth.dev", integration.Pod: "pods.berth.dev",
	integration.Deployment: "deployments.berth.dev", integration.StatefulSet: "statefulsets.berth.dev",
	integration.JobSet: "jobsets.berth.dev", integration.LeaderWorkerSet: "leaderworkersets.berth.dev",
	integration.TrainJob: "trainjobs.berth.dev",
}

// Integrations reads from a configuration Configuration made which
// integrations the controller has on: what `berth status` reports.
func Integrations(cfg *admissionregistrationv1.MutatingWebhookConfiguration) integration.Set {
	s := integration.Set{}
	for _, name := range integration.All {
		s[name] = slices.ContainsFunc(cfg.Webhooks, func(h admissionregistrationv1.MutatingWebhook) bool { return h.Name == hookOf[name] })
	}
	return s
}

// Configured reads from a configuration Configuration made the kinds queued
// from configuration that are on, as resource.group (mpijobs.kubeflow.org):
// what `berth status` reports.
func Configured(cfg *admissionregistrationv1.MutatingWebhookConfiguration) []string {
	var out []string
	for _, h := range cfg.Webhooks {
		if kind, ok := strings.CutPrefix(h.Name, "scale-"); ok {
			out = append(out, strings.TrimSuffix(kind, ".berth.dev"))
		}
	}
	return out
}
