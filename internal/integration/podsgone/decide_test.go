package podsgone_test

import (
	"reflect"
	"testing"
	"time"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/podsgone"
	. "github.com/berth-dev/berth/test/fixtures"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// job is the Workload berth makes for Job j: owned, its finalizer and its
// pods' selector on.
func job() *WorkloadWrapper {
	return MakeWorkload("job-j-1a2b3", "ns").Queue("q").OwnedByJob("j").
		FollowsPods("batch.kubernetes.io/controller-uid=j-uid")
}

func TestDecide(t *testing.T) {
	running := podsgone.Pod{}
	stopping := func(in time.Duration) podsgone.Pod { return podsgone.Pod{StopsBy: now.Add(in)} }
	ended := podsgone.Pod{Ended: true}
	cases := []struct {
		name       string
		wl         *berthv1.Workload
		pods       []podsgone.Pod
		ownerGoing bool
		count      bool
		want       podsgone.Decision
	}{
		{name: "running, owned: none of its business",
			wl: job().Reserved("cq").Obj(), want: podsgone.Decision{}},
		{name: "deleted while pending: goes at once",
			wl: job().Deleting(now).Obj(), want: podsgone.Decision{Action: podsgone.LetGo}},
		{name: "deleted after it finished: goes at once",
			wl: job().Reserved("cq").Finished().Deleting(now).Obj(), want: podsgone.Decision{Action: podsgone.LetGo}},
		// The escape: its Job deleted, its pods still terminating, and the
		// quota was given to another at once.
		{name: "just deleted, its pods terminating: keeps its quota, looks again soon",
			wl: job().Reserved("cq").Deleting(now).Obj(), pods: []podsgone.Pod{stopping(30 * time.Second), stopping(4 * time.Second), ended},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: podsgone.MinRecheck, Message: "2 of its pods are still there"}},
		{name: "deleted 6s ago: looks again after half that",
			wl: job().Reserved("cq").Deleting(now.Add(-6 * time.Second)).Obj(), pods: []podsgone.Pod{stopping(24 * time.Second)},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: 3 * time.Second, Message: "1 of its pods are still there"}},
		{name: "deleted a while ago: no later than its pods' first deadline",
			wl: job().Reserved("cq").Deleting(now.Add(-time.Minute)).Obj(), pods: []podsgone.Pod{stopping(30 * time.Second), stopping(4 * time.Second)},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: 4 * time.Second, Message: "2 of its pods are still there"}},
		{name: "a pod past its deadline (its node lost?) does not make it look more often",
			wl: job().Reserved("cq").Deleting(now.Add(-time.Minute)).Obj(), pods: []podsgone.Pod{stopping(-time.Second)},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: podsgone.MaxRecheck, Message: "1 of its pods are still there"}},
		{name: "deleted, its pods not deleted yet by the garbage collector: waits",
			wl: job().Reserved("cq").Deleting(now.Add(-time.Second)).Obj(), pods: []podsgone.Pod{running},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: 500 * time.Millisecond, Message: "1 of its pods are still there"}},
		// Its owner going, the garbage collector would delete what it left
		// running; late, while the Workload stands (the pods a Job made as
		// it was being deleted, say): berth does so at once.
		{name: "deleted with its owner, a pod left running: it is deleted",
			wl: job().Reserved("cq").Deleting(now).Obj(), ownerGoing: true,
			pods:  []podsgone.Pod{{Name: "left"}, {Name: "stopping", StopsBy: now.Add(time.Second)}, {Name: "done", Ended: true}},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: podsgone.MinRecheck, Message: "2 of its pods are still there",
				Delete: []string{"left"}}},
		{name: "deleted while its owner lives: its pods are the owner's to stop",
			wl: job().Reserved("cq").Deleting(now).Obj(), pods: []podsgone.Pod{{Name: "running"}},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: podsgone.MinRecheck, Message: "1 of its pods are still there"}},
		{name: "orphaned, its owner gone: its pods run on",
			wl: job().Reserved("cq").Orphaned().Obj(), ownerGoing: true, pods: []podsgone.Pod{{Name: "running"}},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: podsgone.MaxRecheck, Message: "1 of its pods are still there"}},
		{name: "deleted, its pods gone or ended: goes",
			wl: job().Reserved("cq").Deleting(now).Obj(), pods: []podsgone.Pod{ended},
			count: true, want: podsgone.Decision{Action: podsgone.LetGo}},
		{name: "evicted and deleted: still waits for its pods",
			wl: job().Reserved("cq").Stopping("Preempted").Deleting(now).Obj(), pods: []podsgone.Pod{running},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: podsgone.MinRecheck, Message: "1 of its pods are still there"}},
		{name: "deleted while it runs on a worker: waits for the dispatcher",
			wl: job().Reserved("cq").RunsOn("w1").Deleting(now).Obj(), want: podsgone.Decision{Action: podsgone.Wait}},
		{name: "deleted without berth's finalizer (made before it): none of its business",
			wl: MakeWorkload("w", "ns").Reserved("cq").OwnedByJob("j").Deleting(now).Obj(), want: podsgone.Decision{}},
		// kubectl delete --cascade=orphan: the Workload stays, ownerless.
		{name: "orphaned with its pods running on: keeps its quota",
			wl: job().Reserved("cq").Orphaned().Obj(), pods: []podsgone.Pod{running, ended},
			count: true, want: podsgone.Decision{Action: podsgone.Wait, RecheckAfter: podsgone.MaxRecheck, Message: "1 of its pods are still there"}},
		{name: "orphaned, its pods gone: finished",
			wl: job().Reserved("cq").Orphaned().Obj(), count: true,
			want: podsgone.Decision{Action: podsgone.Finish, Reason: "OwnerDeleted", Message: "the object it was made for was deleted and its pods are gone"}},
		{name: "orphaned while pending: finished at once, out of its queue",
			wl:   job().Orphaned().Obj(),
			want: podsgone.Decision{Action: podsgone.Finish, Reason: "OwnerDeleted", Message: "the object it was made for was deleted and its pods are gone"}},
		{name: "orphaned after it finished: nothing",
			wl: job().Reserved("cq").Finished().Orphaned().Obj(), want: podsgone.Decision{}},
		{name: "made by hand, no owner: none of its business",
			wl: MakeWorkload("w", "ns").Reserved("cq").Obj(), want: podsgone.Decision{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := podsgone.Count(c.wl); got != c.count {
				t.Errorf("Count = %v, want %v", got, c.count)
			}
			if got := podsgone.Decide(c.wl, c.pods, c.ownerGoing, now); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Decide = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestSelector(t *testing.T) {
	if sel, err := podsgone.Selector(job().Obj()); err != nil || sel.String() != "batch.kubernetes.io/controller-uid=j-uid" {
		t.Errorf("Selector = %v, %v", sel, err)
	}
	if sel, err := podsgone.Selector(MakeWorkload("w", "ns").Obj()); err != nil || sel != nil {
		t.Errorf("a Workload without one: %v, %v; want nil, nil", sel, err)
	}
	for _, bad := range []string{"", "a in (", "!!"} {
		wl := MakeWorkload("w", "ns").FollowsPods(bad).Obj()
		if _, err := podsgone.Selector(wl); err == nil {
			t.Errorf("selector %q: no error", bad)
		}
	}
}
