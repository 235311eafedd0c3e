package podgroups

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// podBuilder makes a Pod of group "g" as the webhook holds it: gated, with
// berth's finalizer.
type podBuilder struct{ p *corev1.Pod }

func makePod(name, cpu string) *podBuilder {
	return &podBuilder{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Labels:      map[string]string{berthv1.PodGroupNameLabel: "g"},
			Annotations: map[string]string{berthv1.PodGroupTotalCountAnnotation: "8"},
			Finalizers:  []string{berthv1.PodFinalizer}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: berthv1.AdmissionGate}},
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu)}}}},
		},
	}}
}

// Started: ungated, in its shape's pod set, with a flavor's node label added.
func (b *podBuilder) Started() *podBuilder {
	b.p.Annotations[berthv1.PodSetAnnotation] = Shape(b.p)
	b.p.Spec.SchedulingGates = nil
	b.p.Spec.NodeSelector = map[string]string{"pool": "a"}
	b.p.Status.Phase = corev1.PodRunning
	return b
}
func (b *podBuilder) Phase(ph corev1.PodPhase) *podBuilder { b.p.Status.Phase = ph; return b }

// Ready marks the Pod Ready.
func (b *podBuilder) Ready() *podBuilder {
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	return b
}
func (b *podBuilder) OnNode() *podBuilder { b.p.Spec.NodeName = "n1"; return b }
func (b *podBuilder) Deleting(grace time.Duration) *podBuilder {
	t := metav1.NewTime(now.Add(grace))
	b.p.DeletionTimestamp = &t
	return b
}
func (b *podBuilder) Obj() *corev1.Pod { return b.p }

func makePods(n int, cpu string, f func(*podBuilder) *podBuilder) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		b := makePod(fmt.Sprintf("p%d", i), cpu)
		if f != nil {
			b = f(b)
		}
		out = append(out, b.Obj())
	}
	return out
}

// makeWorkload is the group's Workload for pods, owned by each of them.
func makeWorkload(pods []*corev1.Pod) *berthv1.Workload {
	wl := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: WorkloadName("g"), Namespace: "ns"},
		Spec: berthv1.WorkloadSpec{PodSets: PodSets(pods), QueueName: "q"}}
	for _, p := range pods {
		wl.OwnerReferences = append(wl.OwnerReferences, ownerRef(p))
	}
	return wl
}

func admitted(wl *berthv1.Workload) *berthv1.Workload {
	a := &berthv1.Admission{ClusterQueue: "cq"}
	for _, ps := range wl.Spec.PodSets {
		a.PodSetAssignments = append(a.PodSetAssignments, berthv1.PodSetAssignment{Name: ps.Name, Count: ps.Count})
	}
	workload.SetAdmitted(wl, a, nil, now)
	return wl
}

func stopping(wl *berthv1.Workload) *berthv1.Workload {
	workload.SetStopping(admitted(wl), "Preempted", "preempted by ns/big", now, true)
	return wl
}

func group(pods []*corev1.Pod, wl *berthv1.Workload) Group {
	return Group{Name: "g", Total: 8, Pods: pods, Workload: wl, Queue: "q"}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func startNames(ss []Start) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Pod.Name)
	}
	return out
}

func TestGroupWaitsForItsLastPod(t *testing.T) {
	p := Decide(group(makePods(5, "1", nil), nil), now)
	if p.Create || p.Waiting != "pod group g has 5 of its 8 Pods; waiting for 3 more" {
		t.Errorf("5 of 8 pods: create=%v waiting %q; want no Workload, 3 missing", p.Create, p.Waiting)
	}
	// While its Pods are being created, the group is not said to wait.
	young := makePods(5, "1", nil)
	young[4].CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
	if p := Decide(group(young, nil), now); p.Create || p.Waiting != "" || p.RecheckAfter != WaitingQuiet-time.Second {
		t.Errorf("5 of 8 pods, the last a second old: create=%v waiting %q recheck %v; want a recheck in 4s",
			p.Create, p.Waiting, p.RecheckAfter)
	}
	p = Decide(group(makePods(8, "1", nil), nil), now)
	if !p.Create || p.Waiting != "" {
		t.Fatalf("8 of 8 pods: create=%v waiting %q; want the Workload made", p.Create, p.Waiting)
	}
	if ps := p.Spec.PodSets; len(ps) != 1 || ps[0].Count != 8 || ps[0].Requests.Cpu().String() != "1" || p.Spec.QueueName != "q" {
		t.Errorf("spec %+v; want one pod set of 8 pods of 1 cpu in queue q", p.Spec)
	}
	p = Decide(group(makePods(9, "1", nil), nil), now)
	if p.Create || !strings.Contains(p.Waiting, "more than its total count of 8; delete 1 of them") {
		t.Errorf("9 of 8 pods: create=%v waiting %q", p.Create, p.Waiting)
	}
}

