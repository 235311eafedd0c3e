package cli

import (
	"io"
	"strings"
	"testing"
)

// --pods-ready-* flags are refused without --wait-for-pods-ready, and bad
// values with it, and so are integrations berth has not or flags that need
// one switched off, before the controller connects to anything.
func TestPodsReadyFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pods-ready-timeout=1m"}, "--pods-ready-timeout is read only with --wait-for-pods-ready"},
		{[]string{"--pods-ready-block-admission"}, "--pods-ready-block-admission is read only with --wait-for-pods-ready"},
		{[]string{"--wait-for-pods-ready", "--pods-ready-timeout=0s"}, "--pods-ready-timeout 0s: must be positive"},
		{[]string{"--wait-for-pods-ready", "--pods-ready-backoff-base=2m", "--pods-ready-backoff-max=1m"},
			"--pods-ready-backoff-max 1m0s: must be at least --pods-ready-backoff-base 2m0s"},
		{[]string{"--wait-for-pods-ready", "--pods-ready-requeue-limit=-1"}, "--pods-ready-requeue-limit -1"},
		{[]string{"--admission-fair-sharing-half-life=0s"}, "--admission-fair-sharing-half-life 0s: must be positive"},
		{[]string{"--admission-fair-sharing-resource-weights=gpu"}, `"gpu" is not resource=weight`},
		{[]string{"--node-failure-delay=0s"}, "--node-failure-delay 0s: must be positive"},
		{[]string{"--node-failure-delay=-5s"}, "--node-failure-delay -5s: must be positive"},
		{[]string{"--integrations=batch/job,mpijob"}, `"mpijob" is not one berth has`},
		{[]string{"--integrations=pod", "--wait-for-pods-ready"}, "--integrations must include batch/job"},
		{[]string{"--managed-jobs-namespace-selector=team=a"}, "--managed-jobs-namespace-selector is read only with --manage-jobs-without-queue-name"},
		{[]string{"--manage-jobs-without-queue-name", "--managed-jobs-namespace-selector=team in (a"}, `--managed-jobs-namespace-selector "team in (a"`},
	} {
		cmd := newControllerCommand()
		cmd.SetArgs(append(tc.args, "--kubeconfig=/nonexistent"))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
