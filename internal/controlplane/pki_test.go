package controlplane

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsurePKIIssuesWhatTheComponentsNeed(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := ensurePKI(dir, now, nil); err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	pool := x509.NewCertPool()
	pool.AddCert(ca)

	api := readCert(t, filepath.Join(dir, "apiserver.crt"))
	for _, host := range []string{"localhost", "kubernetes.default.svc"} {
		if _, err := api.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: now}); err != nil {
			t.Errorf("API server certificate not valid for %s: %v", host, err)
		}
	}
	for _, ip := range []net.IP{net.ParseIP("127.0.0.1"), apiServerServiceIP} {
		if !slices.ContainsFunc(api.IPAddresses, ip.Equal) {
			t.Errorf("API server certificate lacks IP %s", ip)
		}
	}
	admin := readCert(t, filepath.Join(dir, "admin.crt"))
	if !slices.Contains(admin.Subject.Organization, "system:masters") {
		t.Errorf("admin certificate groups %v, want system:masters", admin.Subject.Organization)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate is not a client certificate of the CA: %v", err)
	}
	for _, c := range []string{"kube-controller-manager", "kube-scheduler"} {
		if got := readCert(t, filepath.Join(dir, c+".crt")).Subject.CommonName; got != "system:"+c {
			t.Errorf("%s certificate is for %q", c, got)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ca.key must be private: %v %v", info.Mode(), err)
	}
}

// etcd trusts only what its own CA signed: kube-apiserver's and the health
// check's client certificates; none of the ordinary CA's (admin, any
// component's or user's) would be let in.
func TestEtcdHasACAOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := ensurePKI(dir, now, []Identity{{Name: "berth-sim", User: "berth-sim"}}); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, filepath.Join(dir, "etcd-ca.crt")))
	client := x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, f := range []string{"apiserver-etcd-client", "etcd-healthcheck-client", "etcd-peer"} {
		if _, err := readCert(t, filepath.Join(dir, f+".crt")).Verify(client); err != nil {
			t.Errorf("%s is not a client certificate of etcd's CA: %v", f, err)
		}
	}
	for _, f := range []string{"admin", "kube-controller-manager", "berth-sim", "apiserver-kubelet-client"} {
		if _, err := readCert(t, filepath.Join(dir, f+".crt")).Verify(client); err == nil {
			t.Errorf("etcd would take %s's certificate", f)
		}
	}
	server := readCert(t, filepath.Join(dir, "etcd-server.crt"))
	if _, err := server.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("etcd's serving certificate is not valid for 127.0.0.1: %v", err)
	}
}

func TestEnsurePKIKeepsAndRenews(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := ensurePKI(dir, now, nil); err != nil {
		t.Fatal(err)
	}
	ca1 := readCert(t, filepath.Join(dir, "ca.crt"))
	admin1 := readCert(t, filepath.Join(dir, "admin.crt"))
	sa1, _ := os.ReadFile(filepath.Join(dir, "sa.key"))

	// A restart a day later keeps everything: kubeconfigs and tokens stay valid.
	if err := ensurePKI(dir, now.Add(24*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if !readCert(t, filepath.Join(dir, "admin.crt")).Equal(admin1) {
		t.Error("admin certificate replaced although it was valid")
	}
	if sa2, _ := os.ReadFile(filepath.Join(dir, "sa.key")); string(sa2) != string(sa1) {
		t.Error("service-account key replaced")
	}

	// Close to expiry, leaves are renewed under the same CA.
	later := admin1.NotAfter.Add(-renewBefore / 2)
	if err := ensurePKI(dir, later, nil); err != nil {
		t.Fatal(err)
	}
	admin2 := readCert(t, filepath.Join(dir, "admin.crt"))
	if admin2.Equal(admin1) || !admin2.NotAfter.After(admin1.NotAfter) {
		t.Error("an admin certificate about to expire was not renewed")
	}
	if !readCert(t, filepath.Join(dir, "ca.crt")).Equal(ca1) {
		t.Error("the CA changed on renewal")
	}
}

func TestEnsurePKIRefusesCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	if err := ensurePKI(dir, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "kube-scheduler.key")
	if err := os.WriteFile(key, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := ensurePKI(dir, time.Now(), nil)
	if err == nil || !strings.Contains(err.Error(), key) {
		t.Fatalf("ensurePKI with a corrupt key = %v, want an error naming %s", err, key)
	}
}

// Aggregated API servers trust the front-proxy CA alone: the API server's
// certificate towards them must come from it, and no other certificate may.
func TestFrontProxyClientHasACAOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := ensurePKI(dir, now, nil); err != nil {
		t.Fatal(err)
	}
	pool := func(file string) *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(readCert(t, filepath.Join(dir, file)))
		return p
	}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	proxy := readCert(t, filepath.Join(dir, "front-proxy-client.crt"))
	if proxy.Subject.CommonName != FrontProxyClientName {
		t.Errorf("front-proxy certificate is for %q, want %q", proxy.Subject.CommonName, FrontProxyClientName)
	}
	if _, err := proxy.Verify(x509.VerifyOptions{Roots: pool("front-proxy-ca.crt"), CurrentTime: now, KeyUsages: client}); err != nil {
		t.Errorf("front-proxy certificate is not a client certificate of the front-proxy CA: %v", err)
	}
	admin := readCert(t, filepath.Join(dir, "admin.crt"))
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool("front-proxy-ca.crt"), CurrentTime: now, KeyUsages: client}); err == nil {
		t.Error("the admin certificate verifies against the front-proxy CA; it could speak for any user")
	}
}
