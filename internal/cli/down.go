package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/vcluster/supervisor"
)

func newDownCommand() *cobra.Command {
	var f instanceFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop a control plane started with 'berth up --detach'",
		Long: `Stop the instance and return once every process it started has exited.
Components stop in reverse start order; whatever has not stopped after --timeout
is killed. Data stays in the data directory for the next 'berth up'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			// Virtual clusters first: their syncers work against this instance.
			if err := supervisor.StopAll(dir, cmd.OutOrStdout()); err != nil {
				return err
			}
			ran, err := controlplane.Down(context.Background(), dir, timeout)
			var none *controlplane.ErrNoInstance
			if err != nil && !errors.As(err, &none) {
				return err
			}
			if ran {
				fmt.Fprintf(cmd.OutOrStdout(), "berth %q stopped (data kept in %s)\n", f.name, dir)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "berth %q is not running (data directory %s)\n", f.name, dir)
			}
			// The workers `berth up --workers` started go with their manager.
			return stopWorkers(context.Background(), f.name, dir, cmd.OutOrStdout())
		},
	}
	f.add(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", controlplane.DownTimeout, "how long to wait for an orderly stop before killing")
	return cmd
}
