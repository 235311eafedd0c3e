package cli

import (
	"strings"
	"testing"
)

// A run that takes no profiles refuses --profile rather than ignore it,
// before it touches any cluster.
func TestBenchRefusesProfileWhereItTakesNone(t *testing.T) {
	for _, scenario := range []string{simScale, mcRun, vcRun} {
		cmd := newRoot()
		cmd.SetArgs([]string{"bench", scenario, "--profile", t.TempDir(), "--kubeconfig", "/nonexistent"})
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "--profile is not supported for "+scenario) {
			t.Errorf("%s --profile: %v, want it refused by name", scenario, err)
		}
	}
}
