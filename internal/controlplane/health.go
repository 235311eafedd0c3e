package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// healthClient trusts the instance CA and etcd's, and presents the admin
// certificate, or to etcd its health check's (Go picks the one whose CA the
// server asks for), so it can read every component's health endpoint.
func healthClient(l Layout) (*http.Client, error) {
	pool := x509.NewCertPool()
	for _, f := range []string{"ca.crt", "etcd-ca.crt"} {
		ca, err := os.ReadFile(l.PKI(f))
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s: no certificate found", l.PKI(f))
		}
	}
	var certs []tls.Certificate
	for _, f := range []string{"admin", "etcd-healthcheck-client"} {
		cert, err := tls.LoadX509KeyPair(l.PKI(f+".crt"), l.PKI(f+".key"))
		if err != nil {
			return nil, err
		}
		certs = append(certs, cert)
	}
	return &http.Client{
		Timeout: 3 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: certs},
			DisableKeepAlives: true,
		},
	}, nil
}

// EtcdTLS is what a client of the instance's etcd needs: etcd's CA, and the
// client certificate kube-apiserver uses (for tests that write to etcd
// directly; nothing else of berth's does).
func EtcdTLS(l Layout) (*tls.Config, error) {
	ca, err := os.ReadFile(l.PKI("etcd-ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: no certificate found", l.PKI("etcd-ca.crt"))
	}
	cert, err := tls.LoadX509KeyPair(l.PKI("apiserver-etcd-client.crt"), l.PKI("apiserver-etcd-client.key"))
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// checkHealth returns nil when url answers 200, else an error with the answer.
func checkHealth(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(lastLines(string(body), 5)))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
