package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// completer completes object names from the cluster a command acts on: its
// --name/--data-dir instance or --kubeconfig, as the command would connect.
type completer struct {
	inst       *instanceFlags
	kubeconfig *string
	namespace  *string // nil for commands without -n
}

// lists are the object lists a kind's names are read from, by the kinds
// the commands take.
var lists = map[string]func() client.ObjectList{
	"ClusterQueue":   func() client.ObjectList { return &berthv1.ClusterQueueList{} },
	"LocalQueue":     func() client.ObjectList { return &berthv1.LocalQueueList{} },
	"Workload":       func() client.ObjectList { return &berthv1.WorkloadList{} },
	"Job":            func() client.ObjectList { return &batchv1.JobList{} },
	"JobSet":         func() client.ObjectList { return &jobsetv1.JobSetList{} },
	"StatefulSet":    func() client.ObjectList { return &appsv1.StatefulSetList{} },
	"ResourceFlavor": func() client.ObjectList { return &berthv1.ResourceFlavorList{} },
	"Cohort":         func() client.ObjectList { return &berthv1.CohortList{} },
	"Topology":       func() client.ObjectList { return &berthv1.TopologyList{} },
	"AdmissionCheck": func() client.ObjectList { return &berthv1.AdmissionCheckList{} },
	"Namespace":      func() client.ObjectList { return &corev1.NamespaceList{} },
}

var namespaced = map[string]bool{"LocalQueue": true, "Workload": true, "Job": true, "JobSet": true, "StatefulSet": true}

// names lists the names of kind that start with prefix; nothing (and no
// error shown) when the cluster cannot be reached, as completion must never
// get in the way.
func (c completer) names(ctx context.Context, kind, prefix string) []string {
	mk, ok := lists[kind]
	if !ok {
		return nil
	}
	cl, err := clusterClient(c.inst, *c.kubeconfig)
	if err != nil {
		cobra.CompDebugln("connecting: "+err.Error(), true)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list := mk()
	var opts []client.ListOption
	if namespaced[kind] && c.namespace != nil {
		opts = append(opts, client.InNamespace(*c.namespace))
	}
	if err := cl.List(ctx, list, opts...); err != nil {
		cobra.CompDebugln("listing "+kind+": "+err.Error(), true)
		return nil
	}
	var out []string
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if m, ok := o.(metav1.Object); ok && strings.HasPrefix(m.GetName(), prefix) {
			out = append(out, m.GetName())
		}
		return nil
	})
	return out
}

// flag completes a flag's value with names of kind. For a comma-separated
// list it completes the last item.
func (c completer) flag(cmd *cobra.Command, name, kind string) {
	_ = cmd.RegisterFlagCompletionFunc(name, func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		var out []string
		for _, n := range c.names(cmd.Context(), kind, last) {
			out = append(out, done+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// kindThenName completes a command's (KIND NAME) arguments: kinds from
// kinds (each with its short forms, as parse accepts them), then names of
// the kind parse makes of the first argument.
func (c completer) kindThenName(kinds []string, parse func(string) (string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			var out []string
			for _, k := range kinds {
				if strings.HasPrefix(k, toComplete) {
					out = append(out, k)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		case 1:
			kind, err := parse(args[0])
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return c.names(cmd.Context(), kind, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}
