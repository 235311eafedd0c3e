// Package coretest builds core objects for tests, in the style of
//
//	MakeWorkload("w", "cq").Priority(5).PodSet("main", 2).Request("cpu", "1").Obj()
package coretest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/topology"
)

// Milli parses a quantity ("1.5", "2Gi") into milli-units.
func Milli(q string) int64 {
	v := resource.MustParse(q)
	return v.MilliValue()
}

// Epoch is the creation time builders count from.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ClusterQueueWrapper builds a core.ClusterQueue.
type ClusterQueueWrapper struct{ cq core.ClusterQueue }

// MakeClusterQueue returns a BestEffortFIFO queue admitting every namespace.
func MakeClusterQueue(name string) *ClusterQueueWrapper {
	return &ClusterQueueWrapper{cq: core.ClusterQueue{Name: name, Strategy: core.BestEffortFIFO,
		NamespaceSelector: labels.Everything()}}
}

func (w *ClusterQueueWrapper) Cohort(c string) *ClusterQueueWrapper { w.cq.Cohort = c; return w }
func (w *ClusterQueueWrapper) StrictFIFO() *ClusterQueueWrapper {
	w.cq.Strategy = core.StrictFIFO
	return w
}
func (w *ClusterQueueWrapper) Stopped() *ClusterQueueWrapper { w.cq.Stopped = true; return w }

// AdmissionFairSharing orders its line by LocalQueue usage first.
func (w *ClusterQueueWrapper) AdmissionFairSharing() *ClusterQueueWrapper {
	w.cq.AdmissionFairSharing = true
	return w
}
func (w *ClusterQueueWrapper) AdmissionChecks(names ...string) *ClusterQueueWrapper {
	w.cq.AdmissionChecks = names
	return w
}
func (w *ClusterQueueWrapper) NamespaceSelector(s labels.Selector) *ClusterQueueWrapper {
	w.cq.NamespaceSelector = s
	return w
}
func (w *ClusterQueueWrapper) TryNextFlavorWhenCanBorrow() *ClusterQueueWrapper {
	w.cq.TryNextFlavorWhenCanBorrow = true
	return w
}

// ResourceGroup adds a group covering the resources its flavors give quota for.
func (w *ClusterQueueWrapper) ResourceGroup(flavors ...core.FlavorQuotas) *ClusterQueueWrapper {
	w.cq.ResourceGroups = append(w.cq.ResourceGroups, group(flavors))
	return w
}

func (w *ClusterQueueWrapper) Obj() core.ClusterQueue { return w.cq }

func group(flavors []core.FlavorQuotas) core.ResourceGroup {
	rg := core.ResourceGroup{Flavors: flavors}
	seen := map[string]bool{}
	for _, f := range flavors {
		for r := range f.Quotas {
			if !seen[r] {
				seen[r] = true
				rg.Resources = append(rg.Resources, r)
			}
		}
	}
	return rg
}

// FlavorQuotasWrapper builds a core.FlavorQuotas.
type FlavorQuotasWrapper struct{ fq core.FlavorQuotas }

func MakeFlavorQuotas(name string) *FlavorQuotasWrapper {
	return &FlavorQuotasWrapper{fq: core.FlavorQuotas{Name: name, Quotas: map[string]core.Quota{}}}
}

// Resource sets a nominal quota and, optionally, the borrowing limit and then
// the lending limit ("" for none).
func (w *FlavorQuotasWrapper) Resource(r, nominal string, limits ...string) *FlavorQuotasWrapper {
	q := core.Quota{Nominal: Milli(nominal)}
	if len(limits) > 0 && limits[0] != "" {
		v := Milli(limits[0])
		q.BorrowingLimit = &v
	}
	if len(limits) > 1 && limits[1] != "" {
		v := Milli(limits[1])
		q.LendingLimit = &v
	}
	w.fq.Quotas[r] = q
	return w
}

func (w *FlavorQuotasWrapper) Obj() core.FlavorQuotas { return w.fq }

// CohortWrapper builds a core.Cohort.
type CohortWrapper struct{ co core.Cohort }

func MakeCohort(name string) *CohortWrapper             { return &CohortWrapper{co: core.Cohort{Name: name}} }
func (w *CohortWrapper) Parent(p string) *CohortWrapper { w.co.Parent = p; return w }
func (w *CohortWrapper) ResourceGroup(flavors ...core.FlavorQuotas) *CohortWrapper {
	w.co.ResourceGroups = append(w.co.ResourceGroups, group(flavors))
	return w
}
func (w *CohortWrapper) Obj() core.Cohort { return w.co }

