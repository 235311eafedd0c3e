package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/testenv"
)

// certManager is cert-manager's controllers and CA injector as
// test/certmanager builds them from its packages, and its CRDs from the
// same module.
type certManager struct {
	bin, crds string
}

// buildCertManager builds test/certmanager; the zero certManager when the
// build failed (the failure is reported).
func buildCertManager(t *testing.T) certManager {
	const dir = "../certmanager"
	bin := filepath.Join(t.TempDir(), "certmanager")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("building cert-manager (test/certmanager): %v\n%s", err, out)
		return certManager{}
	}
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager")
	list.Dir = dir
	out, err := list.Output()
	if err != nil {
		t.Errorf("finding cert-manager's module: %v", err)
		return certManager{}
	}
	return certManager{bin: bin, crds: filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")}
}

// start installs cert-manager's CRDs in the cluster of kubeconfig with
// kubectl and runs cert-manager against it until the test ends.
func (cm certManager) start(t *testing.T, kubectl func(stdin string, args ...string) string, kubeconfig string) {
	t.Helper()
	if cm.bin == "" {
		t.Fatal("no cert-manager to run")
	}
	kubectl("", "create", "-f", cm.crds)
	kubectl("", "wait", "--for=condition=Established", "--timeout=60s", "-f", cm.crds)
	logPath := filepath.Join(t.TempDir(), "certmanager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cm.bin, "--kubeconfig", kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting cert-manager: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := <-exited
		_ = logFile.Close()
		if t.Failed() || (err != nil && !strings.Contains(err.Error(), "signal")) {
			log, _ := os.ReadFile(logPath)
			t.Logf("cert-manager (exit %v), last lines of its log:\n%s", err, tail(string(log), 40))
		}
	})
}

// certManagersServed waits until berth in namespace ns serves
// cert-manager's certificate: the Secret is cert-manager's (and the
// controller's ServiceAccount's, so uninstalling removes it), the webhook
// configuration and the visibility APIService trust its certificate, and
// the visibility API answers through the API server (pending gets its
// answer from the leader, over TLS checked against that CA).
func certManagersServed(t *testing.T, c client.Client, ns string, pending func() (string, error)) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, func() error {
		var s corev1.Secret
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "berth-webhook-tls"}, &s); err != nil {
			return err
		}
		if s.Annotations["cert-manager.io/certificate-name"] != "berth-webhook" {
			return fmt.Errorf("Secret %s is not cert-manager's: annotations %v", s.Name, s.Annotations)
		}
		if !slices.ContainsFunc(s.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Kind == "ServiceAccount" && r.Name == "berth-controller" }) {
			return fmt.Errorf("Secret %s owners %v: not the controller's ServiceAccount", s.Name, s.OwnerReferences)
		}
		served, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
		if err != nil {
			return fmt.Errorf("Secret %s: %w", s.Name, err)
		}
		leaf, err := x509.ParseCertificate(served.Certificate[0])
		if err != nil {
			return err
		}
		// What the API server checks: the served certificate verifies
		// against the CA bundle for the Service's name. (cert-manager's CA
		// injector adds its CA to what the bundle had, so that servers
		// still on the old certificate are trusted while they go.)
		trusts := func(bundle []byte, service string) error {
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(bundle) {
				return fmt.Errorf("no certificate in its CA bundle")
			}
			_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: service + "." + ns + ".svc"})
			return err
		}
		var hooks admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, types.NamespacedName{Name: "berth"}, &hooks); err != nil {
			return err
		}
		for _, h := range hooks.Webhooks {
			if err := trusts(h.ClientConfig.CABundle, h.ClientConfig.Service.Name); err != nil {
				return fmt.Errorf("webhook %s does not trust cert-manager's certificate %s yet (its CA bundle: %s): %w",
					h.Name, bundle(s.Data["tls.crt"]), bundle(h.ClientConfig.CABundle), err)
			}
		}
		var api apiregistrationv1.APIService
		if err := c.Get(ctx, types.NamespacedName{Name: "v1beta1.visibility.berth.dev"}, &api); err != nil {
			return err
		}
		if err := trusts(api.Spec.CABundle, api.Spec.Service.Name); err != nil {
			return fmt.Errorf("APIService %s does not trust cert-manager's certificate %s yet (its CA bundle: %s): %w",
				api.Name, bundle(s.Data["tls.crt"]), bundle(api.Spec.CABundle), err)
		}
		out, err := pending()
		if err != nil || !strings.Contains(out, `"items"`) {
			return fmt.Errorf("the visibility API through the API server: %v: %s", err, tail(out, 3))
		}
		return nil
	})
}

// bundle tells one certificate bundle from another in a message: the
// subject, key and serial of each certificate in it.
func bundle(b []byte) string {
	var certs []string
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			certs = append(certs, err.Error())
			continue
		}
		certs = append(certs, fmt.Sprintf("%s (%s, serial %x)", c.Subject.CommonName, c.PublicKeyAlgorithm, c.SerialNumber.Bytes()))
	}
	return fmt.Sprintf("%v", certs)
}
