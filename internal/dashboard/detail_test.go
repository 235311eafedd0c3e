package dashboard_test

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/integration/jobs"
	. "github.com/berth-dev/berth/test/fixtures"
)

func jobPod(name, job string, uid types.UID) corev1.Pod {
	p := MakePod(name, "ns").Label(batchv1.ControllerUidLabel, string(uid)).Obj()
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: uid, Controller: &yes}}
	return *p
}

func event(kind, name string, uid types.UID, at time.Time, reason string) corev1.Event {
	return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "ns", Name: name, UID: uid},
		LastTimestamp: metav1.NewTime(at), Type: corev1.EventTypeNormal, Reason: reason}
}

// A Job's workload page: its conditions in the order they happened, its pod
// set with the flavors it was admitted to and its domains, its Job's pods
// (not another Job's), and its own and its Job's events (not others').
func TestDescribeAJobsWorkload(t *testing.T) {
	name := jobs.WorkloadNameFor("train", "train-uid")
	wl := MakeWorkload(name, "ns").Queue("lq").Request("cpu", "2").Count(3).OwnedByJob("train").Reserved("cq").Obj()
	wl.Status.Admission.PodSetAssignments[0].Flavors = map[corev1.ResourceName]string{"cpu": "on-demand"}
	wl.Status.Admission.PodSetAssignments[0].TopologyAssignment = &berthv1.TopologyAssignment{Levels: []string{"rack", "host"},
		Domains: []berthv1.TopologyDomainAssignment{{Values: []string{"r1", "h1"}, Count: 3}}}
	wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: "Early", Status: "True",
		LastTransitionTime: metav1.NewTime(time.Unix(0, 0).Add(-time.Hour))})

	gated := jobPod("train-a", "train", "train-uid")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: berthv1.TopologyGate}}
	running := jobPod("train-b", "train", "train-uid")
	running.Status.Phase, running.Spec.NodeName = corev1.PodRunning, "h1"
	running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	other := jobPod("other-a", "other", "other-uid")

	t1 := time.Unix(100, 0)
	events := []corev1.Event{
		event("Job", "train", "train-uid", t1.Add(time.Second), "Started"),
		event("Workload", name, "", t1, "Admitted"),
		event("Job", "other", "other-uid", t1, "Started"),
		event("Job", "train", "older-uid", t1, "Started"), // a Job of the same name, gone
	}
	d := dashboard.Describe(wl, []corev1.Pod{running, other, gated}, events, "admitted")

	if d.Owner != "Job train" || d.Why != "admitted" || !d.Active {
		t.Errorf("owner %q why %q active %v", d.Owner, d.Why, d.Active)
	}
	if len(d.Timeline) < 2 || d.Timeline[0].Condition != "Early" {
		t.Errorf("timeline %+v; want Early first", d.Timeline)
	}
	ps := d.PodSets[0]
	if ps.Count != 3 || ps.Admitted != 3 || ps.Requests != "cpu 2" || ps.Flavors != "cpu: on-demand" ||
		strings.Join(ps.Domains, ";") != "r1/h1: 3 pods" {
		t.Errorf("pod set %+v", ps)
	}
	if len(d.Pods) != 2 || d.Pods[0].Name != "train-a" || d.Pods[0].Note != "gated by "+berthv1.TopologyGate ||
		d.Pods[1].Node != "h1" || !d.Pods[1].Ready {
		t.Errorf("pods %+v; want train-a gated, train-b running on h1", d.Pods)
	}
	var reasons []string
	for _, e := range d.Events {
		reasons = append(reasons, e.Object+" "+e.Reason)
	}
	if got := strings.Join(reasons, ", "); got != "Workload "+name+" Admitted, Job train Started" {
		t.Errorf("events %s", got)
	}
	if sel := dashboard.PodSelector(wl).String(); sel != batchv1.ControllerUidLabel+"=train-uid" {
		t.Errorf("pods read with %q", sel)
	}
}

// A workload made by hand is described too: no owner, no quota, nothing
// running; its pods are read from the whole namespace and none is its.
func TestDescribeAPendingWorkload(t *testing.T) {
	wl := MakeWorkload("w", "ns").Queue("lq").Obj()
	d := dashboard.Describe(wl, []corev1.Pod{jobPod("x", "j", "j-uid")}, nil, "waits")
	if d.Owner != "" || len(d.Pods) != 0 || d.PodSets[0].Admitted != 0 || d.PodSets[0].Flavors != "" {
		t.Errorf("detail %+v", d)
	}
	if !dashboard.PodSelector(wl).Empty() {
		t.Errorf("pods read with %q; want all of the namespace", dashboard.PodSelector(wl))
	}
	// The selector berth recorded for its pods, whatever kind made it.
	wl.Annotations = map[string]string{berthv1.PodSelectorAnnotation: berthv1.OwnerUIDLabel + "=mpi-uid"}
	if sel := dashboard.PodSelector(wl).String(); sel != berthv1.OwnerUIDLabel+"=mpi-uid" {
		t.Errorf("pods read with %q; want the recorded selector", sel)
	}
}
