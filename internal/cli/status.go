package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/controller/webhook"
	"github.com/berth-dev/berth/internal/controlplane"
)

func newStatusCommand() *cobra.Command {
	var f instanceFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component of a local instance and its health",
		Long: `Show whether the instance runs, each component's process, port and health, and
the failure that stopped it last, if any; and which kinds berth's controller
queues (its integrations), and why the others are not queued. Exits 0 when
it runs and every component is healthy, 1 otherwise.`,
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
			out := statusOutput{Status: st}
			if st.Running && st.Kubeconfig != "" {
				// What berth's controller queues; none when it is not there
				// (berth up --no-controller) or does not answer.
				out.Integrations, _ = readIntegrations(ctx, st.Kubeconfig)
			}
			if output == "" || output == "table" {
				printStatus(cmd.OutOrStdout(), st)
				printIntegrations(cmd.OutOrStdout(), out.Integrations)
			} else if err := printStructured(cmd.OutOrStdout(), output, out); err != nil {
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

// statusOutput is what `berth status -o json` prints.
type statusOutput struct {
	*controlplane.Status
	Integrations *integrationsStatus `json:"integrations,omitempty"`
}

// integrationsStatus is which kinds berth's controller queues, and why the
// others are not.
type integrationsStatus struct {
	On  []string          `json:"on"`
	Off map[string]string `json:"off,omitempty"` // by integration, why
	// ConfiguredOn are the kinds queued from configuration that are on,
	// as resource.group; one configured but off says why in the
	// controller's log.
	ConfiguredOn []string `json:"configuredOn,omitempty"`
}

// readIntegrations reads which integrations berth's controller has on from
// its webhook configuration (webhook.Integrations), and says why each other
// is off: its CRD not installed, or switched off.
func readIntegrations(ctx context.Context, kubeconfig string) (*integrationsStatus, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return nil, err
	}
	var hooks admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "berth"}, &hooks); err != nil {
		return nil, err
	}
	on, off := webhook.Integrations(&hooks).Split()
	st := &integrationsStatus{On: on, Off: map[string]string{}, ConfiguredOn: webhook.Configured(&hooks)}
	for _, name := range off {
		st.Off[name] = "switched off (berth controller --integrations)"
		if why, err := controller.Unserved(c.RESTMapper(), name); err == nil && why != "" {
			st.Off[name] = why + " (unless switched off, it turns on once it is)"
		}
	}
	return st, nil
}

func printIntegrations(w io.Writer, st *integrationsStatus) {
	if st == nil {
		return
	}
	fmt.Fprintf(w, "integrations on: %s\n", strings.Join(st.On, ", "))
	names := slices.Sorted(maps.Keys(st.Off))
	for _, name := range names {
		fmt.Fprintf(w, "integration off: %s: %s\n", name, st.Off[name])
	}
	if len(st.ConfiguredOn) > 0 {
		fmt.Fprintf(w, "configured kinds on: %s\n", strings.Join(st.ConfiguredOn, ", "))
	}
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
