package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/vcluster/syncer"
	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// Starter runs `berth ARGS...` in the background for a virtual cluster whose
// data directory is vdir, and returns its admin kubeconfig once it is ready
// (the CLI's detached start).
type Starter func(progress io.Writer, vdir string, args []string) (kubeconfig string, err error)

// Settings is what `berth vcluster create` was given, kept in the
// virtual cluster's data directory so `berth up` can start it again and
// `berth vcluster delete` knows what to remove.
type Settings struct {
	Name          string `json:"name"`
	HostNamespace string `json:"hostNamespace"`
	// AdminKubeconfig reaches the host with the rights to make (and delete)
	// the syncer's account; the syncer itself uses host.kubeconfig.
	AdminKubeconfig string `json:"adminKubeconfig"`
	translate.Policy
	CreatedNamespace bool `json:"createdNamespace,omitempty"`
	NoFsync          bool `json:"etcdUnsafeNoFsync,omitempty"`
}

// Dir holds the virtual clusters of the instance in dir, one data
// directory each.
func Dir(dir string) string { return filepath.Join(dir, "vclusters") }

func settingsFile(vdir string) string       { return filepath.Join(vdir, "vcluster.json") }
func hostKubeconfigFile(vdir string) string { return filepath.Join(vdir, "host.kubeconfig") }

// Read reads the settings of the virtual cluster whose data directory is vdir.
func Read(vdir string) (*Settings, error) {
	b, err := os.ReadFile(settingsFile(vdir))
	if err != nil {
		return nil, err
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", settingsFile(vdir), err)
	}
	return &s, nil
}

func write(vdir string, s *Settings) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(settingsFile(vdir), append(b, '\n'), 0o600)
}

