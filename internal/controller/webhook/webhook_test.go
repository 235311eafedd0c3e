package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/configured"
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

// With a provided certificate (cert-manager's, mounted from its Secret)
// berth serves it as it is: it writes no certificate, keeps the CA bundle
// the provider injected (a webhook new in this version gets it too), and
// only takes the Secret as its ServiceAccount's, so uninstalling removes it.
// A certificate missing from the directory is an error naming it.
func TestProvidedCertificateIsLeftToItsProvider(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	dir := t.TempDir()
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: "berth-controller", UID: "sa-uid"}
	o := Options{Namespace: "berth-system", SecretName: "berth-webhook-tls", ConfigName: "berth", CertDir: dir, CertProvided: true, //nolint:gosec // G101: a Secret's name, no credential
		Service: types.NamespacedName{Namespace: "berth-system", Name: "berth-webhook"}, ServicePort: 443, Owner: owner}
	if _, err := Prepare(ctx, fake.NewClientBuilder().Build(), o, now); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "tls.crt")) {
		t.Errorf("no certificate provided: %v; want an error naming %s", err, filepath.Join(dir, "tls.crt"))
	}

	// As cert-manager's self-signed issuer makes it by default: RSA, its
	// key in PKCS #1, the certificate its own CA.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "berth-webhook"}, DNSNames: dnsNames(o),
		NotBefore: now, NotAfter: now.Add(90 * 24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "berth-system", Name: "berth-webhook-tls",
		Annotations: map[string]string{"cert-manager.io/certificate-name": "berth-webhook"}},
		Data: map[string][]byte{"ca.crt": certPEM, "tls.crt": certPEM, "tls.key": keyPEM}}
	config := Configuration(o, []byte("injected"))
	config.Webhooks = config.Webhooks[1:] // as an older version installed it
	c := fake.NewClientBuilder().WithObjects(secret, config).Build()
	got, err := Prepare(ctx, c, o, now)
	if err != nil {
		t.Fatal(err)
	}
	if got != nil {
		t.Errorf("Prepare returned a CA bundle %q for a provided certificate; want none", got)
	}
	var have admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, types.NamespacedName{Name: "berth"}, &have); err != nil {
		t.Fatal(err)
	}
	if len(have.Webhooks) != len(Configuration(o, nil).Webhooks) {
		t.Errorf("%d webhooks; want all %d", len(have.Webhooks), len(Configuration(o, nil).Webhooks))
	}
	for _, h := range have.Webhooks {
		if string(h.ClientConfig.CABundle) != "injected" {
			t.Errorf("webhook %s: caBundle %q; want the injected one kept", h.Name, h.ClientConfig.CABundle)
		}
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["tls.crt"]) != string(certPEM) || string(s.Data["ca.crt"]) != string(certPEM) {
		t.Error("berth rewrote the provided certificate's Secret")
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "sa-uid" {
		t.Errorf("provided Secret's owners: %v; want the ServiceAccount", s.OwnerReferences)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the certificate directory holds %d files; want the 2 provided", len(entries))
	}
}

// While the controller runs, its certificate is renewed when close to
// expiry (not only when a replica starts): the new certificate is served
// and trusted, and the old CA stays in the bundle beside the new one, so
// that a replica still serving the old certificate is called until it
// reloads.
func TestRenewWhileRunning(t *testing.T) {
	start := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	o := Options{Namespace: "berth-system", SecretName: "berth-webhook-tls", ConfigName: "berth", CertDir: dir, URL: "https://127.0.0.1:9443", //nolint:gosec // G101: a Secret's name, no credential
		Service: types.NamespacedName{Namespace: "berth-system", Name: "berth-webhook"}, ServicePort: 443}
	c := fake.NewClientBuilder().Build()
	first, err := Prepare(ctx, c, o, start)
	if err != nil {
		t.Fatal(err)
	}
	oldCert, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}

	clk := clocktesting.NewFakeClock(start)
	trusted := make(chan []byte, 4)
	go Renew(ctx, c, func() Options { return o }, time.Hour, clk, func(_ context.Context, ca []byte) error { trusted <- ca; return nil })
	for deadline := time.Now().Add(10 * time.Second); !clk.HasWaiters(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Renew never waited for its next check")
		}
	}
	clk.Step(certValidity - renewBefore + 24*time.Hour) // within 30 days of expiry
	var bundle []byte
	select {
	case bundle = <-trusted:
	case <-time.After(10 * time.Second):
		t.Fatal("no CA bundle trusted after the certificate came within 30 days of expiry")
	}
	newCert, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(newCert, oldCert) || bytes.Equal(bundle, first) {
		t.Fatal("the certificate close to expiry was not renewed")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("the new bundle holds no certificate")
	}
	for name, pemCert := range map[string][]byte{"the new certificate": newCert, "the old one": oldCert} {
		cert, err := pki.ParseCert(pemCert)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "berth-webhook.berth-system.svc", CurrentTime: clk.Now()}); err != nil {
			t.Errorf("%s is not trusted by the renewed bundle: %v", name, err)
		}
	}
	var have admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, types.NamespacedName{Name: "berth"}, &have); err != nil {
		t.Fatal(err)
	}
	for _, h := range have.Webhooks {
		if !bytes.Equal(h.ClientConfig.CABundle, bundle) {
			t.Errorf("webhook %s does not trust the renewed bundle", h.Name)
		}
	}
}

