package jobs

import (
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// runningJob is a queued Job started by berth with par pods at once, and
// its Workload admitted for them in flavor rf.
func runningJob(t *testing.T, par int32) (*batchv1.Job, *berthv1.Workload) {
	t.Helper()
	job := MakeJob("j", "ns").Queue("q").Parallelism(par).Completions(20).Request("cpu", "500m").Obj()
	wl := NewWorkload(job, "q", nil, "")
	if err := StartTemplate(job, nil); err != nil {
		t.Fatal(err)
	}
	job.Spec.Suspend = ptr.To(false)
	workload.SetAdmitted(wl, &berthv1.Admission{ClusterQueue: "cq", PodSetAssignments: []berthv1.PodSetAssignment{{Name: "main", Count: par,
		Flavors: map[corev1.ResourceName]string{"cpu": "rf"}, ResourceUsage: corev1.ResourceList{"cpu": *resource.NewMilliQuantity(500*int64(par), resource.DecimalSI)}}}},
		nil, metav1.Now().Time)
	return job, wl
}

// A raise of a running Job's parallelism is kept back and recorded, so no
// pod starts past the quota while its Job runs on; a raise of a Job that
// cannot grow in place, or any other growth, suspends it as before.
func TestHoldGrowthKeepsARaiseBack(t *testing.T) {
	old, _ := runningJob(t, 2)
	raised := old.DeepCopy()
	raised.Spec.Parallelism = ptr.To(int32(5))
	if !(Kind{}).HoldGrowth(old, raised) || Suspended(raised) || *raised.Spec.Parallelism != 2 ||
		raised.Annotations[berthv1.PendingParallelismAnnotation] != "5" {
		t.Fatalf("a raise of a running Job: suspended %v, parallelism %d, annotations %v", Suspended(raised), *raised.Spec.Parallelism, raised.Annotations)
	}
	for name, change := range map[string]func(j *batchv1.Job){
		"completions raised too":  func(j *batchv1.Job) { j.Spec.Completions = ptr.To(int32(30)) },
		"placed by topology":      func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{berthv1.TopologyPlacedLabel: "true"} },
		"run on a worker cluster": func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To(ManagedBy) },
	} {
		j := old.DeepCopy()
		j.Spec.Parallelism = ptr.To(int32(5))
		change(j)
		if !(Kind{}).HoldGrowth(old, j) || !Suspended(j) {
			t.Errorf("%s: not suspended", name)
		}
	}
	partialOld := old.DeepCopy()
	if err := ShrinkToAdmitted(partialOld, 1); err != nil {
		t.Fatal(err)
	}
	j := partialOld.DeepCopy()
	j.Spec.Parallelism = ptr.To(int32(5))
	if !(Kind{}).HoldGrowth(partialOld, j) || !Suspended(j) {
		t.Error("admitted partially: not suspended")
	}
}

