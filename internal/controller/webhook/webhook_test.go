package webhook

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/berth-dev/berth/internal/pki"
)

// A certificate that does not cover a name the server is now reached by
// (the visibility Service, after an upgrade) is renewed.
func TestCertificateCoversEveryServiceName(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	o := Options{Namespace: "berth-system", Service: types.NamespacedName{Namespace: "berth-system", Name: "berth-webhook"}}
	issue := func(names []string) map[string][]byte {
		ca, err := pki.NewCA("ca", now, certValidity)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := ca.Issue(pki.Spec{CommonName: "berth-webhook", DNSNames: names, Usages: serverAuth}, now, certValidity)
		if err != nil {
			t.Fatal(err)
		}
		return map[string][]byte{"ca.crt": ca.CertPEM(), "tls.crt": leaf.CertPEM(), "tls.key": leaf.KeyPEM()}
	}
	old := issue(dnsNames(o))
	if !usable(old, dnsNames(o), now) {
		t.Fatal("a fresh certificate for the webhook's names is not usable")
	}
	o.AlsoServes = []types.NamespacedName{{Namespace: "berth-system", Name: "berth-visibility"}}
	names := dnsNames(o)
	if usable(old, names, now) {
		t.Errorf("a certificate without berth-visibility.berth-system.svc is usable for %v", names)
	}
	if !usable(issue(names), names, now) {
		t.Errorf("a certificate for %v is not usable", names)
	}
}

// In a cluster the certificate Secret belongs to the controller's
// ServiceAccount, so uninstalling berth removes it: a new one is made owned,
// and one made before (by a version of berth that set no owner) keeps its
// certificate and is taken over.
func TestCertificateSecretIsOwned(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: "berth-controller", UID: "sa-uid"}
	o := Options{Namespace: "berth-system", SecretName: "berth-webhook-tls", Owner: owner, //nolint:gosec // G101: a Secret's name, no credential
		Service: types.NamespacedName{Namespace: "berth-system", Name: "berth-webhook"}}
	c := fake.NewClientBuilder().Build()
	ca, _, _, err := ensureSecret(context.Background(), c, o, now)
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "berth-system", Name: "berth-webhook-tls"}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "sa-uid" {
		t.Errorf("new Secret's owners: %v; want the ServiceAccount", s.OwnerReferences)
	}

	s.OwnerReferences = nil
	if err := c.Update(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	again, _, _, err := ensureSecret(context.Background(), c, o, now)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(ca) {
		t.Error("taking over an unowned Secret made a new CA; want the certificate kept")
	}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "berth-system", Name: "berth-webhook-tls"}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "sa-uid" {
		t.Errorf("unowned Secret's owners after: %v; want the ServiceAccount", s.OwnerReferences)
	}
}

// In a cluster (no URL) the webhook configuration is the install's: a
// replica that finds none (berth uninstalled while it stops) says so and
// makes none, rather than leave one behind that calls a Service no
// longer there. On a local control plane (a URL) it makes it.
func TestConfigurationIsMadeOnlyLocally(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for _, url := range []string{"", "https://127.0.0.1:9443"} {
		c := fake.NewClientBuilder().Build()
		o := Options{Namespace: "berth-system", SecretName: "berth-webhook-tls", ConfigName: "berth", CertDir: t.TempDir(), URL: url, //nolint:gosec // G101: a Secret's name, no credential
			Service: types.NamespacedName{Namespace: "berth-system", Name: "berth-webhook"}, ServicePort: 443}
		_, err := Prepare(context.Background(), c, o, now)
		var have admissionregistrationv1.MutatingWebhookConfiguration
		getErr := c.Get(context.Background(), types.NamespacedName{Name: "berth"}, &have)
		if url == "" && (err == nil || !apierrors.IsNotFound(getErr)) {
			t.Errorf("in a cluster with no webhook configuration: Prepare %v, configuration %v; want an error and none made", err, getErr)
		}
		if url != "" && (err != nil || getErr != nil) {
			t.Errorf("locally: Prepare %v, configuration %v; want it made", err, getErr)
		}
	}
}