// An integration switched off has no webhook: its objects never reach
// berth (a failing-closed webhook for a kind berth does not queue would
// only stand in the way).
func TestConfigurationHasOnlyTheIntegrationsOn(t *testing.T) {
	names := func(s integration.Set) []string {
		var out []string
		for _, h := range Configuration(Options{URL: "https://127.0.0.1:1", ManageAll: true, Integrations: s}, nil).Webhooks {
			out = append(out, h.Name)
		}
		return out
	}
	all := names(nil)
	jobsOnly := names(integration.Set{integration.BatchJob: true})
	if want := []string{"jobs.berth.dev", "kueue-labelled-jobs.berth.dev", "template-labelled-jobs.berth.dev",
		"topology-pods.berth.dev", "opted-in-jobs.berth.dev", "unlabelled-jobs.berth.dev"}; !slices.Equal(jobsOnly, want) {
		t.Errorf("batch/job only: %v, want %v", jobsOnly, want)
	}
	podsOnly := names(integration.Set{integration.Pod: true})
	if want := []string{"pods.berth.dev", "kueue-labelled-pods.berth.dev", "topology-pods.berth.dev", "opted-in-pods.berth.dev",
		"unlabelled-pods.berth.dev"}; !slices.Equal(podsOnly, want) {
		t.Errorf("pod only: %v, want %v", podsOnly, want)
	}
	// Each kind's three hooks for what asks for a queue, and two for what
	// does not where everything is queued (opted-in, unlabelled).
	if len(all) != 31 || !slices.Contains(all, "leaderworkersets.berth.dev") || !slices.Contains(all, "deployments.berth.dev") || !slices.Contains(all, "statefulsets.berth.dev") ||
		!slices.Contains(all, "jobsets.berth.dev") || !slices.Contains(all, "unlabelled-leaderworkersets.berth.dev") {
		t.Errorf("all: %v", all)
	}
	jobsetsOnly := names(integration.Set{integration.JobSet: true})
	if want := []string{"topology-pods.berth.dev", "jobsets.berth.dev", "kueue-labelled-jobsets.berth.dev",
		"template-labelled-jobsets.berth.dev", "opted-in-jobsets.berth.dev", "unlabelled-jobsets.berth.dev"}; !slices.Equal(jobsetsOnly, want) {
		t.Errorf("jobset only: %v, want %v", jobsetsOnly, want)
	}
	trainJobsOnly := names(integration.Set{integration.TrainJob: true})
	if want := []string{"topology-pods.berth.dev", "trainjobs.berth.dev", "kueue-labelled-trainjobs.berth.dev",
		"opted-in-trainjobs.berth.dev", "unlabelled-trainjobs.berth.dev"}; !slices.Equal(trainJobsOnly, want) {
		t.Errorf("trainjob only: %v, want %v", trainJobsOnly, want)
	}
}

// What Configuration is given, Integrations reads back from what it made.
func TestIntegrationsReadBackWhatIsOn(t *testing.T) {
	for _, on := range [][]string{integration.All, {integration.BatchJob}, {integration.Pod, integration.Deployment}, {integration.JobSet}, nil} {
		want := integration.Set{}
		for _, n := range integration.All {
			want[n] = slices.Contains(on, n)
		}
		got := Integrations(Configuration(Options{URL: "https://127.0.0.1:1", Integrations: want}, nil))
		if !maps.Equal(got, want) {
			t.Errorf("on %v: read back %v", on, got)
		}
	}
}

