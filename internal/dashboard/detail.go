package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/placement"
	"github.com/berth-dev/berth/internal/workload"
)

// Detail is a workload's page: where it stands, how it got there, and what
// runs for it.
type Detail struct {
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	LocalQueue string    `json:"localQueue"`
	Priority   int32     `json:"priority"`
	Created    time.Time `json:"created"`
	// Owner is the object it was made for ("Job train"), "" for one made
	// by hand.
	Owner  string `json:"owner,omitempty"`
	Active bool   `json:"active"`
	// Timeline is its conditions, each at its last change, oldest first.
	Timeline []Step       `json:"timeline"`
	PodSets  []PodSetView `json:"podSets"`
	Pods     []PodRow     `json:"pods"`
	// MorePods counts its pods beyond those listed.
	MorePods int        `json:"morePods,omitempty"`
	Events   []EventRow `json:"events"`
	// Why is `berth why` in words.
	Why string `json:"why"`
}

// Step is one condition of the workload.
type Step struct {
	Time      time.Time `json:"time"`
	Condition string    `json:"condition"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	Message   string    `json:"message,omitempty"`
}

// PodSetView is one pod set: what each pod asks for and, once it holds
// quota, where.
type PodSetView struct {
	Name     string `json:"name"`
	Count    int32  `json:"count"`
	Requests string `json:"requests"` // per pod, "cpu 1, memory 1Gi"
	// Admitted is how many pods hold quota (less than Count when admitted
	// in part), with their flavors and topology domains.
	Admitted int32    `json:"admitted,omitempty"`
	Flavors  string   `json:"flavors,omitempty"` // "cpu: on-demand"
	Domains  []string `json:"domains,omitempty"` // "block-1/rack-2: 4 pods"
}

// PodRow is one of its pods.
type PodRow struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Node  string `json:"node,omitempty"`
	Ready bool   `json:"ready"`
	// Note says what holds a pod back: its scheduling gates, a container
	// waiting, or why it failed.
	Note string `json:"note,omitempty"`
}

// EventRow is one event of the workload or its owner.
type EventRow struct {
	Time    time.Time `json:"time"`
	Object  string    `json:"object"` // "Workload job-train-1a2b3"
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count,omitempty"`
}

// Most rows of pods and events a page lists: the newest events, the first
// pods by name.
const (
	maxPods   = 100
	maxEvents = 50
)

