package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/doctor"
)

func newDoctorCommand() *cobra.Command {
	var purposes string
	var fix bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say what this machine lacks for berth up, --real-node or the tests, and the command that gets each",
		Long: `Check this machine for what berth needs and print each check: loopback
ports, free disk, the open-files and inotify limits (berth up; --with needs
nothing more, its controllers are built into berth); Linux, root, cgroups and
the distribution's containerd, runc, CNI plugins, ip and iptables
(--real-node); and for the test suite all of those plus Go, git, Chromium and
npm. Whatever is missing is printed with the command that fixes it, and the
exit status is 1. With --fix, as root on Debian or Ubuntu, it first installs
the missing packages with apt-get and raises the inotify limit; make test
runs it so.`,
		Example: `  berth doctor
  berth doctor --for real-node
  berth doctor --for tests --fix`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := doctor.ParsePurposes(purposes)
			if err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return doctor.Run(cmd.OutOrStdout(), ps, doctor.DataDir(), os.TempDir(), fix)
		},
	}
	cmd.Flags().StringVar(&purposes, "for", "up", "what to check for, comma-separated: up, real-node, tests")
	cmd.Flags().BoolVar(&fix, "fix", false, "as root with apt-get: install the missing Debian packages and raise the inotify limit, then check again")
	return cmd
}
