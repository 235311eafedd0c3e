package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/version"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print berth's version, the commit it was built from and that commit's date",
		Long: `Print berth's version (a release tag, or the pseudo-version Go stamps from the
commit), the commit it was built from (with "+" when the work tree had
changes) and that commit's date. A build that stamped no commit (go run, or
go build where GOFLAGS holds -buildvcs=false) reads them from git in the
checkout it was compiled from, and says so. A running controller logs the
same on its first line and exports it as the berth_build_info metric.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version.Get()
			if output == "" {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), v.String())
				return err
			}
			return printStructured(cmd.OutOrStdout(), output, v)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml (default: one line)")
	return cmd
}