// Describe makes wl's page from its pods and events (those of the
// namespace may be given: Describe keeps the workload's own and its
// owner's) and `berth why` in words.
func Describe(wl *berthv1.Workload, pods []corev1.Pod, events []corev1.Event, why string) Detail {
	d := Detail{Namespace: wl.Namespace, Name: wl.Name, LocalQueue: wl.Spec.QueueName, Priority: priority(wl),
		Created: wl.CreationTimestamp.Time, Active: workload.IsActive(wl), Why: why,
		Timeline: []Step{}, PodSets: []PodSetView{}, Pods: []PodRow{}, Events: []EventRow{}}
	owner := metav1.GetControllerOf(wl)
	if owner != nil {
		d.Owner = owner.Kind + " " + owner.Name
	}
	for _, c := range wl.Status.Conditions {
		d.Timeline = append(d.Timeline, Step{Time: c.LastTransitionTime.Time, Condition: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	slices.SortStableFunc(d.Timeline, func(a, b Step) int { return a.Time.Compare(b.Time) })

	assigned := map[string]berthv1.PodSetAssignment{}
	if wl.Status.Admission != nil && workload.HasQuota(wl) {
		for _, a := range wl.Status.Admission.PodSetAssignments {
			assigned[a.Name] = a
		}
	}
	for _, ps := range wl.Spec.PodSets {
		v := PodSetView{Name: ps.Name, Count: ps.Count, Requests: resources(ps.Requests)}
		if a, ok := assigned[ps.Name]; ok {
			v.Admitted = a.Count
			var fl []string
			for res, f := range a.Flavors {
				fl = append(fl, string(res)+": "+f)
			}
			sort.Strings(fl)
			v.Flavors = strings.Join(fl, ", ")
			if t := a.TopologyAssignment; t != nil {
				for _, dom := range t.Domains {
					v.Domains = append(v.Domains, fmt.Sprintf("%s: %d pods", strings.Join(dom.Values, "/"), dom.Count))
				}
			}
		}
		d.PodSets = append(d.PodSets, v)
	}

	me := types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}
	var mine []*corev1.Pod
	for i := range pods {
		if key, ok := placement.PodWorkload(&pods[i]); ok && key == me {
			mine = append(mine, &pods[i])
		}
	}
	slices.SortFunc(mine, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	if len(mine) > maxPods {
		d.MorePods = len(mine) - maxPods
		mine = mine[:maxPods]
	}
	for _, p := range mine {
		d.Pods = append(d.Pods, podRow(p))
	}

	for _, e := range events {
		io := e.InvolvedObject
		if io.Namespace != wl.Namespace || !(io.Kind == "Workload" && io.Name == wl.Name ||
			owner != nil && io.Kind == owner.Kind && io.Name == owner.Name && io.UID == owner.UID) {
			continue
		}
		d.Events = append(d.Events, EventRow{Time: eventTime(&e), Object: io.Kind + " " + io.Name, Type: e.Type,
			Reason: e.Reason, Message: e.Message, Count: e.Count})
	}
	slices.SortStableFunc(d.Events, func(a, b EventRow) int { return a.Time.Compare(b.Time) })
	if len(d.Events) > maxEvents {
		d.Events = d.Events[len(d.Events)-maxEvents:]
	}
	return d
}

// PodSelector narrows the pods to read for wl's page to its owner's: the
// selector berth recorded on wl for them (any kind that follows its pods,
// a configured kind's too), else where a label names the owner (a Job's, a
// JobSet's); otherwise all of the namespace, which Describe sorts out.
func PodSelector(wl *berthv1.Workload) labels.Selector {
	if s, ok := wl.Annotations[berthv1.PodSelectorAnnotation]; ok {
		if sel, err := labels.Parse(s); err == nil && !sel.Empty() {
			return sel
		}
	}
	owner := metav1.GetControllerOf(wl)
	switch {
	case owner == nil:
	case owner.Kind == "Job" && strings.HasPrefix(owner.APIVersion, "batch/"):
		return labels.SelectorFromSet(labels.Set{batchv1.ControllerUidLabel: string(owner.UID)})
	case owner.Kind == "JobSet" && strings.HasPrefix(owner.APIVersion, jobsetv1.GroupVersion.Group+"/"):
		return labels.SelectorFromSet(labels.Set{jobsetv1.JobSetUIDKey: string(owner.UID)})
	}
	return labels.Everything()
}

func podRow(p *corev1.Pod) PodRow {
	r := PodRow{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			r.Ready = true
		}
	}
	var notes []string
	if len(p.Spec.SchedulingGates) > 0 {
		var gates []string
		for _, g := range p.Spec.SchedulingGates {
			gates = append(gates, g.Name)
		}
		notes = append(notes, "gated by "+strings.Join(gates, ", "))
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			notes = append(notes, c.Name+": "+c.State.Waiting.Reason)
		case c.State.Terminated != nil && c.State.Terminated.ExitCode != 0:
			notes = append(notes, fmt.Sprintf("%s: exited %d (%s)", c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason))
		}
	}
	if p.Status.Reason != "" {
		notes = append(notes, p.Status.Reason)
	}
	if p.DeletionTimestamp != nil {
		notes = append(notes, "being deleted")
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

func resources(rl corev1.ResourceList) string {
	var parts []string
	for res, q := range rl {
		parts = append(parts, string(res)+" "+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