func TestPodSetPerShape(t *testing.T) {
	pods := append(makePods(6, "1", nil), makePod("big-0", "4").Obj(), makePod("big-1", "4").Obj())
	p := Decide(group(pods, nil), now)
	if !p.Create || len(p.Spec.PodSets) != 2 {
		t.Fatalf("two shapes: %+v; want a Workload of two pod sets", p)
	}
	counts := map[string]int32{}
	for _, ps := range p.Spec.PodSets {
		counts[ps.Requests.Cpu().String()] = ps.Count
	}
	if counts["1"] != 6 || counts["4"] != 2 {
		t.Errorf("pod sets by cpu %v; want 6 of 1 cpu and 2 of 4", counts)
	}
	var many []*corev1.Pod
	for i := range 9 {
		many = append(many, makePod(fmt.Sprintf("p%d", i), fmt.Sprint(i+1)).Obj())
	}
	g := group(many, nil)
	g.Total = 9
	if p := Decide(g, now); p.Create || !strings.Contains(p.Waiting, "9 different shapes") {
		t.Errorf("nine shapes: create=%v waiting %q; want it refused", p.Create, p.Waiting)
	}
}

func TestAdmittedGroupStartsWhole(t *testing.T) {
	pods := makePods(8, "1", nil)
	p := Decide(group(pods, admitted(makeWorkload(pods))), now)
	if len(p.Start) != 8 || p.Finish || len(p.Adopt) != 0 {
		t.Fatalf("admitted: start %v finish=%v adopt %v; want all 8 started", startNames(p.Start), p.Finish, names(p.Adopt))
	}
	if p.Start[0].PodSet != Shape(pods[0]) {
		t.Errorf("started in pod set %q, want %q", p.Start[0].PodSet, Shape(pods[0]))
	}
	// Once they run, nothing more to do: their node selector changed, their
	// pod set did not.
	running := makePods(8, "1", (*podBuilder).Started)
	if p := Decide(group(running, admitted(makeWorkload(pods))), now); len(p.Start)+len(p.Stop)+len(p.LetGo) != 0 || p.Finish {
		t.Errorf("running: %+v; want nothing done", p)
	}
}

func TestFailedPodIsReplacedInTheRunningGroup(t *testing.T) {
	pods := makePods(8, "1", (*podBuilder).Started)
	wl := admitted(makeWorkload(makePods(8, "1", nil)))
	pods[3].Status.Phase = corev1.PodFailed
	p := Decide(group(pods, wl), now)
	if p.Finish || len(p.LetGo) != 0 {
		t.Errorf("one failed: finish=%v letGo %v; want the group running, the failed pod kept", p.Finish, names(p.LetGo))
	}
	replacement := makePod("p3-again", "1").Obj()
	extra := makePod("p9", "1").Obj()
	p = Decide(group(append(pods, replacement, extra), wl), now)
	if got := startNames(p.Start); !slices.Equal(got, []string{"p3-again"}) {
		t.Errorf("started %v; want only the replacement", got)
	}
	if got := names(p.Adopt); !slices.Equal(got, []string{"p3-again", "p9"}) {
		t.Errorf("adopted %v; want both new pods", got)
	}
	if !strings.Contains(p.Waiting, "1 Pods of running pod group g wait") {
		t.Errorf("waiting %q; want the extra pod said to wait", p.Waiting)
	}
}

func TestGroupFinishesWhenAllItsPodsHaveEnded(t *testing.T) {
	wl := admitted(makeWorkload(makePods(8, "1", nil)))
	pods := makePods(8, "1", func(b *podBuilder) *podBuilder { return b.Started().Phase(corev1.PodSucceeded) })
	pods[7].Status.Phase = corev1.PodRunning
	if p := Decide(group(pods, wl), now); p.Finish {
		t.Error("finished with a pod still running")
	}
	pods[7].Status.Phase = corev1.PodSucceeded
	if p := Decide(group(pods, wl), now); !p.Finish || p.Reason != "PodsSucceeded" || len(p.LetGo) != 0 {
		t.Errorf("all succeeded: %+v; want finished PodsSucceeded", p)
	}
	pods[2].Status.Phase = corev1.PodFailed
	if p := Decide(group(pods, wl), now); !p.Finish || p.Reason != "PodsFailed" || !strings.HasPrefix(p.Message, "7 of the 8 Pods") {
		t.Errorf("one failed: %+v; want finished PodsFailed", p)
	}
	workload.SetFinished(wl, "PodsFailed", "", now)
	if p := Decide(group(pods, wl), now); len(p.LetGo) != 8 {
		t.Errorf("finished: let go %v, want all 8", names(p.LetGo))
	}
}

