package addon

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

	"github.com/berth-dev/berth/internal/pki"
)

// Runner runs another project's controllers and webhooks in one process
// (`berth component <Name>`): its webhooks on loopback with a certificate
// made at each start, and webhook configurations pointing at them.
type Runner struct {
	// Name is the component's: in messages and the certificate.
	Name string
	// AddToScheme adds the project's types beside Kubernetes'.
	AddToScheme func(*runtime.Scheme) error
	// Setup registers its indexes, controllers and webhooks with mgr.
	Setup func(ctx context.Context, mgr ctrl.Manager) error
	// Configurations are its webhook configurations, calling url.
	Configurations func(url string, caPEM []byte) []client.Object
}

// Run runs the component with args until SIGTERM and returns the exit
// code.
func (r Runner) Run(args []string) int {
	fs := flag.NewFlagSet(r.Name, flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server")
	health := fs.Int("health-port", 0, "port on 127.0.0.1 of /healthz and /readyz")
	webhookPort := fs.Int("webhook-port", 0, "port on 127.0.0.1 of the webhooks")
	certDir := fs.String("cert-dir", "", "directory for the webhooks' serving certificate, made at each start")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *kubeconfig == "" || *health == 0 || *webhookPort == 0 || *certDir == "" {
		fmt.Fprintf(os.Stderr, "%s: --kubeconfig, --health-port, --webhook-port and --cert-dir are required\n", r.Name)
		return 2
	}
	ctrl.SetLogger(zap.New())
	if err := r.run(ctrl.SetupSignalHandler(), *kubeconfig, *health, *webhookPort, *certDir); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", r.Name, err)
		return 1
	}
	return 0
}

func (r Runner) run(ctx context.Context, kubeconfig string, health, port int, certDir string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// The projects' own defaults: client-go's (20 a second) hold a burst
	// of objects, each making several others, to a crawl.
	cfg.QPS, cfg.Burst = 500, 500
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := r.AddToScheme(scheme); err != nil {
		return err
	}
	caPEM, err := writeCert(r.Name, certDir, time.Now())
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
	if err := r.Setup(ctx, mgr); err != nil {
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
	objs := r.Configurations("https://127.0.0.1:"+strconv.Itoa(port), caPEM)
	if err := mgr.Add(configure(direct, objs, mgr.GetWebhookServer().StartedChecker(), configured)); err != nil {
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
func writeCert(name, dir string, now time.Time) ([]byte, error) {
	ca, err := pki.NewCA("berth-"+name+"-webhook-ca", now, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	leaf, err := ca.Issue(pki.Spec{CommonName: "berth-" + name + "-webhook", DNSNames: []string{"localhost"},
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
func configure(c client.Client, objs []client.Object, started func(*http.Request) error, done chan struct{}) manager.RunnableFunc {
	return func(ctx context.Context) error {
		for started(nil) != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
		for _, obj := range objs {
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
