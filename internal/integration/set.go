package integration

import (
	"fmt"
	"slices"
	"strings"
)

// The integrations berth has, by the names Kueue gives its frameworks, so
// that a list written for one reads the same for the other.
const (
	BatchJob        = "batch/job"
	Pod             = "pod"
	Deployment      = "deployment"
	StatefulSet     = "statefulset"
	JobSet          = "jobset.x-k8s.io/jobset"
	LeaderWorkerSet = "leaderworkerset.x-k8s.io/leaderworkerset"
	TrainJob        = "trainer.kubeflow.org/trainjob"
)

// All is every integration, each on unless switched off. One whose kind is
// a CRD is active only where its CRD is installed.
var All = []string{BatchJob, Pod, Deployment, StatefulSet, JobSet, LeaderWorkerSet, TrainJob}

// Set is which integrations are on.
type Set map[string]bool

// ParseSet reads the integrations to turn on. An unknown name is refused,
// naming those known, and so is a Deployment, a StatefulSet or a
// LeaderWorkerSet without Pods: their pods are queued as Pods.
func ParseSet(names []string) (Set, error) {
	s := Set{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if !slices.Contains(All, n) {
			return nil, fmt.Errorf("--integrations: %q is not one berth has (%s)", n, strings.Join(All, ", "))
		}
		s[n] = true
	}
	if s[Deployment] && !s[Pod] {
		return nil, fmt.Errorf("--integrations: %s needs %s: a Deployment's pods are queued as Pods", Deployment, Pod)
	}
	for _, n := range []string{StatefulSet, LeaderWorkerSet} {
		if s[n] && !s[Pod] {
			return nil, fmt.Errorf("--integrations: %s needs %s: its pods are queued as pod groups", n, Pod)
		}
	}
	return s, nil
}

// On reports whether integration name is on.
func (s Set) On(name string) bool { return s[name] }

// Split lists the integrations that are on and those that are off, in
// All's order.
func (s Set) Split() (on, off []string) {
	for _, n := range All {
		if s[n] {
			on = append(on, n)
		} else {
			off = append(off, n)
		}
	}
	return on, off
}

// Without is s with name switched off.
func (s Set) Without(name string) Set {
	out := Set{}
	for n, on := range s {
		out[n] = on && n != name
	}
	return out
}
