package visibility

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// FrontProxy says which client certificates speak for the Kubernetes API
// server: those its front-proxy CA signed, with one of Names as common name
// (any, when Names is empty, as the API server itself takes it).
type FrontProxy struct {
	CAs   *x509.CertPool
	Names []string
}

// AuthenticationConfigMap is where the API server publishes its front-proxy
// CA and names, in namespace kube-system.
const AuthenticationConfigMap = "extension-apiserver-authentication"

// ParseFrontProxy reads the front-proxy settings from the data of the
// API server's ConfigMap kube-system/extension-apiserver-authentication.
func ParseFrontProxy(data map[string]string) (FrontProxy, error) {
	const caKey, namesKey = "requestheader-client-ca-file", "requestheader-allowed-names"
	where := "ConfigMap kube-system/" + AuthenticationConfigMap
	bundle := data[caKey]
	if bundle == "" {
		return FrontProxy{}, fmt.Errorf("%s has no %s: the API server forwards no requests to aggregated APIs (start it with --requestheader-client-ca-file and --proxy-client-cert-file)", where, caKey)
	}
	p := FrontProxy{CAs: x509.NewCertPool()}
	if !p.CAs.AppendCertsFromPEM([]byte(bundle)) {
		return FrontProxy{}, fmt.Errorf("%s: %s holds no PEM certificate", where, caKey)
	}
	if names := data[namesKey]; names != "" {
		if err := json.Unmarshal([]byte(names), &p.Names); err != nil {
			return FrontProxy{}, fmt.Errorf("%s: %s is not a JSON list of names: %w", where, namesKey, err)
		}
	}
	return p, nil
}

// Verify reports whether a connection's client certificate speaks for the
// API server at now.
func (p FrontProxy) Verify(cs *tls.ConnectionState, now time.Time) error {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate: only the Kubernetes API server may call this API")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: p.CAs, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("client certificate %q is not the API server's front proxy: %w", leaf.Subject.CommonName, err)
	}
	if len(p.Names) > 0 && !slices.Contains(p.Names, leaf.Subject.CommonName) {
		return fmt.Errorf("client certificate %q is not one of the front-proxy names %v", leaf.Subject.CommonName, p.Names)
	}
	return nil
}
