package workercluster_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berth-dev/berth/internal/workercluster"
)

// kubeconfig is a worker's kubeconfig with inline credentials; change
// alters it before it is written.
func kubeconfig(t *testing.T, change func(c *clientcmdapi.Config)) []byte {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["w"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	c.AuthInfos["berth"] = &clientcmdapi.AuthInfo{Token: "secret-token"}
	c.Contexts["w"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "berth"}
	c.CurrentContext = "w"
	if change != nil {
		change(c)
	}
	data, err := clientcmd.Write(*c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestConfigTakesInlineCredentials(t *testing.T) {
	rc, err := workercluster.Config(kubeconfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:6443" || rc.BearerToken != "secret-token" || rc.QPS != workercluster.QPS || rc.Burst != workercluster.Burst {
		t.Errorf("%+v", rc)
	}
}

// Each way a Secret could make the controller run a program, read its own
// files, or send its credentials where they could be read is refused,
// naming the field.
func TestConfigRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(c *clientcmdapi.Config)
		want   string
	}{
		"exec": {func(c *clientcmdapi.Config) {
			c.AuthInfos["berth"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1"}
		}, `users[berth].exec: runs the program "/bin/sh"`},
		"auth provider": {func(c *clientcmdapi.Config) {
			c.AuthInfos["berth"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}, `users[berth].auth-provider: uses the "oidc" plugin`},
		"token file": {func(c *clientcmdapi.Config) { c.AuthInfos["berth"].TokenFile = "/var/run/secrets/token" },
			"users[berth].tokenFile: names the file /var/run/secrets/token"},
		"client certificate path": {func(c *clientcmdapi.Config) { c.AuthInfos["berth"].ClientCertificate = "/etc/berth/tls.crt" },
			"users[berth].client-certificate: names the file /etc/berth/tls.crt"},
		"client key path": {func(c *clientcmdapi.Config) { c.AuthInfos["berth"].ClientKey = "/etc/berth/tls.key" },
			"users[berth].client-key: names the file /etc/berth/tls.key"},
		"CA path": {func(c *clientcmdapi.Config) { c.Clusters["w"].CertificateAuthority = "/etc/ssl/ca.crt" },
			"clusters[w].certificate-authority: names the file /etc/ssl/ca.crt"},
		"proxy": {func(c *clientcmdapi.Config) { c.Clusters["w"].ProxyURL = "http://127.0.0.1:3128" },
			"clusters[w].proxy-url: sends berth's traffic and credentials through http://127.0.0.1:3128"},
		"unchecked certificate": {func(c *clientcmdapi.Config) {
			c.Clusters["w"].InsecureSkipTLSVerify, c.Clusters["w"].CertificateAuthorityData = true, nil
		}, "clusters[w].insecure-skip-tls-verify"},
		"an unused user with exec counts too": {func(c *clientcmdapi.Config) {
			c.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "aws", APIVersion: "client.authentication.k8s.io/v1"}}
		}, "users[other].exec"},
		"no current context": {func(c *clientcmdapi.Config) { c.CurrentContext = "" }, "it has no current-context"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := workercluster.Config(kubeconfig(t, tc.change)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
	if _, err := workercluster.Config([]byte("not: [a kubeconfig")); err == nil || !strings.Contains(err.Error(), "not a kubeconfig") {
		t.Errorf("garbage: %v", err)
	}
}

func TestNextAttempt(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 10 * time.Second, 1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 20: 5 * time.Minute} {
		if got := workercluster.NextAttempt(failures); got != want {
			t.Errorf("%d failures: %s, want %s", failures, got, want)
		}
	}
}
