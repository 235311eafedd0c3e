package dashboard

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// Worker is a worker cluster as the manager sees it: whether berth reaches
// it, which MultiClusterConfigs send work there, and what runs there now.
type Worker struct {
	Name string `json:"name"`
	// Active is its Active condition: berth reaches its API server.
	Active bool `json:"active"`
	// Reason and Message say why not (SecretNotFound, BadKubeconfig,
	// Unreachable; NotFound for a name a config lists that no
	// WorkerCluster has).
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	// Configs are the MultiClusterConfigs that list it.
	Configs []string `json:"configs,omitempty"`
	// Running counts the workloads dispatched to it that hold quota and
	// have not finished.
	Running int `json:"running"`
	// Workloads are some of them, the latest admitted first, when asked
	// for one worker.
	Workloads []WorkloadRef `json:"workloads,omitempty"`
}

// WorkloadRef names a workload and its ClusterQueue.
type WorkloadRef struct {
	Workload     string `json:"workload"` // namespace/name
	ClusterQueue string `json:"clusterQueue"`
}

// Workers lists the worker clusters, by name: each WorkerCluster and each
// name a MultiClusterConfig lists without one; for the worker named only
// (when only is not ""), with up to limit of its running workloads.
func Workers(wcs []berthv1.WorkerCluster, mccs []berthv1.MultiClusterConfig, wls []berthv1.Workload, only string, limit int) []Worker {
	byName := map[string]*Worker{}
	for _, wc := range wcs {
		w := &Worker{Name: wc.Name, Reason: "Pending", Message: "berth has not tried to reach it yet"}
		if c := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive); c != nil {
			w.Active, w.Reason, w.Message, w.Since = c.Status == "True", c.Reason, c.Message, c.LastTransitionTime.Time
			if w.Active {
				w.Reason, w.Message = "", ""
			}
		}
		byName[wc.Name] = w
	}
	for _, mcc := range mccs {
		for _, name := range mcc.Spec.Clusters {
			w := byName[name]
			if w == nil {
				w = &Worker{Name: name, Reason: "NotFound", Message: "no WorkerCluster of this name"}
				byName[name] = w
			}
			w.Configs = append(w.Configs, mcc.Name)
		}
	}
	type running struct {
		ref WorkloadRef
		at  time.Time
	}
	on := map[string][]running{}
	for i := range wls {
		wl := &wls[i]
		w := byName[wl.Status.ClusterName]
		if w == nil || !workload.HasQuota(wl) || wl.Status.Admission == nil || workload.IsFinished(wl) {
			continue
		}
		w.Running++
		if w.Name == only {
			r := running{ref: WorkloadRef{Workload: workload.Key(wl), ClusterQueue: wl.Status.Admission.ClusterQueue}}
			if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved); c != nil {
				r.at = c.LastTransitionTime.Time
			}
			on[w.Name] = append(on[w.Name], r)
		}
	}
	out := make([]Worker, 0, len(byName))
	for _, w := range byName {
		if only != "" && w.Name != only {
			continue
		}
		rs := on[w.Name]
		slices.SortFunc(rs, func(a, b running) int {
			return cmp.Or(b.at.Compare(a.at), cmp.Compare(a.ref.Workload, b.ref.Workload))
		})
		for _, r := range rs[:min(len(rs), limit)] {
			w.Workloads = append(w.Workloads, r.ref)
		}
		slices.Sort(w.Configs)
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Worker) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
