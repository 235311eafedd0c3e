package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/cli"
	kubectl "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/berth-dev/berth/internal/controlplane"
)

func newKubeconfigCommand() *cobra.Command {
	var f instanceFlags
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of an instance's admin kubeconfig",
		Example: `  export KUBECONFIG=$(berth kubeconfig)
  kubectl get namespaces`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			path := controlplane.Layout{Dir: dir}.Kubeconfig()
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("no kubeconfig at %s: start the instance first with: berth up --name %s --data-dir %s", path, f.name, dir)
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// newKubectlCommand embeds kubectl, pointed at the local instance unless told
// otherwise, so a fresh machine needs nothing but berth.
func newKubectlCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kubectl [--name N | --data-dir D] [kubectl arguments]",
		Short: "Run kubectl against a local instance (or any cluster given --kubeconfig or KUBECONFIG)",
		Long: `Run the kubectl built into berth. Unless --kubeconfig or KUBECONFIG says
otherwise, it talks to the local instance selected by --name or --data-dir, which
must come first (default "berth", env BERTH_NAME or BERTH_DATA_DIR).`,
		Example: `  berth kubectl get nodes -o wide
  berth kubectl --name other get pods -A`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := instanceFlags{name: envOr("BERTH_NAME", "berth"), dataDir: os.Getenv("BERTH_DATA_DIR")}
			args = takeLeadingFlags(args, map[string]*string{"--name": &f.name, "--data-dir": &f.dataDir})
			if !hasFlag(args, "--kubeconfig") && os.Getenv("KUBECONFIG") == "" {
				dir, err := f.resolve()
				if err != nil {
					return err
				}
				args = append([]string{"--kubeconfig", controlplane.Layout{Dir: dir}.Kubeconfig()}, args...)
			}
			k := kubectl.NewDefaultKubectlCommandWithArgs(kubectl.KubectlOptions{
				Arguments: append([]string{"kubectl"}, args...),
				IOStreams: genericiooptions.IOStreams{In: os.Stdin, Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()},
			})
			k.SetArgs(args)
			if err := cli.RunNoErrOutput(k); err != nil {
				// kubectl's own error printing, exit code included.
				cmdutil.CheckErr(err)
			}
			return nil
		},
	}
}

// takeLeadingFlags consumes berth's own flags ("--flag value" or "--flag=value")
// from the front of args. Only the front: kubectl has flags of the same names
// (kubectl expose --name) further along.
func takeLeadingFlags(args []string, flags map[string]*string) []string {
	for len(args) > 0 {
		name, value, hasValue := strings.Cut(args[0], "=")
		into, ok := flags[name]
		if !ok {
			return args
		}
		if hasValue {
			*into, args = value, args[1:]
		} else if len(args) > 1 {
			*into, args = args[1], args[2:]
		} else {
			return args
		}
	}
	return args
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}
