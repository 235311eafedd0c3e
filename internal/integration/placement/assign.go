package placement

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Ungate is a gated pod to let go, with the node selector of its domain.
type Ungate struct {
	Pod          *corev1.Pod
	NodeSelector map[string]string
}

// Assign gives gated pods, oldest first, the domains of a that have room:
// a domain's count less the live pods already placed in it (by their node
// selectors). Pods beyond the assignment's room stay gated.
func Assign(a *berthv1.TopologyAssignment, placed, gated []*corev1.Pod) []Ungate {
	if a == nil || len(a.Levels) == 0 {
		return nil
	}
	room := make([]int32, len(a.Domains))
	index := map[string]int{}
	for i, d := range a.Domains {
		room[i] = d.Count
		index[strings.Join(d.Values, "\x00")] = i
	}
	for _, p := range placed {
		values := make([]string, len(a.Levels))
		for i, l := range a.Levels {
			values[i] = p.Spec.NodeSelector[l]
		}
		if i, ok := index[strings.Join(values, "\x00")]; ok {
			room[i]--
		}
	}
	var out []Ungate
	d := 0
	for _, p := range gated {
		for d < len(room) && room[d] <= 0 {
			d++
		}
		if d == len(room) {
			break
		}
		sel := map[string]string{}
		for i, l := range a.Levels {
			if i < len(a.Domains[d].Values) {
				sel[l] = a.Domains[d].Values[i]
			}
		}
		out = append(out, Ungate{Pod: p, NodeSelector: sel})
		room[d]--
	}
	return out
}

// Stray lists the placed pods whose domain a no longer has: their node
// failed and the assignment was repaired (core.Repairs), so they are to go
// and be replaced where the assignment now gives them room. Only pods given
// a domain by berth (a node selector for every level) are judged.
func Stray(a *berthv1.TopologyAssignment, placed []*corev1.Pod) []*corev1.Pod {
	if a == nil || len(a.Levels) == 0 {
		return nil
	}
	domains := map[string]bool{}
	for _, d := range a.Domains {
		domains[strings.Join(d.Values, "\x00")] = true
	}
	var out []*corev1.Pod
	for _, p := range placed {
		values := make([]string, len(a.Levels))
		given := true
		for i, l := range a.Levels {
			v, ok := p.Spec.NodeSelector[l]
			values[i], given = v, given && ok
		}
		if given && !domains[strings.Join(values, "\x00")] {
			out = append(out, p)
		}
	}
	return out
}

// Gated reports whether the pod waits for its domain.
func Gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == berthv1.TopologyGate
	})
}

// Live reports a pod that counts in its domain: not ended, not going.
func Live(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// Lift adds the node selector and removes the gate.
func Lift(p *corev1.Pod, sel map[string]string) {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	for k, v := range sel {
		p.Spec.NodeSelector[k] = v
	}
	p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == berthv1.TopologyGate
	})
}
