package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/realnode"
)

func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Images for the real node of a berth instance",
	}
	var inst instanceFlags
	load := &cobra.Command{
		Use:   "load FILE",
		Short: "Load an image archive into the real node (berth up --real-node), for its pods",
		Long: `Load an image archive, OCI (as 'make image' writes) or Docker (as 'docker save'
writes), into the containerd of the instance's real node, so that its pods
can run it without a registry: give them the image's name and
imagePullPolicy: IfNotPresent or Never.`,
		Example: `  berth up --detach --real-node
  berth image load bin/berth-image.tar`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, _, err := inst.running(" --real-node", "")
			if err != nil {
				return err
			}
			l := realnode.LayoutOf(controlplane.Layout{Dir: dir})
			if _, err := os.Stat(l.Socket()); err != nil {
				return fmt.Errorf("berth %q has no real node (no containerd socket at %s); start it with --real-node", inst.name, l.Socket())
			}
			tools, err := realnode.Check()
			if err != nil {
				return err
			}
			if _, err := os.Stat(args[0]); err != nil {
				return fmt.Errorf("image archive: %w", err)
			}
			if err := realnode.LoadImage(cmd.Context(), l, tools.Ctr, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "loaded %s into %s\n", args[0], realnode.NodeName)
			return nil
		},
	}
	inst.add(load)
	cmd.AddCommand(load)
	return cmd
}