// FlavorWrapper builds a core.Flavor.
type FlavorWrapper struct{ f core.Flavor }

func MakeFlavor(name string) *FlavorWrapper {
	return &FlavorWrapper{f: core.Flavor{Name: name, NodeLabels: map[string]string{}}}
}
func (w *FlavorWrapper) Label(k, v string) *FlavorWrapper { w.f.NodeLabels[k] = v; return w }
func (w *FlavorWrapper) Taint(k, v string, effect corev1.TaintEffect) *FlavorWrapper {
	w.f.NodeTaints = append(w.f.NodeTaints, corev1.Taint{Key: k, Value: v, Effect: effect})
	return w
}
func (w *FlavorWrapper) Toleration(t corev1.Toleration) *FlavorWrapper {
	w.f.Tolerations = append(w.f.Tolerations, t)
	return w
}
func (w *FlavorWrapper) Topology(name string) *FlavorWrapper { w.f.TopologyName = name; return w }
func (w *FlavorWrapper) Obj() core.Flavor                    { return w.f }

// WorkloadWrapper builds a *core.Workload.
type WorkloadWrapper struct{ w core.Workload }

// MakeWorkload returns a workload named default/<name> queued in cq, created at Epoch.
func MakeWorkload(name, cq string) *WorkloadWrapper {
	return &WorkloadWrapper{w: core.Workload{Key: "default/" + name, ClusterQueue: cq, Timestamp: Epoch,
		NamespaceLabels: labels.Set{"kubernetes.io/metadata.name": "default"}}}
}

func (w *WorkloadWrapper) Priority(p int32) *WorkloadWrapper { w.w.Priority = p; return w }

// Created sets the creation time to Epoch plus d.
func (w *WorkloadWrapper) Created(d time.Duration) *WorkloadWrapper {
	w.w.Timestamp = Epoch.Add(d)
	return w
}
func (w *WorkloadWrapper) NamespaceLabels(l labels.Set) *WorkloadWrapper {
	w.w.NamespaceLabels = l
	return w
}

// PodSet starts a new pod set; Request and the like apply to the last one.
func (w *WorkloadWrapper) PodSet(name string, count int32) *WorkloadWrapper {
	w.w.PodSets = append(w.w.PodSets, core.PodSet{Name: name, Count: count, Requests: map[string]int64{}})
	return w
}

// Request sets a per-pod request on the last pod set (a "main" pod set of one
// pod is made if there is none).
func (w *WorkloadWrapper) Request(r, q string) *WorkloadWrapper {
	w.last().Requests[r] = Milli(q)
	return w
}
func (w *WorkloadWrapper) NodeSelector(k, v string) *WorkloadWrapper {
	ps := w.last()
	if ps.NodeSelector == nil {
		ps.NodeSelector = map[string]string{}
	}
	ps.NodeSelector[k] = v
	return w
}
func (w *WorkloadWrapper) Toleration(t corev1.Toleration) *WorkloadWrapper {
	ps := w.last()
	ps.Tolerations = append(ps.Tolerations, t)
	return w
}
func (w *WorkloadWrapper) NodeAffinity(terms ...corev1.NodeSelectorTerm) *WorkloadWrapper {
	w.last().NodeAffinity = &corev1.NodeSelector{NodeSelectorTerms: terms}
	return w
}

// Topology sets the last pod set's topology request.
func (w *WorkloadWrapper) Topology(mode topology.Mode, level string) *WorkloadWrapper {
	w.last().Topology = &topology.Request{Mode: mode, Level: level}
	return w
}

// Steerable marks the last pod set as one whose pods berth can give domains
// (a Job's).
func (w *WorkloadWrapper) Steerable() *WorkloadWrapper {
	w.last().Steerable = true
	return w
}

// MinCount allows the last pod set partial admission, down to n pods.
func (w *WorkloadWrapper) MinCount(n int32) *WorkloadWrapper { w.last().MinCount = n; return w }

// AwaitsPods marks a workload whose pods' readiness is watched once admitted.
func (w *WorkloadWrapper) AwaitsPods() *WorkloadWrapper { w.w.AwaitsPods = true; return w }

// Behind marks more of its queue's workloads as waiting behind it.
func (w *WorkloadWrapper) Behind() *WorkloadWrapper { w.w.Behind = true; return w }

func (w *WorkloadWrapper) last() *core.PodSet {
	if len(w.w.PodSets) == 0 {
		w.PodSet("main", 1)
	}
	return &w.w.PodSets[len(w.w.PodSets)-1]
}

