package controlplane

import (
	"fmt"
	"io/fs"
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
//	flexvolume/           kube-controller-manager's flex volume plugin directory (empty)
//	logs/<component>.log  each component's output, appended across runs
//	logs/writes.log       with --audit-writes: kube-apiserver's audit log of every write
//	audit-policy.yaml     with --audit-writes: the policy that log follows
//
// Everything in it is readable by its owner alone (ownerOnly).
type Layout struct{ Dir string }

func (l Layout) LockFile() string   { return filepath.Join(l.Dir, "berth.lock") }
func (l Layout) StateFile() string  { return filepath.Join(l.Dir, "instance.json") }
func (l Layout) Kubeconfig() string { return filepath.Join(l.Dir, "kubeconfig") }
func (l Layout) PKIDir() string     { return filepath.Join(l.Dir, "pki") }
func (l Layout) EtcdDir() string    { return filepath.Join(l.Dir, "etcd") }
func (l Layout) LogDir() string     { return filepath.Join(l.Dir, "logs") }

// WritesLog is kube-apiserver's audit log of writes (PlanOptions.AuditWrites),
// and AuditPolicy the policy it follows.
func (l Layout) WritesLog() string   { return filepath.Join(l.LogDir(), "writes.log") }
func (l Layout) AuditPolicy() string { return filepath.Join(l.Dir, "audit-policy.yaml") }

// FlexVolumeDir is kube-controller-manager's flex volume plugin directory.
func (l Layout) FlexVolumeDir() string { return filepath.Join(l.Dir, "flexvolume") }

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

// ownerOnly takes group and other permissions away from the data directory
// and everything in it: it holds private keys, admin kubeconfigs and the
// cluster's data. Files berth writes are created so; this also tightens what
// an older berth left, or what the user created the directory with.
func ownerOnly(dir string) error {
	// Changes go through a Root, so an entry swapped for a symlink meanwhile
	// cannot lead them outside dir.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			return root.Chmod(p, perm&^0o077)
		}
		return nil
	})
}
