package jobset

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/jobset/pkg/controllers"
	"sigs.k8s.io/jobset/pkg/webhooks"

	"github.com/berth-dev/berth/internal/pki"
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

// Run runs the JobSet controller with args until SIGTERM and returns the
// exit code.
func Run(args []string) int {
	fs := flag.NewFlagSet("jobset-controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server")
	health := fs.Int("health-port", 0, "port on 127.0.0.1 of /healthz and /readyz")
	webhookPort := fs.Int("webhook-port", 0, "port on 127.0.0.1 of the webhooks")
	certDir := fs.String("cert-dir", "", "directory for the webhooks' serving certificate, made at each start")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *kubeconfig == "" || *health == 0 || *webhookPort == 0 || *certDir == "" {
		fmt.Fprintln(os.Stderr, "jobset-controller: --kubeconfig, --health-port, --webhook-port and --cert-dir are required")
		return 2
	}
	ctrl.SetLogger(zap.New())
	if err := run(ctrl.SetupSignalHandler(), *kubeconfig, *health, *webhookPort, *certDir); err != nil {
		fmt.Fprintf(os.Stderr, "jobset-controller: %v\n", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, kubeconfig string, health, port int, certDir string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// JobSet's own defaults: client-go's (20 a second) hold a burst of
	// JobSets, each making its Jobs and a Service, to a crawl.
	cfg.QPS, cfg.Burst = 500, 500
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := jobsetv1.AddToScheme(scheme); err != nil {
		return err
	}
	caPEM, err := writeCert(certDir, time.Now())
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: net.JoinHostPort("127.0.0.1", strconv.Itoa(health)),
		WebhookServer:          crwebhook.NewServer(crwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		return err
	}
	if err := controllers.SetupJobSetIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := controllers.SetupPodIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := controllers.NewJobSetReconciler(mgr.GetClient(), scheme, mgr.GetEventRecorder("jobset")).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := controllers.NewPodReconciler(mgr.GetClient(), scheme, mgr.GetEventRecorder("pod")).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := webhooks.Setup(mgr); err != nil {
		return err
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	// The API server must not call the webhooks before they answer: the
	// configurations are written once the server listens, and readyz
	// waits for them.
	configured := make(chan struct{})
	if err := mgr.Add(configure(direct, "https://127.0.0.1:"+strconv.Itoa(port), caPEM, mgr.GetWebhookServer().StartedChecker(), configured)); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhooks", func(*http.Request) error {
		select {
		case <-configured:
			return nil
		default:
			return errors.New("the webhook configurations are not written yet")
		}
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// writeCert makes a CA and a serving certificate for 127.0.0.1, writes the
// certificate and key for the webhook server, and returns the CA.
func writeCert(dir string, now time.Time) ([]byte, error) {
	ca, err := pki.NewCA("berth-jobset-webhook-ca", now, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	leaf, err := ca.Issue(pki.Spec{CommonName: "berth-jobset-webhook", DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, now, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), leaf.CertPEM(), 0o600); err != nil {
		return nil, err
	}
	return ca.CertPEM(), os.WriteFile(filepath.Join(dir, "tls.key"), leaf.KeyPEM(), 0o600)
}

// configure writes the webhook configurations once the server answers,
// then closes done.
func configure(c client.Client, url string, caPEM []byte, started func(*http.Request) error, done chan struct{}) manager.RunnableFunc {
	return func(ctx context.Context) error {
		for started(nil) != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
		m, v := Configurations(url, caPEM)
		for _, obj := range []client.Object{m, v} {
			if err := upsert(ctx, c, obj); err != nil {
				return fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
			}
		}
		close(done)
		<-ctx.Done()
		return nil
	}
}

func upsert(ctx context.Context, c client.Client, obj client.Object) error {
	existing := obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	if err != nil {
		return c.Create(ctx, obj)
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	return c.Update(ctx, obj)
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
