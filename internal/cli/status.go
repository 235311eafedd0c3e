package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/controlplane"
)

func newStatusCommand() *cobra.Command {
	var f instanceFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component of a local instance and its health",
		Long: `Show whether the instance runs, each component's process, port and health, and
the failure that stopped it last, if any. Exits 0 when it runs and every
component is healthy, 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := controlplane.ReadStatus(ctx, dir)
			if err != nil {
				return err
			}
			if output == "" || output == "table" {
				printStatus(cmd.OutOrStdout(), st)
			} else if err := printStructured(cmd.OutOrStdout(), output, st); err != nil {
				return err
			}
			if !st.Healthy() {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func printStatus(w io.Writer, st *controlplane.Status) {
	state := "not running"
	if st.Running {
		state = "running"
	}
	fmt.Fprintf(w, "berth %q: %s (%s), data in %s\n", st.Name, state, st.Phase, st.DataDir)
	if len(st.Components) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "COMPONENT\tPID\tPORT\tRUNNING\tRESTARTS\tHEALTH")
		for _, c := range st.Components {
			running := "no"
			if c.Running {
				running = "yes"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\n", c.Name, c.PID, strconv.Itoa(c.Port), running, c.Restarts, c.Health)
		}
		tw.Flush()
		for _, c := range st.Components {
			if c.LastExit != nil {
				fmt.Fprintf(w, "%s last exited at %s: %s (log: %s)\n", c.Name,
					c.LastExit.At.Local().Format(time.DateTime), c.LastExit.Reason, c.Log)
			}
		}
	}
	if st.Running {
		fmt.Fprintf(w, "kubeconfig: %s\n", st.Kubeconfig)
	}
	if st.Failure != nil {
		fmt.Fprintf(w, "last failure (%s): %s\n", st.Failure.At.Local().Format(time.DateTime), st.Failure.Message)
		if len(st.Failure.LogTail) > 0 {
			fmt.Fprintf(w, "last lines of %s:\n", st.Failure.Log)
			for _, l := range st.Failure.LogTail {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
}
