package bench

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/berth-dev/berth/internal/bench/plot"
	berthversion "github.com/berth-dev/berth/internal/version"
)

// writeFiles writes results.json, summary.md, chart.png and chart.csv.
func writeFiles(dir string, results any, summary string, ch plot.Chart) error {
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
	return plot.WriteFiles(filepath.Join(dir, "chart"), ch)
}

// version is the commit berth was built from, when the build knows it.
func version() string { return berthversion.Get().Short() }
