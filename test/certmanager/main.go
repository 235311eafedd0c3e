// Command certmanager runs the parts of cert-manager that berth's chart
// relies on when it is installed with certManager.enabled: the Certificate
// controllers with the self-signed and CA issuers, and the CA injector that
// fills in caBundle of webhook configurations and APIServices. It is built
// from cert-manager's own packages (its command's module is not published
// apart from them), so the end-to-end test runs the real thing against a
// real control plane.
//
// It lives in a module of its own: cert-manager's dependencies are newer
// than the Kubernetes servers berth builds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers are those a namespaced Issuer (self-signed or CA) and its
// Certificates need.
var controllers = []string{
	issuers.ControllerName,
	trigger.ControllerName, keymanager.ControllerName, requestmanager.ControllerName,
	issuing.ControllerName, readiness.ControllerName, revisionmanager.ControllerName,
	approver.ControllerName, crselfsigned.CRControllerName, crca.CRControllerName,
}

func main() {
	// Its own flags: controller-runtime defines --kubeconfig on the global set.
	fs := flag.NewFlagSet("certmanager", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "certmanager:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string) error {
	// cert-manager says what it did at its info level, V(2).
	log := zap.New(zap.Level(zapcore.Level(-2)))
	ctrl.SetLogger(log)
	ctx = logf.NewContext(ctx, log)

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig: kubeconfig, KubernetesAPIQPS: 50, KubernetesAPIBurst: 100,
		// A failed request is tried again within seconds, not cert-manager's
		// hour: a test has minutes.
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Second,
			CertificateRequestMaximumBackoffDuration: 10 * time.Second,
		},
	})
	if err != nil {
		return err
	}
	errs := make(chan error, len(controllers)+1)
	for _, name := range controllers {
		newController, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("cert-manager has no controller %q", name)
		}
		c, err := newController(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		go func() { errs <- c.Run(2, ctx) }()
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// The injector's field manager is taken from it.
	cfg.UserAgent = "cert-manager-cainjector"
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, cmscheme.AddToScheme,
		apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			"mutatingwebhookconfiguration": true, "validatingwebhookconfiguration": true, "apiservice": true,
		},
	}); err != nil {
		return err
	}
	go func() { errs <- mgr.Start(ctx) }()
	log.Info("cert-manager is running", "controllers", controllers)
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}
