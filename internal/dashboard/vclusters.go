package dashboard

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/vcluster/translate"
	"github.com/berth-dev/berth/internal/workload"
)

// VirtualCluster is a tenant's virtual cluster as the host sees it: the
// namespace its pods are synced into, the queues there, and how its pods
// and their workloads stand.
type VirtualCluster struct {
	Name          string `json:"name"`
	HostNamespace string `json:"hostNamespace"`
	// Queues are the host namespace's LocalQueues, "NAME → CLUSTERQUEUE".
	Queues []string `json:"queues,omitempty"`
	// Pods counts its pods on the host by phase.
	Pods map[string]int `json:"pods"`
	// Pending and Admitted count the host namespace's unfinished
	// workloads without and with quota.
	Pending  int `json:"pending"`
	Admitted int `json:"admitted"`
}

// VirtualClusters finds the virtual clusters by their syncers' accounts on
// the host (ServiceAccounts labelled berth.dev/vcluster, one per virtual
// cluster, in its host namespace) and counts, for each, the pods it synced
// there (labelled with its name) and the workloads and LocalQueues of its
// host namespace.
func VirtualClusters(syncers []corev1.ServiceAccount, lqs []berthv1.LocalQueue, pods []corev1.Pod, wls []berthv1.Workload) []VirtualCluster {
	type key struct{ name, ns string }
	byKey := map[key]*VirtualCluster{}
	byNS := map[string][]*VirtualCluster{}
	for _, sa := range syncers {
		name := sa.Labels[translate.Label]
		k := key{name, sa.Namespace}
		if name == "" || byKey[k] != nil {
			continue
		}
		vc := &VirtualCluster{Name: name, HostNamespace: sa.Namespace, Pods: map[string]int{}}
		byKey[k] = vc
		byNS[sa.Namespace] = append(byNS[sa.Namespace], vc)
	}
	for _, lq := range lqs {
		for _, vc := range byNS[lq.Namespace] {
			vc.Queues = append(vc.Queues, lq.Name+" → "+lq.Spec.ClusterQueue)
		}
	}
	for _, p := range pods {
		if vc := byKey[key{p.Labels[translate.Label], p.Namespace}]; vc != nil {
			vc.Pods[string(p.Status.Phase)]++
		}
	}
	for i := range wls {
		wl := &wls[i]
		if workload.IsFinished(wl) {
			continue
		}
		for _, vc := range byNS[wl.Namespace] {
			if workload.HasQuota(wl) {
				vc.Admitted++
			} else {
				vc.Pending++
			}
		}
	}
	out := make([]VirtualCluster, 0, len(byKey))
	for _, vc := range byKey {
		slices.Sort(vc.Queues)
		out = append(out, *vc)
	}
	slices.SortFunc(out, func(a, b VirtualCluster) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.HostNamespace, b.HostNamespace))
	})
	return out
}
