package visibility

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/internal/pki"
	"github.com/berth-dev/berth/internal/queue"
)

var now = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

// certs makes a front-proxy CA, its client certificate named name, and a
// client certificate of another CA with the same name.
func certs(t testing.TB, name string) (ca *pki.KeyPair, proxy, stranger *x509.Certificate) {
	t.Helper()
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	ca, err := pki.NewCA("front-proxy-ca", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(pki.Spec{CommonName: name, Usages: client}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("other-ca", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s, err := other.Issue(pki.Spec{CommonName: name, Usages: client}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca, p.Cert, s.Cert
}

func TestParseFrontProxy(t *testing.T) {
	ca, _, _ := certs(t, "front-proxy-client")
	p, err := ParseFrontProxy(map[string]string{"requestheader-client-ca-file": string(ca.CertPEM()),
		"requestheader-allowed-names": `["front-proxy-client"]`})
	if err != nil || len(p.Names) != 1 || p.Names[0] != "front-proxy-client" {
		t.Fatalf("ParseFrontProxy = %+v, %v", p, err)
	}
	for name, data := range map[string]map[string]string{
		"requestheader-client-ca-file": {},
		"no PEM certificate":           {"requestheader-client-ca-file": "junk"},
		"not a JSON list": {"requestheader-client-ca-file": string(ca.CertPEM()),
			"requestheader-allowed-names": "front-proxy-client"},
	} {
		if _, err := ParseFrontProxy(data); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("ParseFrontProxy(%v) = %v, want an error about %q", data, err, name)
		}
	}
}

func TestOnlyTheFrontProxyMayAsk(t *testing.T) {
	ca, proxy, stranger := certs(t, "front-proxy-client")
	someone, err := ca.Issue(pki.Spec{CommonName: "someone", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	p := FrontProxy{CAs: pool, Names: []string{"front-proxy-client"}}
	state := func(c *x509.Certificate) *tls.ConnectionState {
		return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
	}
	if err := p.Verify(state(proxy), now); err != nil {
		t.Errorf("the front proxy was refused: %v", err)
	}
	if err := p.Verify(state(proxy), now.Add(2*time.Hour)); err == nil {
		t.Error("an expired certificate was taken")
	}
	if err := p.Verify(state(stranger), now); err == nil {
		t.Error("a certificate of another CA was taken")
	}
	if err := p.Verify(nil, now); err == nil || !strings.Contains(err.Error(), "no client certificate") {
		t.Errorf("no certificate: %v", err)
	}
	if err := p.Verify(state(someone.Cert), now); err == nil || !strings.Contains(err.Error(), "not one of the front-proxy names") {
		t.Errorf("a certificate of the CA not named front-proxy-client: %v", err)
	}
}

// lines is a fixed set of lines.
type lines struct {
	cqs map[string][]queue.Waiting
	lqs map[string]string
}

func (l lines) Line(cq string) ([]queue.Waiting, bool) {
	line, ok := l.cqs[cq]
	return append([]queue.Waiting(nil), line...), ok
}

func (l lines) LocalQueueLine(key string) (string, []queue.Waiting, bool) {
	cq, ok := l.lqs[key]
	if !ok {
		return "", nil, false
	}
	line, _ := l.Line(cq)
	return cq, line, true
}

func serve(t *testing.T, s *Server, method, path string, cert *x509.Certificate) (int, []byte) {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	r.TLS = nil
	if cert != nil {
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

func TestServer(t *testing.T) {
	ca, proxy, stranger := certs(t, "front-proxy-client")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	var notReady error
	s := &Server{
		Lines: lines{
			cqs: map[string][]queue.Waiting{"cq": {waiting("b/late", "b/lq", 0, time.Hour), waiting("a/early", "a/lq", 0, 0)}},
			lqs: map[string]string{"a/lq": "cq", "b/lq": "cq"},
		},
		Proxy: FrontProxy{CAs: pool}, Ready: func() error { return notReady }, Clock: clocktesting.NewFakePassiveClock(now),
	}
	summary := func(body []byte) visibilityv1.PendingWorkloadsSummary {
		var out visibilityv1.PendingWorkloadsSummary
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return out
	}

	code, body := serve(t, s, "GET", Path+"/clusterqueues/cq/pendingworkloads", proxy)
	if sum := summary(body); code != 200 || sum.Kind != "PendingWorkloadsSummary" || sum.Name != "cq" || sum.Total != 2 ||
		sum.Items[0].Name != "early" || sum.Items[1].PositionInClusterQueue != 2 {
		t.Errorf("ClusterQueue view: %d %s", code, body)
	}
	code, body = serve(t, s, "GET", Path+"/namespaces/b/localqueues/lq/pendingworkloads?limit=1", proxy)
	if sum := summary(body); code != 200 || sum.Namespace != "b" || sum.Name != "lq" || sum.Total != 1 ||
		len(sum.Items) != 1 || sum.Items[0].PositionInClusterQueue != 2 {
		t.Errorf("LocalQueue view: %d %s", code, body)
	}
	code, body = serve(t, s, "GET", Path, proxy)
	var disc metav1.APIResourceList
	if err := json.Unmarshal(body, &disc); code != 200 || err != nil || len(disc.APIResources) != 2 {
		t.Errorf("discovery: %d %s", code, body)
	}

	if code, body := serve(t, s, "GET", OpenAPIPath, proxy); code != 200 || !strings.Contains(string(body), `"swagger":"2.0"`) {
		t.Errorf("OpenAPI: %d %s", code, body)
	}

	for _, c := range []struct {
		method, path string
		cert         *x509.Certificate
		code         int
		says         string
	}{
		{"GET", Path + "/clusterqueues/cq/pendingworkloads", nil, 401, "no client certificate"},
		{"GET", Path + "/clusterqueues/cq/pendingworkloads", stranger, 401, "not the API server's front proxy"},
		{"POST", Path + "/clusterqueues/cq/pendingworkloads", proxy, 405, "read-only"},
		{"GET", Path + "/clusterqueues/nope/pendingworkloads", proxy, 404, "ClusterQueue nope not found"},
		{"GET", Path + "/namespaces/c/localqueues/lq/pendingworkloads", proxy, 404, "LocalQueue c/lq not found"},
		{"GET", Path + "/clusterqueues/cq/pendingworkloads?limit=0", proxy, 400, `limit="0"`},
		{"GET", Path + "/clusterqueues/cq/pendingworkloads?offset=-1", proxy, 400, `offset="-1"`},
		{"GET", Path + "/clusterqueues/cq/pendingworkloads?offset=9223372036854775807", proxy, 400, "from 0 to 100000000"},
		{"GET", Path + "/clusterqueues/cq/pendingworkloads?limit=10001", proxy, 400, "from 1 to 10000"},
		{"GET", Path + "/clusterqueues/cq", proxy, 404, "not found"},
	} {
		code, body := serve(t, s, c.method, c.path, c.cert)
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil || code != c.code || st.Code != int32(c.code) || !strings.Contains(st.Message, c.says) {
			t.Errorf("%s %s: %d %s, want %d saying %q", c.method, c.path, code, body, c.code, c.says)
		}
	}

	notReady = ErrNotLeading
	if code, body := serve(t, s, "GET", Path+"/clusterqueues/cq/pendingworkloads", proxy); code != 503 || !strings.Contains(string(body), "lead") {
		t.Errorf("not ready: %d %s", code, body)
	}
}

// Whatever the query, the handler answers with a status, never a panic, and
// a page never holds more than the line.
func FuzzServer(f *testing.F) {
	ca, proxy, _ := certs(f, "front-proxy-client")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	s := &Server{
		Lines: lines{
			cqs: map[string][]queue.Waiting{"cq": {waiting("b/late", "b/lq", 0, time.Hour), waiting("a/early", "a/lq", 0, 0),
				waiting("a/mid", "a/lq", 5, time.Minute)}},
			lqs: map[string]string{"a/lq": "cq", "b/lq": "cq"},
		},
		Proxy: FrontProxy{CAs: pool}, Ready: func() error { return nil }, Clock: clocktesting.NewFakePassiveClock(now),
	}
	for _, seed := range []string{"clusterqueues/cq/pendingworkloads?offset=1&limit=1", "namespaces/a/localqueues/lq/pendingworkloads?offset=9223372036854775807",
		"clusterqueues/cq/pendingworkloads?limit=-9223372036854775808", "namespaces/a/localqueues/lq/pendingworkloads?offset=2147483647&limit=10000"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tail string) {
		r := httptest.NewRequest("GET", "/", nil)
		u, err := url.Parse(Path + "/" + tail)
		if err != nil {
			return
		}
		r.URL = u
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{proxy}}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		switch w.Code {
		case 200:
			var sum visibilityv1.PendingWorkloadsSummary
			if json.Unmarshal(w.Body.Bytes(), &sum) == nil && len(sum.Items) > 3 {
				t.Errorf("%s: %d items from a line of 3", tail, len(sum.Items))
			}
		case 400, 404:
		default:
			t.Errorf("%s: status %d %s", tail, w.Code, w.Body)
		}
	})
}
