package controlplane

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-dev/berth/internal/pki"
)

// Validity of what berth generates. Leaf certificates are renewed at start-up when
// less than renewBefore remains, so a long-lived data directory keeps working.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// certSpec describes one leaf certificate signed by the instance CA.
type certSpec struct {
	file         string // base name under pki/, without extension
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	usages       []x509.ExtKeyUsage
}

// apiServerServiceIP is the first address of the service range; in-cluster
// clients reach the API server through it, so it must be in the serving cert.
var apiServerServiceIP = net.ParseIP("10.0.0.1")

const serviceClusterIPRange = "10.0.0.0/24"

// Identity is a client of the API server that gets a certificate and a
// kubeconfig of its own: User is the certificate's common name, Groups its
// organizations.
type Identity struct {
	Name   string
	User   string
	Groups []string
}

func leafSpecs(extra []Identity) []certSpec {
	loopback := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	specs := []certSpec{
		{
			file:       "apiserver",
			commonName: "kube-apiserver",
			dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local"},
			ips:    append(loopback, apiServerServiceIP),
			usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		},
		// Shared by kube-controller-manager and kube-scheduler for their health and metrics endpoints.
		{file: "serving", commonName: "localhost", dnsNames: []string{"localhost"}, ips: loopback,
			usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{file: "admin", commonName: "berth-admin", organization: []string{"system:masters"}, usages: client},
		{file: "kube-controller-manager", commonName: "system:kube-controller-manager", usages: client},
		{file: "kube-scheduler", commonName: "system:kube-scheduler", usages: client},
		// The API server's towards kubelets (a real node's); RBAC lets it
		// read logs and exec (config/local/rbac.yaml).
		{file: "apiserver-kubelet-client", commonName: "kube-apiserver-kubelet-client", usages: client},
	}
	for _, id := range extra {
		specs = append(specs, certSpec{file: id.Name, commonName: id.User, organization: id.Groups, usages: client})
	}
	return specs
}

// etcdSpecs are etcd's serving and peer certificates, and those of its two
// clients: kube-apiserver, and the supervisor's health check.
func etcdSpecs() []certSpec {
	loopback := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return []certSpec{
		{file: "etcd-server", commonName: "etcd", dnsNames: []string{"localhost"}, ips: loopback, usages: both},
		{file: "etcd-peer", commonName: "etcd-peer", dnsNames: []string{"localhost"}, ips: loopback, usages: both},
		{file: "apiserver-etcd-client", commonName: "kube-apiserver-etcd-client", usages: client},
		{file: "etcd-healthcheck-client", commonName: "etcd-healthcheck-client", usages: client},
	}
}

// ensurePKI creates whatever is missing under dir: the CA, the service-account
// signing key pair and the leaf certificates. Existing files are reused, so
// kubeconfigs and service-account tokens stay valid across restarts; a file that
// exists but cannot be parsed is an error naming it, never silently replaced.
func ensurePKI(dir string, now time.Time, identities []Identity) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := ensureCA(dir, "ca", "berth-ca", now)
	if err != nil {
		return err
	}
	// The API server proves itself to aggregated API servers (berth's
	// visibility API) with a client certificate of a CA of its own: one the
	// ordinary CA signed would let any client certificate holder with the
	// right name speak for any user.
	frontProxyCA, err := ensureCA(dir, "front-proxy-ca", "berth-front-proxy-ca", now)
	if err != nil {
		return err
	}
	if err := ensureLeaf(dir, certSpec{file: "front-proxy-client", commonName: FrontProxyClientName,
		usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, frontProxyCA, now); err != nil {
		return err
	}
	// etcd trusts a CA of its own, as kubeadm's does: a certificate of the
	// ordinary CA (any component's, any user's) reads nothing from it.
	etcdCA, err := ensureCA(dir, "etcd-ca", "berth-etcd-ca", now)
	if err != nil {
		return err
	}
	for _, spec := range etcdSpecs() {
		if err := ensureLeaf(dir, spec, etcdCA, now); err != nil {
			return err
		}
	}
	if err := ensureKeyPair(filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")); err != nil {
		return err
	}
	for _, spec := range leafSpecs(identities) {
		if err := ensureLeaf(dir, spec, ca, now); err != nil {
			return err
		}
	}
	return nil
}

// FrontProxyClientName is the common name of the API server's certificate
// towards aggregated API servers, the one name they accept.
const FrontProxyClientName = "front-proxy-client"

func ensureCA(dir, file, commonName string, now time.Time) (*pki.KeyPair, error) {
	certPath, keyPath := filepath.Join(dir, file+".crt"), filepath.Join(dir, file+".key")
	ca, err := loadPair(certPath, keyPath)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return ca, err
	}
	if ca, err = pki.NewCA(commonName, now, caValidity); err != nil {
		return nil, err
	}
	return ca, writePair(certPath, keyPath, ca)
}

func ensureLeaf(dir string, spec certSpec, ca *pki.KeyPair, now time.Time) error {
	certPath, keyPath := filepath.Join(dir, spec.file+".crt"), filepath.Join(dir, spec.file+".key")
	kp, err := loadPair(certPath, keyPath)
	switch {
	case err == nil && pki.Fresh(kp.Cert, now, renewBefore) && kp.Cert.CheckSignatureFrom(ca.Cert) == nil:
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	leaf, err := ca.Issue(pki.Spec{CommonName: spec.commonName, Organization: spec.organization,
		DNSNames: spec.dnsNames, IPs: spec.ips, Usages: spec.usages}, now, leafValidity)
	if err != nil {
		return err
	}
	return writePair(certPath, keyPath, leaf)
}

// ensureKeyPair creates the service-account signing key and its public half.
func ensureKeyPair(keyPath, pubPath string) error {
	data, err := os.ReadFile(keyPath)
	switch {
	case err == nil:
		if _, err := pki.ParseKey(data); err != nil {
			return corrupt(keyPath, err)
		}
		if _, err := os.Stat(pubPath); err == nil {
			return nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	key, err := pki.NewKey()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyPath, pki.EncodeKey(key), 0o600); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return writeFileAtomic(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

func loadPair(certPath, keyPath string) (*pki.KeyPair, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	cert, err := pki.ParseCert(certPEM)
	if err != nil {
		return nil, corrupt(certPath, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	key, err := pki.ParseKey(keyPEM)
	if err != nil {
		return nil, corrupt(keyPath, err)
	}
	return &pki.KeyPair{Cert: cert, Key: key}, nil
}

func corrupt(path string, err error) error {
	return fmt.Errorf("%s: %w; restore it or delete the data directory to start afresh", path, err)
}

func writePair(certPath, keyPath string, kp *pki.KeyPair) error {
	if err := writeFileAtomic(keyPath, kp.KeyPEM(), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certPath, kp.CertPEM(), 0o600)
}

// writeFileAtomic writes via a temporary file and rename, so a crash never
// leaves a half-written file behind.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
