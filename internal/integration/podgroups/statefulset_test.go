package podgroups

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// sts is the group of a StatefulSet of replicas Pods, of which pods are
// there.
func sts(replicas int32, pods []*corev1.Pod, wl *berthv1.Workload) Group {
	return Group{Name: "g", Total: replicas, Pods: pods, Workload: wl, Queue: "q", StatefulSet: &StatefulSet{Name: "db", UID: "uid-db"}}
}

// sized is the Workload of a StatefulSet's group of n Pods like pods[0].
func sized(pods []*corev1.Pod, n int32) *berthv1.Workload {
	wl := makeWorkload(pods[:1])
	wl.Spec.PodSets[0].Count = n
	return wl
}

// A StatefulSet with OrderedReady makes its next Pod once the last is
// Ready: its group is queued for all its replicas from the first Pod.
func TestStatefulSetQueuesFromItsFirstPod(t *testing.T) {
	if p := Decide(sts(3, nil, nil), now); p.Create || p.Waiting != "" {
		t.Errorf("no Pod yet: %+v; want nothing done", p)
	}
	p := Decide(sts(3, makePods(1, "1", nil), nil), now)
	if !p.Create || len(p.Spec.PodSets) != 1 || p.Spec.PodSets[0].Count != 3 || p.Spec.QueueName != "q" {
		t.Fatalf("first of 3 Pods: create=%v spec %+v; want one pod set of 3", p.Create, p.Spec)
	}
	// Admitted, each Pod starts when it comes, up to the replicas.
	wl := admitted(sized(makePods(1, "1", nil), 3))
	p = Decide(sts(3, makePods(1, "1", nil), wl), now)
	if got := startNames(p.Start); len(got) != 1 || p.Finish {
		t.Errorf("admitted, first Pod: start %v finish=%v; want it started", got, p.Finish)
	}
	running := makePods(2, "1", func(b *podBuilder) *podBuilder { return b.Started() })
	p = Decide(sts(3, append(running, makePod("p2", "1").Obj()), wl), now)
	if got := startNames(p.Start); len(got) != 1 || got[0] != "p2" {
		t.Errorf("two running, the third comes: start %v; want p2", got)
	}
}

// A Pod of a serving group that ends does not finish it: the StatefulSet
// makes it again, and it starts in the same admission.
func TestStatefulSetGroupDoesNotFinish(t *testing.T) {
	wl := admitted(sized(makePods(1, "1", nil), 2))
	ended := makePods(2, "1", func(b *podBuilder) *podBuilder { return b.Started().Phase(corev1.PodFailed) })
	if p := Decide(sts(2, ended, wl), now); p.Finish || p.Delete || p.Resize {
		t.Errorf("its Pods failed: %+v; want the Workload kept", p)
	}
	if p := Decide(sts(2, nil, wl), now); p.Finish || p.Delete || p.Resize {
		t.Errorf("no Pod at all: %+v; want the Workload kept", p)
	}
}

// Scaled while waiting, its Workload follows; scaled while admitted, it is
// evicted, and made again at its new size once its Pods have stopped;
// scaled to 0, its quota goes back once its Pods have stopped.
func TestStatefulSetScaled(t *testing.T) {
	waiting := makePods(1, "1", nil)
	p := Decide(sts(5, waiting, sized(waiting, 3)), now)
	if !p.Update || p.Spec.PodSets[0].Count != 5 {
		t.Errorf("scaled from 3 to 5 while waiting: update=%v spec %+v; want 5", p.Update, p.Spec)
	}

	running := makePods(3, "1", func(b *podBuilder) *podBuilder { return b.Started() })
	wl := admitted(sized(running, 3))
	p = Decide(sts(5, running, wl), now)
	if !p.Resize || p.Reason != "Resized" || !strings.Contains(p.Message, "StatefulSet db was scaled from 3 to 5 replicas") || len(p.Start) > 0 {
		t.Fatalf("scaled from 3 to 5 while admitted: %+v; want it evicted", p)
	}
	evicted := stopping(sized(running, 3))
	if p := Decide(sts(5, running, evicted), now); len(p.Stop) != 3 || p.Release || p.Delete {
		t.Errorf("evicted with 3 running: stop %v release=%v delete=%v; want them stopped first", names(p.Stop), p.Release, p.Delete)
	}
	if p := Decide(sts(5, nil, evicted), now); !p.Delete || p.Release {
		t.Errorf("evicted at 3, its Pods gone, now 5: delete=%v release=%v; want it made again at 5", p.Delete, p.Release)
	}
	if p := Decide(sts(3, nil, evicted), now); !p.Release || p.Delete {
		t.Errorf("preempted, its Pods gone: release=%v delete=%v; want it queued again as it is", p.Release, p.Delete)
	}

	leaving := makePods(1, "1", func(b *podBuilder) *podBuilder { return b.Started().OnNode().Deleting(time.Minute) })
	if p := Decide(sts(0, leaving, wl), now); p.Delete || p.Resize || p.RecheckAfter != time.Minute {
		t.Errorf("scaled to 0, a Pod still stopping: %+v; want the quota kept until it has", p)
	}
	if p := Decide(sts(0, nil, wl), now); !p.Delete {
		t.Errorf("scaled to 0, its Pods gone: %+v; want its Workload deleted", p)
	}
}