// A raise goes step by step, each decided from what the API shows: the
// growth Workload is made, waits, is asked for a new size, is admitted and
// merged into the Job's Workload, the Job raised, the growth Workload
// deleted and the raise forgotten. At no step does the Job run more pods
// than its Workload holds quota for.
func TestNextGrowthWalksARaiseThrough(t *testing.T) {
	job, wl := runningJob(t, 2)
	step := func(s *Slice) Growth {
		t.Helper()
		g := NextGrowth(job, wl, s)
		if held := wl.Status.Admission.PodSetAssignments[0].Count; *job.Spec.Parallelism > held {
			t.Fatalf("the Job runs %d pods at once on quota for %d", *job.Spec.Parallelism, held)
		}
		return g
	}
	if g := step(nil); g.Step != GrowNothing {
		t.Fatalf("no raise: %+v", g)
	}
	job.Annotations[berthv1.PendingParallelismAnnotation] = "5"
	if g := step(nil); g.Step != GrowCreate || g.From != 2 || g.To != 5 {
		t.Fatalf("raised to 5: %+v", g)
	}
	gw, err := NewGrowth(job, wl, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if gw.Spec.PodSets[0].Count != 3 || gw.Annotations[berthv1.GrowthFlavorsAnnotation] != `{"cpu":"rf"}` || !metav1.IsControlledBy(gw, wl) {
		t.Fatalf("growth Workload: count %d, annotations %v", gw.Spec.PodSets[0].Count, gw.Annotations)
	}
	s, ok := SliceOf(gw)
	if !ok || s.From != 2 || s.To != 5 || s.Admitted {
		t.Fatalf("read back: %+v", s)
	}
	if g := step(s); g.Step != GrowNothing {
		t.Fatalf("waiting for quota: %+v", g)
	}
	job.Annotations[berthv1.PendingParallelismAnnotation] = "6"
	if g := step(s); g.Step != GrowUpdate || g.To != 6 {
		t.Fatalf("raised again while it waits: %+v", g)
	}
	s.To = 6
	s.Admitted, s.Flavors = true, map[string]string{"cpu": "other"}
	if g := step(s); g.Step != GrowForget || !strings.Contains(g.Why, "other flavors") {
		t.Fatalf("admitted in another flavor: %+v", g)
	}
	s.Flavors = map[string]string{"cpu": "rf"}
	if g := step(s); g.Step != GrowMerge || g.To != 6 {
		t.Fatalf("admitted: %+v", g)
	}
	workload.ResizeAdmission(wl, 6)
	if g := step(s); g.Step != GrowRaise || g.To != 6 {
		t.Fatalf("merged: %+v", g)
	}
	job.Spec.Parallelism = ptr.To(int32(6))
	if g := step(s); g.Step != GrowDelete {
		t.Fatalf("raised: %+v", g)
	}
	if g := step(nil); g.Step != GrowForget || g.Why != "" {
		t.Fatalf("done: %+v", g)
	}
	delete(job.Annotations, berthv1.PendingParallelismAnnotation)
	if g := step(nil); g.Step != GrowNothing {
		t.Fatalf("after: %+v", g)
	}
}

// Lowered while its raise waits or was merged, a Job's growth Workload
// goes and the shrink takes over; a raise of a Job that cannot grow in
// place, or a damaged annotation, is forgotten, saying why.
func TestNextGrowthGivesUp(t *testing.T) {
	job, wl := runningJob(t, 4)
	job.Annotations[berthv1.PendingParallelismAnnotation] = "6"
	s := &Slice{Name: "g", From: 4, To: 6}
	job.Spec.Parallelism = ptr.To(int32(3))
	if g := NextGrowth(job, wl, s); g.Step != GrowDelete {
		t.Errorf("lowered while it waits: %+v", g)
	}
	if g := NextGrowth(job, wl, nil); g.Step != GrowForget {
		t.Errorf("lowered, its growth Workload gone: %+v", g)
	}
	job.Spec.Parallelism = ptr.To(int32(4))
	job.Annotations[berthv1.PendingParallelismAnnotation] = "many"
	if g := NextGrowth(job, wl, nil); g.Step != GrowForget || !strings.Contains(g.Why, "not a positive whole number") {
		t.Errorf("damaged annotation: %+v", g)
	}
	job.Annotations[berthv1.PendingParallelismAnnotation] = "6"
	wl.Status.Admission.PodSetAssignments[0].TopologyAssignment = &berthv1.TopologyAssignment{Levels: []string{"host"}}
	if g := NextGrowth(job, wl, nil); g.Step != GrowForget || !strings.Contains(g.Why, "placed by topology") {
		t.Errorf("placed by topology: %+v", g)
	}
}

// Whatever its user, the scheduler and a crash do between berth's steps,
// a growing Job never runs more pods at once than its Workload holds quota
// for: a simulation of the steps (NextGrowth, and the shrink) against
// edits of parallelism and of the annotation, growth Workloads admitted
// and preempted, and steps lost.
func FuzzGrowthNeverRunsPastTheQuota(f *testing.F) {
	f.Add([]byte{1, 5, 0, 2, 0, 0, 3, 0, 0, 0, 0})
	f.Add([]byte{1, 9, 2, 0, 4, 0, 1, 2, 0, 0, 5, 0, 0, 3, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		job, wl := runningJob(t, 2)
		var slice *Slice
		parallelism := func() int32 { return *job.Spec.Parallelism }
		for i := 0; i+1 < len(ops); i += 2 {
			arg := int32(ops[i+1]%12) + 1
			switch ops[i] % 6 {
			case 0: // berth's step
				g := NextGrowth(job, wl, slice)
				switch g.Step {
				case GrowNothing:
					if n, ok := Shrunk(wl, job); ok {
						workload.ResizeAdmission(wl, n)
						wl.Spec.PodSets[0].Count = n
					}
				case GrowForget:
					delete(job.Annotations, berthv1.PendingParallelismAnnotation)
				case GrowCreate:
					slice = &Slice{Name: "g", From: g.From, To: g.To}
				case GrowUpdate:
					slice.To = g.To
				case GrowMerge:
					workload.ResizeAdmission(wl, g.To)
					wl.Spec.PodSets[0].Count = g.To
				case GrowRaise:
					if slice.Admitted && slice.To == g.To {
						job.Spec.Parallelism = ptr.To(g.To)
					} else {
						workload.ResizeAdmission(wl, g.From)
						wl.Spec.PodSets[0].Count = g.From
					}
				case GrowDelete:
					slice = nil
				}
			case 1: // its user raises (the webhook keeps it back) or lowers
				old := job.DeepCopy()
				job.Spec.Parallelism = ptr.To(arg)
				if arg > *old.Spec.Parallelism && !(Kind{}).HoldGrowth(old, job) {
					t.Fatal("a raise got past the webhook")
				}
				if Suspended(job) {
					return // queued again whole: not this test's business
				}
			case 2: // its user writes the annotation
				job.Annotations[berthv1.PendingParallelismAnnotation] = strconv.Itoa(int(arg))
			case 3: // the scheduler admits the growth Workload
				if slice != nil {
					slice.Admitted, slice.Flavors = true, map[string]string{"cpu": "rf"}
				}
			case 4: // ... or preempts it
				if slice != nil {
					slice.Admitted = false
				}
			case 5: // the next step is lost (a crash): nothing happens
			}
			held := wl.Status.Admission.PodSetAssignments[0].Count
			if parallelism() > held {
				t.Fatalf("after op %d: the Job runs %d pods at once on quota for %d (growth %+v)", i/2, parallelism(), held, slice)
			}
			if u := wl.Status.Admission.PodSetAssignments[0].ResourceUsage["cpu"]; u.MilliValue() != 500*int64(held) {
				t.Fatalf("after op %d: %d pods held as %s cpu", i/2, held, u.String())
			}
		}
	})
}
