package workload

import (
	"slices"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/topology"
)

// TopologyRequestOf translates a pod set's topology request for the placer;
// nil for none.
func TopologyRequestOf(r *berthv1.TopologyRequest) *topology.Request {
	if r == nil {
		return nil
	}
	out := &topology.Request{Mode: topology.Unconstrained}
	switch {
	case r.Required != nil:
		out.Mode, out.Level = topology.Required, *r.Required
	case r.Preferred != nil:
		out.Mode, out.Level = topology.Preferred, *r.Preferred
	}
	if r.SliceRequiredLevel != nil {
		out.SliceLevel = *r.SliceRequiredLevel
	}
	if r.SliceSize != nil {
		out.SliceSize = *r.SliceSize
	}
	return out
}

// APITopologyRequest is the API form of a placer request (TopologyRequestOf
// reversed).
func APITopologyRequest(r *topology.Request) *berthv1.TopologyRequest {
	if r == nil {
		return nil
	}
	out := &berthv1.TopologyRequest{}
	switch r.Mode {
	case topology.Required:
		out.Required = ptrTo(r.Level)
	case topology.Preferred:
		out.Preferred = ptrTo(r.Level)
	default:
		out.Unconstrained = ptrTo(true)
	}
	if r.SliceLevel != "" {
		out.SliceRequiredLevel = ptrTo(r.SliceLevel)
	}
	if r.SliceSize != 0 {
		out.SliceSize = ptrTo(r.SliceSize)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// TopologyAssignmentOf is the API form of a placement: levels, and the
// lowest-level domains with their pod counts.
func TopologyAssignmentOf(a *topology.Assignment) *berthv1.TopologyAssignment {
	if a == nil {
		return nil
	}
	out := &berthv1.TopologyAssignment{Levels: slices.Clone(a.Levels), Domains: []berthv1.TopologyDomainAssignment{}}
	for _, d := range a.Domains {
		out.Domains = append(out.Domains, berthv1.TopologyDomainAssignment{Values: slices.Clone(d.Values), Count: d.Count})
	}
	return out
}

// DomainsOf reads a stored placement's domains back (TopologyAssignmentOf
// reversed, but for the nodes, which the API does not keep).
func DomainsOf(a *berthv1.TopologyAssignment) []topology.Domain {
	if a == nil {
		return nil
	}
	out := make([]topology.Domain, 0, len(a.Domains))
	for _, d := range a.Domains {
		out = append(out, topology.Domain{Values: slices.Clone(d.Values), Count: d.Count})
	}
	return out
}

// ApplyRepair writes a repaired placement (core.Repair) into w's admission:
// each repaired pod set's domains, when they are still those the repair
// started from. It reports false, changing nothing, when w holds no such
// admission any more (evicted, finished, repaired already, re-admitted).
func ApplyRepair(w *berthv1.Workload, r core.Repair) bool {
	if w.Status.Admission == nil || IsFinished(w) || len(r.PodSets) == 0 {
		return false
	}
	psas := w.Status.Admission.PodSetAssignments
	var at []int
	for name, before := range r.Before {
		i := slices.IndexFunc(psas, func(p berthv1.PodSetAssignment) bool { return p.Name == name })
		if i < 0 || psas[i].TopologyAssignment == nil || !slices.EqualFunc(DomainsOf(psas[i].TopologyAssignment), before, sameDomain) {
			return false
		}
		at = append(at, i)
	}
	for _, i := range at {
		ta := psas[i].TopologyAssignment
		ta.Domains = make([]berthv1.TopologyDomainAssignment, 0, len(r.PodSets[psas[i].Name]))
		for _, d := range r.PodSets[psas[i].Name] {
			ta.Domains = append(ta.Domains, berthv1.TopologyDomainAssignment{Values: slices.Clone(d.Values), Count: d.Count})
		}
	}
	return true
}

func sameDomain(a, b topology.Domain) bool {
	return a.Count == b.Count && slices.Equal(a.Values, b.Values)
}
