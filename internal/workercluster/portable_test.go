package workercluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/workercluster"
)

// A worker's kubeconfig is stored with its files inlined and only the
// chosen context; one that would run a program is refused before anything
// is stored.
func TestPortable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("the CA"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config")
	err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
current-context: east
clusters:
- name: east
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt}
- name: west
  cluster: {server: "https://127.0.0.1:7443"}
users:
- name: admin
  user: {token: abc}
- name: cloud
  user:
    exec: {command: cloud-login, apiVersion: client.authentication.k8s.io/v1}
contexts:
- name: east
  context: {cluster: east, user: admin}
- name: west
  context: {cluster: west, user: cloud}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	data, err := workercluster.Portable(path, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) != 1 || string(cfg.Clusters["east"].CertificateAuthorityData) != "the CA" || cfg.Clusters["east"].CertificateAuthority != "" ||
		len(cfg.AuthInfos) != 1 {
		t.Errorf("stored kubeconfig:\n%s", data)
	}
	if _, err := workercluster.Portable(path, "west"); err == nil || !strings.Contains(err.Error(), `users[cloud].exec: runs the program "cloud-login"`) {
		t.Errorf("context west: %v", err)
	}
}
