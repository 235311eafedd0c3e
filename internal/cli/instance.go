package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/controlplane"
)

// instanceFlags select a local instance: by name, with its data directory
// defaulting to ~/.berth/<name>.
type instanceFlags struct {
	name    string
	dataDir string
}

func (f *instanceFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.name, "name", envOr("BERTH_NAME", "berth"), "instance name (env BERTH_NAME)")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", os.Getenv("BERTH_DATA_DIR"), "data directory (env BERTH_DATA_DIR; default ~/.berth/<name>)")
}

// resolve validates the name and returns the absolute data directory.
func (f *instanceFlags) resolve() (string, error) {
	if err := controlplane.ValidateName(f.name); err != nil {
		return "", err
	}
	if f.dataDir == "" {
		return controlplane.DefaultDataDir(f.name)
	}
	return filepath.Abs(f.dataDir)
}

// selector is the shortest flags that select this instance again, for hints.
func (f *instanceFlags) selector(dir string) string {
	s := "--name " + f.name
	if def, err := controlplane.DefaultDataDir(f.name); err != nil || def != dir {
		s += " --data-dir " + dir
	}
	return s
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// running resolves the instance and reads its state, and fails unless it
// runs, saying how to start it (upFlags are the flags it needs, hint what
// else would do).
func (f *instanceFlags) running(upFlags, hint string) (string, *controlplane.State, error) {
	dir, err := f.resolve()
	if err != nil {
		return "", nil, err
	}
	st, err := controlplane.ReadState(controlplane.Layout{Dir: dir})
	if err != nil {
		return "", nil, err
	}
	if st == nil || st.Phase != controlplane.PhaseRunning {
		return "", nil, fmt.Errorf("berth %q is not running (data directory %s); start it with 'berth up --detach%s %s'%s",
			f.name, dir, upFlags, f.selector(dir), hint)
	}
	return dir, st, nil
}
