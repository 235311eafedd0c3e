package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit code; its message, if any, has already been printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs berth with args and returns the process exit code.
func Main(args []string) int { return MainAs("berth", args) }

// kubectlPlugin is set when berth runs as kubectl-berth: `kubectl berth
// ...`. Its commands then act on the cluster of the usual kubeconfig
// (KUBECONFIG, else ~/.kube/config), as kubectl does, rather than on a berth
// instance.
var kubectlPlugin bool

// MainAs runs berth invoked under the program name (the base of argv[0]).
func MainAs(program string, args []string) int {
	// Re-executed components bypass cobra entirely: their flags are theirs.
	if len(args) > 0 && args[0] == componentCommand {
		return runComponent(args[1:])
	}
	kubectlPlugin = program == "kubectl-berth"
	root := newRoot()
	if kubectlPlugin {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl berth"}
	}
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		return 1
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "berth",
		Short: "A batch-workload control plane for Kubernetes",
		Long: `berth queues batch work (batch/v1 Jobs, those a CronJob makes, plain
Pods and pod groups) against quotas that ClusterQueues share and borrow in cohorts, with
priorities, preemption and fair sharing. 'berth up' starts a complete local
Kubernetes control plane, with simulated nodes, to try it on; 'berth bench'
measures it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newCreateCommand(), newUpCommand(), newDownCommand(), newStatusCommand(), newKubeconfigCommand(), newKubectlCommand(),
		newControllerCommand(), newSimCommand(), newBenchCommand(), newStopCommand(), newResumeCommand(), newTopCommand(), newDashboardCommand(), newWhyCommand(), newPendingCommand(), newWhatifCommand(), newTraceCommand(), newImportCommand(), newClusterCommand(),
		newVClusterCommand(), newVersionCommand(), newImageCommand(), newDoctorCommand())
	return root
}
