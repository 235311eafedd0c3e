package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/dashboard"
)

// `berth up` serves the dashboard beside the instance and prints its URL,
// which carries a token made for the run: another user of the machine, who
// reaches the port but was not given the URL, is refused; the URL's holder
// reads the cohort tree; and it is gone once the instance is down. `berth
// dashboard` serves it over TLS with a token of the user's too.
func TestUpServesTheDashboard(t *testing.T) {
	inst := newInstance(t, "dash")
	all, stdout, code := inst.runSplit(t, "up", "--detach")
	if code != 0 {
		t.Fatalf("berth up --detach: exit %d\n%s", code, all)
	}
	url := ""
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "watch it: "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	base, token, ok := strings.Cut(url, "?token=")
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !ok || len(token) < dashboard.MinTokenLength {
		t.Fatalf("no dashboard URL on 127.0.0.1 with a token in the output:\n%s", stdout)
	}
	res, err := http.Get(base + "api/tree")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the dashboard's API without the token: %s; want 401 Unauthorized", res.Status)
	}
	res, err = http.Get(base + "api/tree?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	var tree dashboard.Tree
	err = json.NewDecoder(res.Body).Decode(&tree)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || tree.Roots == nil {
		t.Fatalf("GET %sapi/tree with the token: %s, %v, %+v", base, res.Status, err, tree)
	}

	servedOverTLSWithAToken(t, inst)

	inst.down(t)
	if res, err := http.Get(base + "api/tree"); err == nil {
		res.Body.Close()
		t.Errorf("the dashboard still answers after berth down: %s", res.Status)
	}
}

// servedOverTLSWithAToken runs berth dashboard for inst over TLS with a
// token: beyond loopback it is refused without them; with them, a client
// that trusts the certificate is refused the API until it gives the token
// at /login, and then reads the tree.
func servedOverTLSWithAToken(t *testing.T, inst *instance) {
	t.Helper()
	if out, code := inst.run(t, "dashboard", "--listen", "0.0.0.0:0"); code == 0 || !strings.Contains(out, "--tls-cert-file, --tls-key-file and --token-file") {
		t.Errorf("berth dashboard --listen 0.0.0.0:0 without TLS and a token: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	const token = "e2e-token-0123456789abcdef"
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "token": []byte(token + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(inst.bin, "dashboard", "--name", inst.name, "--data-dir", inst.dir, "--listen", "127.0.0.1:0",
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-key-file", filepath.Join(dir, "tls.key"), "--token-file", filepath.Join(dir, "token"))
	url := "https://" + startUntil(t, cmd, regexp.MustCompile(`^https://(127\.0\.0\.1:[0-9]+/)$`))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	get := func(path string) (int, []byte) {
		res, err := client.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, body
	}
	if code, _ := get("api/tree"); code != http.StatusUnauthorized {
		t.Errorf("the API before the token: %d; want 401", code)
	}
	res, err := client.PostForm(url+"login", neturl.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/" {
		t.Fatalf("POST /login with the token: %s at %s; want the page", res.Status, res.Request.URL)
	}
	code, body := get("api/tree")
	var tree dashboard.Tree
	if err := json.Unmarshal(body, &tree); code != http.StatusOK || err != nil || tree.Roots == nil {
		t.Errorf("the API with the token: %d %v %s", code, err, body)
	}
}

// selfSigned makes a certificate for 127.0.0.1 and its key, in PEM.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "berth dashboard e2e"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
