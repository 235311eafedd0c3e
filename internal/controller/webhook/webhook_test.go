package webhook

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

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