func (w *WorkloadWrapper) Obj() *core.Workload {
	c := w.w
	return &c
}

// FR is shorthand for a FlavorResource.
func FR(flavor, res string) core.FlavorResource {
	return core.FlavorResource{Flavor: flavor, Resource: res}
}

// Describe renders decisions compactly for test failure messages.
func Describe(ds []core.Decision) string {
	s := ""
	for _, d := range ds {
		switch {
		case d.Admit != nil:
			s += fmt.Sprintf("%s: admitted in %s %v\n", d.Workload.Key, d.Admit.ClusterQueue, d.Admit.Usage)
		case d.Pending != nil:
			s += fmt.Sprintf("%s: %s: %s\n", d.Workload.Key, d.Pending.Reason, d.Pending.Message)
		}
	}
	return s
}

// Preemption sets the queue's within-queue and reclaim policies.
func (w *ClusterQueueWrapper) Preemption(within, reclaim core.PreemptionPolicy) *ClusterQueueWrapper {
	w.cq.Preemption.WithinClusterQueue = within
	w.cq.Preemption.ReclaimWithinCohort = reclaim
	return w
}

// BorrowWithinCohort enables preemption while borrowing, below threshold if set.
func (w *ClusterQueueWrapper) BorrowWithinCohort(threshold *int32) *ClusterQueueWrapper {
	w.cq.Preemption.BorrowWithinCohort = core.PreemptLowerPriority
	w.cq.Preemption.MaxPriorityThreshold = threshold
	return w
}

// PreemptWhenCanPreempt sets flavorFungibility.whenCanPreempt: Preempt.
func (w *ClusterQueueWrapper) PreemptWhenCanPreempt() *ClusterQueueWrapper {
	w.cq.PreemptWhenCanPreempt = true
	return w
}

// FairWeight sets the queue's fair-sharing weight.
func (w *ClusterQueueWrapper) FairWeight(weight string) *ClusterQueueWrapper {
	v := Milli(weight)
	w.cq.FairWeight = &v
	return w
}

// AdmittedWrapper builds a core.Admitted: a workload holding quota.
type AdmittedWrapper struct{ a core.Admitted }

// Running returns workload default/<name> holding quota in cq, admitted at Epoch.
func Running(name, cq string) *AdmittedWrapper {
	return &AdmittedWrapper{a: core.Admitted{Key: "default/" + name, ClusterQueue: cq, Usage: core.Usage{},
		Timestamp: Epoch, AdmittedAt: Epoch}}
}

func (w *AdmittedWrapper) Priority(p int32) *AdmittedWrapper { w.a.Priority = p; return w }

// Use adds usage of a resource in a flavor.
func (w *AdmittedWrapper) Use(flavor, res, q string) *AdmittedWrapper {
	w.a.Usage[FR(flavor, res)] += Milli(q)
	return w
}

// Created and AdmittedAt set its queue time and admission time (Epoch plus d).
func (w *AdmittedWrapper) Created(d time.Duration) *AdmittedWrapper {
	w.a.Timestamp = Epoch.Add(d)
	return w
}
func (w *AdmittedWrapper) AdmittedAt(d time.Duration) *AdmittedWrapper {
	w.a.AdmittedAt = Epoch.Add(d)
	return w
}
func (w *AdmittedWrapper) Obj() core.Admitted { return w.a }

// Nodes makes blocks x racks x hosts Ready nodes with cpu free each, named
// b<i>-r<j>-h<k> and labelled with the flavor label pool=<pool>, and
// topology.berth.dev/block, topology.berth.dev/rack (r<i*racks+j>) and
// kubernetes.io/hostname.
func Nodes(pool string, blocks, racks, hosts int, cpu string) []topology.Node {
	var out []topology.Node
	for b := range blocks {
		for r := range racks {
			for h := range hosts {
				name := fmt.Sprintf("b%d-r%d-h%d", b, r, h)
				out = append(out, topology.Node{Name: name, Ready: true, Labels: map[string]string{"pool": pool,
					BlockLabel: fmt.Sprintf("b%d", b), RackLabel: fmt.Sprintf("r%d", b*racks+r), HostLabel: name},
					Free: map[string]int64{"cpu": Milli(cpu), topology.PodsResource: 110_000}})
			}
		}
	}
	return out
}

// The labels of Nodes, the levels of a block/rack/host topology.
const (
	BlockLabel = "topology.berth.dev/block"
	RackLabel  = "topology.berth.dev/rack"
	HostLabel  = "kubernetes.io/hostname"
)
