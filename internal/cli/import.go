package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/fromkueue"
)

func newImportCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		files      []string
		apply      bool
		values     string
	)
	cmd := &cobra.Command{
		Use:   "import -f FILE|DIR|-",
		Short: "Translate Kueue's queues, flavors, cohorts, priority classes, topologies, admission checks, MultiKueue and Configuration into berth's",
		Long: `Read Kueue manifests (kueue.x-k8s.io v1alpha1, v1beta1 and v1beta2:
` + strings.Join(fromkueue.Kinds, ", ") + `, and MultiKueue's
MultiKueueConfig and MultiKueueCluster) and write the berth equivalents as YAML
on stdout, or apply them with --apply. Every field berth supports is kept
(cohortName becomes cohort, parentName parent, MayStopSearch Borrow or
Preempt, an admissionChecksStrategy becomes admissionChecks, for every
flavor); each field that is not is listed on stderr, per object, with why.
MultiKueue becomes berth's multicluster dispatch: its AdmissionCheck the
berth.dev/multicluster check, a MultiKueueConfig a MultiClusterConfig, a
MultiKueueCluster a WorkerCluster (whose kubeconfig Secret must be copied to
berth's namespace). Status, server-written metadata and kubectl's
last-applied annotation are left behind.

Kueue's controller Configuration (config.kueue.x-k8s.io v1beta1 or v1beta2,
or the kueue-manager-config ConfigMap that holds it) becomes values of
berth's Helm chart, written to the file --values names: queueing objects
without a queue label and where, all-or-nothing start (waitForPodsReady),
fair sharing, the API client's rate, MultiKueue's origin and lost-worker
timeout, leader election, and integrations.frameworks as berth's own
integrations plus the kinds berth queues from configuration (RayJob and
RayCluster, MPIJob, PyTorchJob, TFJob, XGBoostJob, PaddleJob); what does
not carry over is listed on stderr, with why.

An object berth cannot take (a kind it lacks, an AdmissionCheck of another of
Kueue's own controllers, which berth does not run, a worker kubeconfig given
as a file) is refused, with why, and the others are still written; the
command then exits non-zero. With --apply, nothing is applied if the API
server refuses any of them (all are checked with a dry run first). Jobs and
Pods labelled for Kueue need no import: berth honours kueue.x-k8s.io/queue-name
as it is.`,
		Example: `  berth import -f kueue-queues.yaml > berth-queues.yaml
  kubectl -n kueue-system get configmap kueue-manager-config -o yaml | berth import -f - --values berth-values.yaml
  kubectl get clusterqueues.kueue.x-k8s.io,localqueues.kueue.x-k8s.io -A -o yaml | berth import -f -
  berth import -f ./kueue/ --apply`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("-f is required: a file, a directory of .yaml/.yml/.json files, or - for stdin")
			}
			var objs []fromkueue.Object
			var problems []string
			var settings *fromkueue.Settings
			for _, f := range files {
				docs, err := readManifests(f, cmd.InOrStdin())
				if err != nil {
					return err
				}
				for _, d := range docs {
					if fromkueue.IsConfiguration(d) {
						s, err := importConfiguration(d, values, settings != nil)
						if err != nil {
							problems = append(problems, err.Error())
							continue
						}
						settings = &s
						continue
					}
					o, err := fromkueue.Import(d)
					if err != nil {
						problems = append(problems, err.Error())
						continue
					}
					objs = append(objs, o)
				}
			}
			for _, o := range objs {
				for _, d := range o.Dropped {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: not carried over: %s: %s\n", o.Name(), d.Field, d.Why)
				}
			}
			if settings != nil {
				for _, d := range settings.Dropped {
					fmt.Fprintf(cmd.ErrOrStderr(), "Configuration: not carried over: %s: %s\n", d.Field, d.Why)
				}
				for _, n := range settings.Notes {
					fmt.Fprintf(cmd.ErrOrStderr(), "Configuration: check: %s\n", n)
				}
				if err := writeValues(values, settings); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Configuration: berth's chart values written to %s (helm install berth ... -f %s)\n", values, values)
			} else if values != "" {
				problems = append(problems, "--values: no Kueue Configuration was read (config.kueue.x-k8s.io, or the ConfigMap holding it)")
			}
			// What was refused does not hold back the rest; it is said
			// last, and makes the command fail.
			refused := func(err error) error {
				if len(problems) == 0 {
					return err
				}
				msg := fmt.Sprintf("%d of %d objects refused, the others imported:\n  %s",
					len(problems), len(problems)+len(objs), strings.Join(problems, "\n  "))
				if err != nil {
					msg += "\nand: " + err.Error()
				}
				return errors.New(msg)
			}
			if !apply {
				for _, o := range objs {
					data, err := yaml.Marshal(o.Object)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "---\n%s", data)
				}
				return refused(nil)
			}
			if len(objs) == 0 {
				return refused(nil)
			}
			c, err := clusterClient(&inst, kubeconfig)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			return refused(applyImported(ctx, c, objs, cmd.OutOrStdout()))
		},
	}
	inst.add(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster to apply to, instead of a berth instance")
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "a Kueue manifest, a directory of them, or - for stdin (repeatable)")
	cmd.Flags().BoolVar(&apply, "apply", false, "apply the berth objects (server-side apply, field manager berth-import) instead of printing them")
	cmd.Flags().StringVar(&values, "values", "", "write the berth chart values a Kueue Configuration becomes to this file")
	return cmd
}

