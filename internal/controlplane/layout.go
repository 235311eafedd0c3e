package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Layout names every file berth keeps in an instance's data directory. Only
// Layout knows these paths, so the directory's shape is documented in one place:
//
//	berth.lock            held (flock) by the running supervisor
//	instance.json         runtime state: phase, pids, ports, last failure
//	kubeconfig            admin kubeconfig for users and tools
//	pki/                  CA, serving and client certificates, service-account keys
//	etcd/                 etcd's data: every Kubernetes object lives here
//	logs/<component>.log  each component's output, appended across runs
type Layout struct{ Dir string }

func (l Layout) LockFile() string   { return filepath.Join(l.Dir, "berth.lock") }
func (l Layout) StateFile() string  { return filepath.Join(l.Dir, "instance.json") }
func (l Layout) Kubeconfig() string { return filepath.Join(l.Dir, "kubeconfig") }
func (l Layout) PKIDir() string     { return filepath.Join(l.Dir, "pki") }
func (l Layout) EtcdDir() string    { return filepath.Join(l.Dir, "etcd") }
func (l Layout) LogDir() string     { return filepath.Join(l.Dir, "logs") }

// PKI returns the path of a file under pki/.
func (l Layout) PKI(file string) string { return filepath.Join(l.PKIDir(), file) }

// LogFile returns the log of a component (or "berth" for the supervisor itself).
func (l Layout) LogFile(component string) string {
	return filepath.Join(l.LogDir(), component+".log")
}

// ComponentKubeconfig is the kubeconfig a component uses to reach the API server
// with its own identity.
func (l Layout) ComponentKubeconfig(component string) string {
	return filepath.Join(l.PKIDir(), component+".kubeconfig")
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidateName checks an instance name: it appears in paths and kubeconfig
// contexts, so it is held to a DNS label.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("--name %q: must be a DNS label (lower-case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit)", name)
	}
	return nil
}

// DefaultDataDir is ~/.berth/<name>.
func DefaultDataDir(name string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for the default --data-dir: %w (pass --data-dir)", err)
	}
	return filepath.Join(home, ".berth", name), nil
}
