package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
)

// clusterQueueFlags are what `berth create clusterqueue` takes.
type clusterQueueFlags struct {
	flavor, cohort, strategy, preemption, namespaces string
	quota, borrowing, lending                        string
	admissionChecks                                  []string
}

// parseResources reads "cpu=10,memory=20Gi" for the flag named flag.
func parseResources(flag, s string) (map[corev1.ResourceName]resource.Quantity, error) {
	out := map[corev1.ResourceName]resource.Quantity{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want resource=quantity pairs, such as cpu=10,memory=20Gi", flag, kv)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--%s %s=%q: not a quantity", flag, k, v)
		}
		if _, dup := out[corev1.ResourceName(k)]; dup {
			return nil, fmt.Errorf("--%s: %s given twice", flag, k)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// parseLabels reads "k=v,k2=v2" for the flag named flag.
func parseLabels(flag, s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--%s %q: want key=value pairs", flag, kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--%s: %q is not a label key: %s", flag, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("--%s: %q is not a label value: %s", flag, v, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// ClusterQueueOf builds the ClusterQueue `berth create clusterqueue`
// describes, or says which flag is wrong.
func (f clusterQueueFlags) ClusterQueueOf(name string) (*berthv1.ClusterQueue, error) {
	quota, err := parseResources("quota", f.quota)
	if err != nil {
		return nil, err
	}
	if len(quota) == 0 {
		return nil, fmt.Errorf("--quota is required: the nominal quota of each resource, such as cpu=10,memory=20Gi")
	}
	limits := map[string]map[corev1.ResourceName]resource.Quantity{}
	for flag, s := range map[string]string{"borrowing-limit": f.borrowing, "lending-limit": f.lending} {
		if limits[flag], err = parseResources(flag, s); err != nil {
			return nil, err
		}
		for r := range limits[flag] {
			if _, ok := quota[r]; !ok {
				return nil, fmt.Errorf("--%s %s: %s has no --quota", flag, r, r)
			}
		}
	}
	cq := &berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: berthv1.ClusterQueueSpec{Cohort: f.cohort, AdmissionChecks: f.admissionChecks}}
	switch f.strategy {
	case string(berthv1.BestEffortFIFO), string(berthv1.StrictFIFO):
		cq.Spec.QueueingStrategy = berthv1.QueueingStrategy(f.strategy)
	default:
		return nil, fmt.Errorf("--strategy %q: want BestEffortFIFO or StrictFIFO", f.strategy)
	}
	switch f.namespaces {
	case "all":
		cq.Spec.NamespaceSelector = &metav1.LabelSelector{}
	case "none":
	default:
		sel, err := parseLabels("namespaces", f.namespaces)
		if err != nil {
			return nil, err
		}
		cq.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: sel}
	}
	if f.preemption != "" {
		p := berthv1.PreemptionPolicy(f.preemption)
		if !slices.Contains([]berthv1.PreemptionPolicy{berthv1.PreemptionNever, berthv1.PreemptionLowerPriority,
			berthv1.PreemptionLowerOrNewerEqualPriority}, p) {
			return nil, fmt.Errorf("--preemption %q: want Never, LowerPriority or LowerOrNewerEqualPriority", f.preemption)
		}
		cq.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: p}
	}
	fq := berthv1.FlavorQuotas{Name: f.flavor}
	rg := berthv1.ResourceGroup{}
	names := make([]corev1.ResourceName, 0, len(quota))
	for r := range quota {
		names = append(names, r)
	}
	slices.Sort(names)
	for _, r := range names {
		rq := berthv1.ResourceQuota{Name: r, NominalQuota: quota[r]}
		if q, ok := limits["borrowing-limit"][r]; ok {
			rq.BorrowingLimit = &q
		}
		if q, ok := limits["lending-limit"][r]; ok {
			rq.LendingLimit = &q
		}
		rg.CoveredResources = append(rg.CoveredResources, r)
		fq.Resources = append(fq.Resources, rq)
	}
	rg.Flavors = []berthv1.FlavorQuotas{fq}
	cq.Spec.ResourceGroups = []berthv1.ResourceGroup{rg}
	return cq, nil
}

func newCreateCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		dryRun     bool
		cqf        clusterQueueFlags
		namespace  string
		lqTarget   string
		nodeLabels string
		topology   string
	)
	cmd := &cobra.Command{
		Use:   "create (clusterqueue|localqueue|resourceflavor) NAME",
		Short: "Create a ClusterQueue, LocalQueue or ResourceFlavor from flags for the common cases",
		Long: `Create a ClusterQueue (one resource group, one flavor), a LocalQueue or a
ResourceFlavor from flags, against a berth instance (--name/--data-dir) or any
cluster running berth (--kubeconfig). --dry-run prints the object as YAML and
creates nothing; for anything the flags do not cover, edit that YAML and apply
it with kubectl. The API server checks the object as it would any other.`,
		Example: `  berth create resourceflavor default
  berth create clusterqueue team-a --quota cpu=10,memory=20Gi --cohort shared --borrowing-limit cpu=4
  berth create localqueue jobs -n team-a --clusterqueue team-a
  berth create clusterqueue team-b --quota cpu=6 --namespaces team=b --preemption LowerPriority --dry-run
  berth create clusterqueue gated --quota cpu=4 --admission-checks budget`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var obj client.Object
			switch strings.ToLower(args[0]) {
			case "clusterqueue", "cq":
				cq, err := cqf.ClusterQueueOf(args[1])
				if err != nil {
					return err
				}
				obj = cq
			case "localqueue", "lq", "queue":
				if lqTarget == "" {
					return fmt.Errorf("--clusterqueue is required: the ClusterQueue the LocalQueue submits to")
				}
				obj = &berthv1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: args[1], Namespace: namespace},
					Spec: berthv1.LocalQueueSpec{ClusterQueue: lqTarget}}
			case "resourceflavor", "rf", "flavor":
				labels, err := parseLabels("node-labels", nodeLabels)
				if err != nil {
					return err
				}
				rf := &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: args[1]},
					Spec: berthv1.ResourceFlavorSpec{NodeLabels: labels}}
				if topology != "" {
					rf.Spec.TopologyName = &topology
				}
				obj = rf
			default:
				return fmt.Errorf("%q: create takes clusterqueue (cq), localqueue (lq) or resourceflavor (rf)", args[0])
			}
			gvk, err := apiutil.GVKForObject(obj, controller.Scheme())
			if err != nil {
				return err
			}
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			if dryRun {
				var m map[string]any
				if err := runtimeToMap(obj, &m); err != nil {
					return err
				}
				delete(m, "status") // nothing to say before it exists
				data, err := yaml.Marshal(m)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			c, err := clusterClient(&inst, kubeconfig)
			if err != nil {
				return err
			}
			what := gvk.Kind + " " + obj.GetName()
			if obj.GetNamespace() != "" {
				what = gvk.Kind + " " + obj.GetNamespace() + "/" + obj.GetName()
			}
			if err := c.Create(cmd.Context(), obj); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("%s already exists", what)
				}
				return fmt.Errorf("%s: %w", what, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s created\n", what)
			return nil
		},
	}
	inst.add(cmd)
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "the cluster to act on, instead of a berth instance")
	f.BoolVar(&dryRun, "dry-run", false, "print the object as YAML and create nothing")
	f.StringVar(&cqf.quota, "quota", "", "clusterqueue: nominal quota per resource, such as cpu=10,memory=20Gi (required)")
	f.StringVar(&cqf.flavor, "flavor", "default", "clusterqueue: the ResourceFlavor the quota is in")
	f.StringVar(&cqf.cohort, "cohort", "", "clusterqueue: the cohort it shares quota in")
	f.StringVar(&cqf.borrowing, "borrowing-limit", "", "clusterqueue: how much more than its quota it may borrow, per resource (needs --cohort)")
	f.StringVar(&cqf.lending, "lending-limit", "", "clusterqueue: how much of its quota the cohort may borrow, per resource (needs --cohort)")
	f.StringVar(&cqf.strategy, "strategy", string(berthv1.BestEffortFIFO), "clusterqueue: BestEffortFIFO or StrictFIFO")
	f.StringVar(&cqf.preemption, "preemption", "", "clusterqueue: whom its workloads may preempt within it: Never, LowerPriority or LowerOrNewerEqualPriority")
	f.StringVar(&cqf.namespaces, "namespaces", "all", "clusterqueue: the namespaces it admits from: all, none, or namespace labels key=value,...")
	f.StringSliceVar(&cqf.admissionChecks, "admission-checks", nil, "clusterqueue: AdmissionChecks its workloads pass before they run, name,...")
	f.StringVarP(&namespace, "namespace", "n", "default", "localqueue: its namespace")
	f.StringVar(&lqTarget, "clusterqueue", "", "localqueue: the ClusterQueue it submits to (required)")
	f.StringVar(&nodeLabels, "node-labels", "", "resourceflavor: the labels of its nodes, key=value,...")
	f.StringVar(&topology, "topology", "", "resourceflavor: the Topology its nodes are arranged in (needs --node-labels)")
	comp := completer{inst: &inst, kubeconfig: &kubeconfig, namespace: &namespace}
	cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return []string{"clusterqueue", "localqueue", "resourceflavor"}, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp // a new name
	}
	for flag, kind := range map[string]string{"flavor": "ResourceFlavor", "cohort": "Cohort", "admission-checks": "AdmissionCheck",
		"namespace": "Namespace", "clusterqueue": "ClusterQueue", "topology": "Topology"} {
		comp.flag(cmd, flag, kind)
	}
	return cmd
}

func runtimeToMap(obj client.Object, m *map[string]any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, m)
}
