package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
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

func leafSpecs() []certSpec {
	loopback := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return []certSpec{
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
	}
}

// ensurePKI creates whatever is missing under dir: the CA, the service-account
// signing key pair and the leaf certificates. Existing files are reused, so
// kubeconfigs and service-account tokens stay valid across restarts; a file that
// exists but cannot be parsed is an error naming it, never silently replaced.
func ensurePKI(dir string, now time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caCert, caKey, err := ensureCA(dir, now)
	if err != nil {
		return err
	}
	if err := ensureKeyPair(filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")); err != nil {
		return err
	}
	for _, spec := range leafSpecs() {
		if err := ensureLeaf(dir, spec, caCert, caKey, now); err != nil {
			return err
		}
	}
	return nil
}

func ensureCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	cert, key, err := loadPair(certPath, keyPath)
	if err == nil {
		return cert, key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	newKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "berth-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, newKey.Public(), newKey)
	if err != nil {
		return nil, nil, err
	}
	if err := writePair(certPath, keyPath, der, newKey); err != nil {
		return nil, nil, err
	}
	cert, err = x509.ParseCertificate(der)
	return cert, newKey, err
}

func ensureLeaf(dir string, spec certSpec, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	certPath, keyPath := filepath.Join(dir, spec.file+".crt"), filepath.Join(dir, spec.file+".key")
	cert, _, err := loadPair(certPath, keyPath)
	switch {
	case err == nil && cert.NotAfter.Sub(now) > renewBefore && cert.CheckSignatureFrom(ca) == nil:
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  spec.usages,
		DNSNames:     spec.dnsNames,
		IPAddresses:  spec.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	return writePair(certPath, keyPath, der, key)
}

// ensureKeyPair creates the service-account signing key and its public half.
func ensureKeyPair(keyPath, pubPath string) error {
	if _, err := loadKey(keyPath); err == nil {
		if _, err := os.Stat(pubPath); err == nil {
			return nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return writeFileAtomic(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	data, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("%s: not a PEM certificate; restore it or delete the data directory to start afresh", certPath)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w; restore it or delete the data directory to start afresh", certPath, err)
	}
	key, err := loadKey(keyPath)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func loadKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: not a PEM private key; restore it or delete the data directory to start afresh", path)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; restore it or delete the data directory to start afresh", path, err)
	}
	return key, nil
}

func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writeFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n
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
