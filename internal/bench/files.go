package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/berth-dev/berth/internal/chart"
)

// writeFiles writes results.json, summary.md, chart.png and chart.csv.
func writeFiles(dir string, results any, summary string, ch chart.Chart) error {
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(summary), 0o644); err != nil {
		return err
	}
	return chart.WriteFiles(filepath.Join(dir, "chart"), ch)
}

// version is the commit berth was built from, when the build knows it.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown (built without VCS stamping)"
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if dirty {
		rev += "+"
	}
	return rev
}