// List lists the virtual clusters of the instance in dir, by name.
func List(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(Dir(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		vdir := filepath.Join(Dir(dir), e.Name())
		if _, err := os.Stat(settingsFile(vdir)); e.IsDir() && err == nil {
			out[e.Name()] = vdir
		}
	}
	return out, nil
}

// Create makes virtual cluster s.Name of the instance in dir (the
// host's side, its settings) and starts it; it returns its kubeconfig.
func Create(ctx context.Context, progress io.Writer, dir string, s *Settings, start Starter) (string, error) {
	if s.HostNamespace == "" {
		s.HostNamespace = "vcluster-" + s.Name
	}
	if s.AdminKubeconfig == "" {
		s.AdminKubeconfig = controlplane.Layout{Dir: dir}.Kubeconfig()
	}
	var err error
	if s.AdminKubeconfig, err = filepath.Abs(s.AdminKubeconfig); err != nil {
		return "", err
	}
	if _, err := os.Stat(s.AdminKubeconfig); err != nil {
		return "", fmt.Errorf("no host kubeconfig at %s: start the instance with 'berth up' (with the same --name and --data-dir), or pass --host-kubeconfig", s.AdminKubeconfig)
	}
	vdir := filepath.Join(Dir(dir), s.Name)
	if old, err := Read(vdir); err == nil {
		return "", fmt.Errorf("virtual cluster %s exists already (host namespace %s, data in %s); it starts with 'berth up', or delete it with 'berth vcluster delete %s'",
			s.Name, old.HostNamespace, vdir, s.Name)
	}
	if err := os.MkdirAll(vdir, 0o700); err != nil {
		return "", err
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintf(progress, "making the syncer's account in host namespace %s\n", s.HostNamespace)
	if err := prepareHost(pctx, s, vdir); err != nil {
		os.RemoveAll(vdir)
		_ = os.Remove(Dir(dir)) // only if this was the first
		return "", err
	}
	if err := write(vdir, s); err != nil {
		return "", err
	}
	kubeconfig, err := launch(progress, vdir, s, start)
	if err != nil {
		return "", fmt.Errorf("%w (the virtual cluster's data is kept in %s; remove it all with 'berth vcluster delete %s')", err, vdir, s.Name)
	}
	return kubeconfig, nil
}

// Delete stops virtual cluster name of the instance in dir, deletes
// everything it made on the host, and its data.
func Delete(ctx context.Context, progress io.Writer, dir, name string, timeout time.Duration) (*Settings, error) {
	vdir := filepath.Join(Dir(dir), name)
	s, err := Read(vdir)
	if err != nil {
		return nil, fmt.Errorf("no virtual cluster %s in %s (berth vcluster list shows them)", name, dir)
	}
	if _, err := controlplane.Down(ctx, vdir, controlplane.DownTimeout); err != nil {
		return nil, fmt.Errorf("stopping virtual cluster %s: %w", s.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, err := s.Host()
	if err != nil {
		return nil, err
	}
	if err := host.Clean(cctx, s.CreatedNamespace, progress); err != nil {
		return nil, fmt.Errorf("%w (run 'berth vcluster delete %s' again to finish)", err, s.Name)
	}
	return s, os.RemoveAll(vdir)
}

// launch starts `berth vcluster serve` for a created virtual cluster
// in the background and returns its kubeconfig once it is ready.
func launch(progress io.Writer, vdir string, s *Settings, start Starter) (string, error) {
	args := []string{"vcluster", "serve", s.Name, "--data-dir", vdir, "--host-kubeconfig", hostKubeconfigFile(vdir),
		"--host-namespace", s.HostNamespace}
	args = append(args, s.Policy.Args()...)
	if s.NoFsync {
		args = append(args, "--etcd-unsafe-no-fsync")
	}
	return start(prefixed(progress, "["+s.Name+"] "), vdir, args)
}

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func prefixed(w io.Writer, prefix string) io.Writer { return prefixWriter{w, prefix} }

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			if _, err := io.WriteString(p.w, p.prefix+line); err != nil {
				return 0, err
			}
		}
	}
	return len(b), nil
}

// StartAll starts the virtual clusters of the instance in dir that
// are not running, after `berth up`.
func StartAll(dir string, progress io.Writer, start Starter) {
	dirs, err := List(dir)
	if err != nil {
		fmt.Fprintf(progress, "warning: virtual clusters: %v\n", err)
	}
	for name, vdir := range dirs {
		if st, err := controlplane.ReadStatus(context.Background(), vdir); err == nil && st.Healthy() {
			continue
		}
		s, err := Read(vdir)
		if err == nil {
			fmt.Fprintf(progress, "starting virtual cluster %s\n", name)
			_, err = launch(progress, vdir, s, start)
		}
		if err != nil {
			fmt.Fprintf(progress, "warning: virtual cluster %s did not start: %v\n", name, err)
		}
	}
}

// StopAll stops the virtual clusters of the instance in dir.
func StopAll(dir string, out io.Writer) error {
	dirs, err := List(dir)
	if err != nil {
		return err
	}
	var errs []error
	for name, vdir := range dirs {
		ran, err := controlplane.Down(context.Background(), vdir, controlplane.DownTimeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("stopping virtual cluster %s: %w", name, err))
		} else if ran {
			fmt.Fprintf(out, "virtual cluster %s stopped\n", name)
		}
	}
	return errors.Join(errs...)
}

// Host is where the virtual cluster runs, as its creator reaches it.
func (s *Settings) Host() (syncer.Host, error) {
	admin, err := clientcmd.BuildConfigFromFlags("", s.AdminKubeconfig)
	if err != nil {
		return syncer.Host{}, fmt.Errorf("host kubeconfig: %w", err)
	}
	return syncer.Host{Admin: admin, VCluster: s.Name, Namespace: s.HostNamespace, Policy: s.Policy}, nil
}

// prepareHost sets the host up for a new virtual cluster and writes the
// syncer's host kubeconfig.
func prepareHost(ctx context.Context, s *Settings, vdir string) error {
	host, err := s.Host()
	if err != nil {
		return err
	}
	kubeconfig, created, err := host.Prepare(ctx)
	if err != nil {
		// Nothing half made is left behind.
		if cerr := host.Clean(ctx, created, io.Discard); cerr != nil {
			err = fmt.Errorf("%w; cleaning up: %v", err, cerr)
		}
		return err
	}
	s.CreatedNamespace = created
	return os.WriteFile(hostKubeconfigFile(vdir), kubeconfig, 0o600)
}