// Where everything is queued, every kind's objects that ask for no queue
// are sent to its default hook when created, in the namespaces selected
// (those that opt in, and with ManageAll those Managed selects), never in
// kube-system or berth's own.
func TestConfigurationQueuesEverythingWhereAsked(t *testing.T) {
	managed := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	cfg := Configuration(Options{URL: "https://127.0.0.1:1", Namespace: "berth-system", ManageAll: true, Managed: managed}, nil)
	seen := 0
	for _, h := range cfg.Webhooks {
		scope, kind, ok := strings.Cut(strings.TrimSuffix(h.Name, ".berth.dev"), "-")
		if !ok || (scope != "unlabelled" && scope != "opted") {
			continue
		}
		seen++
		// Creations; and for the kinds that may lose their label while held
		// (Jobs, JobSets, TrainJobs), the updates that take it off.
		want := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
		if kind == "jobs" || strings.HasSuffix(kind, "-jobs") || strings.HasSuffix(kind, "jobsets") || strings.HasSuffix(kind, "trainjobs") {
			want = append(want, admissionregistrationv1.Update)
			if len(h.MatchConditions) != 1 || h.MatchConditions[0].Expression != unlabelledNow {
				t.Errorf("%s: match conditions %+v; want creations and updates that take the label off", h.Name, h.MatchConditions)
			}
		}
		if len(h.Rules) != 1 || !slices.Equal(h.Rules[0].Operations, want) {
			t.Errorf("%s: rules %+v; want %v", h.Name, h.Rules, want)
		}
		if h.ClientConfig.URL == nil || !strings.HasSuffix(*h.ClientConfig.URL, "-default") {
			t.Errorf("%s (%s): served at %v, not a default path", h.Name, kind, h.ClientConfig.URL)
		}
		sel, err := metav1.LabelSelectorAsSelector(h.NamespaceSelector)
		if err != nil {
			t.Fatal(err)
		}
		for ns, want := range map[string]bool{"team-a": scope == "unlabelled", "kube-system": false, "berth-system": false} {
			l := labels.Set{"kubernetes.io/metadata.name": ns}
			if ns == "team-a" {
				l["team"] = "a"
			}
			if sel.Matches(l) != want {
				t.Errorf("%s: namespace %s selected %v, want %v", h.Name, ns, !want, want)
			}
		}
		optedIn := labels.Set{"kubernetes.io/metadata.name": "other", berthv1.ManagePodsLabel: "true"}
		if sel.Matches(optedIn) != (scope == "opted") {
			t.Errorf("%s: a namespace that opts in selected %v", h.Name, !(scope == "opted"))
		}
	}
	if seen != 14 {
		t.Errorf("%d default hooks; want 14 (7 kinds, 2 scopes)", seen)
	}
}

// A kind queued from configuration that is on gets its hooks, as a JobSet
// does: those that ask for a queue, when created, outside kube-system and
// berth's own namespace; and, where everything is queued, its default hook
// for creations and for updates that take the label off.
func TestConfiguredKindsGetTheirHooks(t *testing.T) {
	kinds, err := configured.Parse([]byte(`
kinds:
- {group: kubeflow.org, version: v2beta1, kind: MPIJob, resource: mpijobs, suspend: spec.runPolicy.suspend,
   podSets: [{name: worker, template: spec.mpiReplicaSpecs.Worker.template}], finished: {succeeded: [Succeeded]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Configuration(Options{URL: "https://127.0.0.1:1", Namespace: "berth-system", ManageAll: true,
		Integrations: integration.Set{}, Configured: []*configured.Compiled{&kinds[0]}}, nil)
	byName := map[string]admissionregistrationv1.MutatingWebhook{}
	for _, h := range cfg.Webhooks {
		byName[h.Name] = h
	}
	for name, ops := range map[string][]admissionregistrationv1.OperationType{
		"mpijobs.kubeflow.org.berth.dev":                {admissionregistrationv1.Create},
		"kueue-labelled-mpijobs.kubeflow.org.berth.dev": {admissionregistrationv1.Create},
		"unlabelled-mpijobs.kubeflow.org.berth.dev":     {admissionregistrationv1.Create, admissionregistrationv1.Update},
		"opted-in-mpijobs.kubeflow.org.berth.dev":       {admissionregistrationv1.Create, admissionregistrationv1.Update},
		"scale-mpijobs.kubeflow.org.berth.dev":          {admissionregistrationv1.Update},
	} {
		h, ok := byName[name]
		if !ok {
			t.Errorf("no hook %s in %v", name, slices.Collect(maps.Keys(byName)))
			continue
		}
		r := h.Rules[0]
		resource := "mpijobs"
		if strings.HasPrefix(name, "scale-") {
			resource = "mpijobs/scale"
		}
		if !slices.Equal(r.Operations, ops) || !slices.Equal(r.APIGroups, []string{"kubeflow.org"}) || !slices.Equal(r.Resources, []string{resource}) ||
			!slices.Equal(r.APIVersions, []string{"v2beta1"}) {
			t.Errorf("%s: rule %+v", name, r)
		}
		want := kinds[0].WebhookPath
		switch {
		case strings.HasPrefix(name, "unlabelled") || strings.HasPrefix(name, "opted"):
			want = kinds[0].DefaultWebhookPath
		case strings.HasPrefix(name, "scale-"):
			want = kinds[0].ScalePath()
		}
		if *h.ClientConfig.URL != "https://127.0.0.1:1"+want {
			t.Errorf("%s: served at %s, want %s", name, *h.ClientConfig.URL, want)
		}
		sel, err := metav1.LabelSelectorAsSelector(h.NamespaceSelector)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Matches(labels.Set{"kubernetes.io/metadata.name": "kube-system"}) || sel.Matches(labels.Set{"kubernetes.io/metadata.name": "berth-system"}) {
			t.Errorf("%s reaches kube-system or berth's own namespace", name)
		}
	}
	if on := Configured(cfg); !slices.Equal(on, []string{"mpijobs.kubeflow.org"}) {
		t.Errorf("read back %v as the configured kinds on", on)
	}
	if on := Configured(Configuration(Options{URL: "https://127.0.0.1:1"}, nil)); len(on) != 0 {
		t.Errorf("read back %v with no configured kinds", on)
	}
}