// Pods of two shapes (a template changed by hand while it had none) are
// not queued as one of them.
func TestStatefulSetOfTwoShapesWaits(t *testing.T) {
	p := Decide(sts(2, []*corev1.Pod{makePod("a", "1").Obj(), makePod("b", "2").Obj()}, nil), now)
	if p.Create || !strings.Contains(p.Waiting, "the Pods of StatefulSet db are of 2 different shapes") {
		t.Errorf("create=%v waiting %q", p.Create, p.Waiting)
	}
}

// A group stopped by its user (spec.active false) stays stopped: its
// Workload is neither rewritten active nor made again when its Pods come
// back. berth stop once lost to a spec rewrite that dropped the field.
func TestStoppedGroupStaysStopped(t *testing.T) {
	inactive := func(wl *berthv1.Workload) *berthv1.Workload {
		f := false
		wl.Spec.Active = &f
		return wl
	}
	waiting := makePods(1, "1", nil)
	if p := Decide(sts(3, waiting, inactive(sized(waiting, 3))), now); p.Update || p.Delete || p.Create {
		t.Errorf("StatefulSet group, stopped, its Pods back: %+v; want its Workload left as it is", p)
	}
	if p := Decide(sts(3, nil, stopping(inactive(sized(waiting, 3)))), now); !p.Release || p.Delete {
		t.Errorf("StatefulSet group, stopped while admitted, its Pods gone: %+v; want its quota given back, the Workload kept", p)
	}
	all := makePods(8, "1", nil)
	if p := Decide(group(all, inactive(makeWorkload(all))), now); p.Update || p.Delete {
		t.Errorf("pod group, stopped, whole: %+v; want its Workload left as it is", p)
	}
	if p := Decide(group(all, stopping(inactive(makeWorkload(all)))), now); !p.Release || p.Delete {
		t.Errorf("pod group, stopped while admitted, its Pods stopped: %+v; want its quota given back, the Workload kept", p)
	}
}

// An admitted StatefulSet's group says when all its replicas are Ready, for
// its PodsReady condition; not before, and not again.
func TestStatefulSetGroupPodsReady(t *testing.T) {
	ready := makePods(2, "1", func(b *podBuilder) *podBuilder { return b.Started().Ready() })
	wl := admitted(sized(ready, 3))
	if p := Decide(sts(3, ready, wl), now); p.PodsReady != "" {
		t.Errorf("2 of 3 Pods Ready: %q; want nothing said", p.PodsReady)
	}
	all := append(ready, makePod("p2", "1").Started().Ready().Obj())
	if p := Decide(sts(3, all, wl), now); p.PodsReady != "3 of 3 pods Ready" {
		t.Errorf("3 of 3 Pods Ready: %q", p.PodsReady)
	}
	all[0].DeletionTimestamp = &metav1.Time{Time: now}
	if p := Decide(sts(3, all, wl), now); p.PodsReady != "" {
		t.Errorf("one of 3 Ready Pods being deleted: %q; want nothing said", p.PodsReady)
	}
	all[0].DeletionTimestamp = nil
	workload.SetPodsReady(wl, "3 of 3 pods Ready", now)
	if p := Decide(sts(3, all, wl), now); p.PodsReady != "" {
		t.Errorf("recorded already: %q; want nothing said", p.PodsReady)
	}
}