func TestEvictedGroupKeepsItsQuotaUntilItsPodsStop(t *testing.T) {
	wl := stopping(makeWorkload(makePods(8, "1", nil)))
	pods := makePods(8, "1", func(b *podBuilder) *podBuilder { return b.Started().OnNode() })
	p := Decide(group(pods, wl), now)
	if len(p.Stop) != 8 || p.Release || p.Delete {
		t.Fatalf("stopping: stop %v release=%v delete=%v; want all 8 stopped, quota kept", names(p.Stop), p.Release, p.Delete)
	}
	// Being deleted, still within their grace period: they may run.
	deleting := makePods(8, "1", func(b *podBuilder) *podBuilder { return b.Started().OnNode().Deleting(30 * time.Second) })
	p = Decide(group(deleting, wl), now)
	if len(p.Stop)+len(p.LetGo) != 0 || p.Release || p.Delete || p.RecheckAfter != 30*time.Second {
		t.Fatalf("deleting: %+v; want nothing until they stop, a recheck in 30s", p)
	}
	// Gone: their finalizers go, and so does the Workload with its quota;
	// it is made again when the group's Pods are back.
	p = Decide(group(deleting, wl), now.Add(time.Minute))
	if len(p.LetGo) != 8 || !p.Delete || p.Release {
		t.Errorf("gone: letGo %v delete=%v release=%v; want all let go, the Workload deleted", names(p.LetGo), p.Delete, p.Release)
	}
}

func TestEvictedGroupThatNeverStartedQueuesAgain(t *testing.T) {
	pods := makePods(8, "1", nil)
	p := Decide(group(pods, stopping(makeWorkload(pods))), now)
	if !p.Release || p.Delete || len(p.Stop) != 0 {
		t.Errorf("stopping, all gated: %+v; want the quota released and the Workload kept", p)
	}
}

func TestPendingGroup(t *testing.T) {
	pods := makePods(8, "1", nil)
	if p := Decide(group(pods, makeWorkload(pods)), now); p.Update || p.Delete || len(p.Adopt) != 0 || p.Create {
		t.Errorf("pending, unchanged: %+v; want nothing done", p)
	}
	// A pod deleted while the group waits: the group is incomplete again.
	gone := makePods(8, "1", nil)
	gone[5] = makePod("p5", "1").Deleting(0).Obj()
	if p := Decide(group(gone, makeWorkload(pods)), now); !p.Delete || !slices.Equal(names(p.LetGo), []string{"p5"}) {
		t.Errorf("pending, one deleted: delete=%v letGo %v; want the Workload deleted, the pod let go", p.Delete, names(p.LetGo))
	}
	// Replaced by a pod of another shape: the spec follows.
	changed := append(makePods(7, "1", nil), makePod("p7-big", "2").Obj())
	p := Decide(group(changed, makeWorkload(pods)), now)
	if !p.Update || len(p.Spec.PodSets) != 2 || !slices.Equal(names(p.Adopt), []string{"p7-big"}) {
		t.Errorf("pending, changed: update=%v spec %+v adopt %v", p.Update, p.Spec, names(p.Adopt))
	}
	// An ungated pod of a group that holds no quota may not run.
	loose := makePods(8, "1", nil)
	loose[0] = makePod("p0", "1").Started().Obj()
	if p := Decide(group(loose, makeWorkload(pods)), now); !slices.Equal(names(p.Stop), []string{"p0"}) {
		t.Errorf("pending, one running: stop %v, want p0", names(p.Stop))
	}
	if p := Decide(group(loose, nil), now); !slices.Equal(names(p.Stop), []string{"p0"}) || p.Create {
		t.Errorf("no Workload, one running: stop %v create=%v, want p0 stopped first", names(p.Stop), p.Create)
	}
}

func TestFinishedGroupsNewPodsWait(t *testing.T) {
	old := makePods(8, "1", func(b *podBuilder) *podBuilder { return b.Started().Phase(corev1.PodSucceeded) })
	wl := admitted(makeWorkload(makePods(8, "1", nil)))
	workload.SetFinished(wl, "PodsSucceeded", "", now)
	p := Decide(group(append(old, makePod("late", "1").Obj()), wl), now)
	if len(p.LetGo) != 8 || len(p.Start) != 0 || !strings.Contains(p.Waiting, "has finished") {
		t.Errorf("finished, a late pod: %+v; want the old let go, the late one waiting", p)
	}
}