// importConfiguration imports a Kueue Configuration, refused without a file
// to write its values to, or when one was read already.
func importConfiguration(d map[string]any, values string, again bool) (fromkueue.Settings, error) {
	switch {
	case values == "":
		return fromkueue.Settings{}, errors.New("Configuration: a Kueue Configuration becomes berth's chart values: give --values FILE to write them")
	case again:
		return fromkueue.Settings{}, errors.New("Configuration: a second Kueue Configuration; import one at a time")
	}
	return fromkueue.ImportConfiguration(d)
}

// writeValues writes s's chart values to path, saying where they came from.
func writeValues(path string, s *fromkueue.Settings) error {
	data, err := yaml.Marshal(s.Values)
	if err != nil {
		return err
	}
	head := "# berth chart values from Kueue's Configuration (berth import).\n"
	for _, d := range s.Dropped {
		head += fmt.Sprintf("# not carried over: %s: %s\n", d.Field, d.Why)
	}
	for _, n := range s.Notes {
		head += fmt.Sprintf("# check: %s\n", n)
	}
	if err := os.WriteFile(path, append([]byte(head), data...), 0o600); err != nil {
		return fmt.Errorf("--values: %w", err)
	}
	return nil
}

// readManifests reads the documents of a file, of every .yaml, .yml and
// .json file of a directory (not its subdirectories), or of stdin for "-".
func readManifests(path string, stdin io.Reader) ([]map[string]any, error) {
	if path == "-" {
		return fromkueue.ReadAll(stdin)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	paths := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		paths = nil
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
				paths = append(paths, filepath.Join(path, e.Name()))
			}
		}
	}
	var out []map[string]any
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		docs, err := fromkueue.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, docs...)
	}
	return out, nil
}

// applyImported applies objs in an order that has each object's references
// in place first (berth would wait for them anyway), after a dry run of all
// of them, so that a refusal leaves the cluster as it was.
func applyImported(ctx context.Context, c client.Client, objs []fromkueue.Object, out io.Writer) error {
	order := []string{"ResourceFlavor", "Topology", "WorkerCluster", "MultiClusterConfig", "AdmissionCheck", "WorkloadPriorityClass", "Cohort", "ClusterQueue", "LocalQueue"}
	slices.SortStableFunc(objs, func(a, b fromkueue.Object) int {
		return slices.Index(order, a.Object["kind"].(string)) - slices.Index(order, b.Object["kind"].(string))
	})
	for _, dryRun := range []bool{true, false} {
		var refused []string
		for _, o := range objs {
			u := &unstructured.Unstructured{Object: o.Object}
			opts := []client.PatchOption{client.FieldOwner("berth-import"), client.ForceOwnership}
			if dryRun {
				opts = append(opts, client.DryRunAll)
			}
			//nolint:staticcheck // SA1019: Client.Apply needs typed apply configurations; these objects are unstructured.
			if err := c.Patch(ctx, u.DeepCopy(), client.Apply, opts...); err != nil {
				if !dryRun {
					return fmt.Errorf("%s: %w (the objects before it were applied)", o.Name(), err)
				}
				refused = append(refused, fmt.Sprintf("%s: %v", o.Name(), err))
			} else if !dryRun {
				fmt.Fprintf(out, "%s applied\n", o.Name())
			}
		}
		if len(refused) > 0 {
			return fmt.Errorf("nothing applied; the API server refuses:\n  %s", strings.Join(refused, "\n  "))
		}
	}
	return nil
}
