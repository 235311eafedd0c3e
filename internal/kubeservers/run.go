package kubeservers

import (
	"context"
	"fmt"
	_ "github.com/berth-dev/berth/internal/kubeversion" // before any server reads its version
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	"github.com/berth-dev/berth/internal/addon"
	"github.com/berth-dev/berth/internal/addon/jobset"
	"github.com/berth-dev/berth/internal/addon/leaderworkerset"
	"github.com/berth-dev/berth/internal/addon/ray"
	"github.com/berth-dev/berth/internal/addon/trainer"
	"github.com/berth-dev/berth/internal/addon/trainingoperator"
)

// runners maps a component name to the function that runs it with the given
// arguments and returns the process exit code.
var runners = map[string]func(args []string) int{
	"etcd":                    runEtcd,
	"kube-apiserver":          kubeCommand(apiserver.NewAPIServerCommand),
	"kube-controller-manager": kubeCommand(controllermanager.NewControllerManagerCommand),
	"kube-scheduler":          kubeCommand(func() *cobra.Command { return scheduler.NewSchedulerCommand() }),
	// A real node's (berth up --real-node), and its pods' sandbox process.
	"kubelet":    kubeCommand(func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) }),
	"kube-proxy": kubeCommand(proxy.NewProxyCommand),
	"pause":      pause,
	// Addons (berth up --with): other projects' controllers.
	addon.JobSet.Component:           jobset.Runner.Run,
	addon.LeaderWorkerSet.Component:  leaderworkerset.Runner.Run,
	addon.Ray.Component:              ray.Runner.Run,
	addon.Trainer.Component:          trainer.Runner.Run,
	addon.TrainingOperator.Component: trainingoperator.Runner.Run,
}

// pause is what holds a pod's sandbox (its namespaces) on a real node: it
// waits for the signal that ends the pod.
func pause([]string) int {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
	return 0
}

// Names lists the components this binary can run, sorted.
func Names() []string {
	names := make([]string, 0, len(runners))
	for n := range runners {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Run runs the named component with args until it exits and returns its exit code.
// Unknown names are reported on stderr with exit code 2.
func Run(name string, args []string, stderr io.Writer) int {
	run, ok := runners[name]
	if !ok {
		fmt.Fprintf(stderr, "berth component: unknown component %q (known: %v)\n", name, Names())
		return 2
	}
	return run(args)
}

func kubeCommand(newCommand func() *cobra.Command) func([]string) int {
	return func(args []string) int {
		cmd := newCommand()
		cmd.SetArgs(args)
		// The Kubernetes commands parse os.Args themselves when SetArgs is not
		// honoured; make sure nothing of berth's own command line leaks in.
		os.Args = append([]string{cmd.Name()}, args...)
		return cli.Run(cmd)
	}
}
