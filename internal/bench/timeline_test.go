package bench

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
)

// The chart's counts follow a workload through admission, eviction,
// readmission and finish: admitted counts it once, running while it holds
// quota, finished at the end.
func TestTrackerCountsByClass(t *testing.T) {
	plan := []Planned{{Name: "a", Class: &Class{Name: "small", Runtime: time.Hour}},
		{Name: "b", Class: &Class{Name: "large", Runtime: time.Hour}}}
	tr, finish := startedTracker(t, plan)
	wl := func(name string, conds ...string) *berthv1.Workload {
		return workloadIn(name, queueName(0), nil, conds...)
	}
	readmitted := func(w *berthv1.Workload, count int32) *berthv1.Workload {
		w.Status.RequeueState = &berthv1.RequeueState{Count: &count}
		return w
	}
	classes := []string{"small", "large"}
	steps := []struct {
		wl   *berthv1.Workload
		want []float64 // small admitted, running, finished; large the same
	}{
		{wl("a"), []float64{0, 0, 0, 0, 0, 0}},
		{wl("a", berthv1.WorkloadAdmitted), []float64{1, 1, 0, 0, 0, 0}},
		{wl("a"), []float64{1, 0, 0, 0, 0, 0}}, // evicted
		{wl("a", berthv1.WorkloadAdmitted), []float64{1, 1, 0, 0, 0, 0}},
		{wl("b", berthv1.WorkloadAdmitted), []float64{1, 1, 0, 1, 1, 0}},
		{wl("a", berthv1.WorkloadAdmitted, berthv1.WorkloadFinished), []float64{1, 0, 1, 1, 1, 0}},
		{wl("a", berthv1.WorkloadAdmitted, berthv1.WorkloadFinished), []float64{1, 0, 1, 1, 1, 0}}, // seen again
		{readmitted(wl("b", berthv1.WorkloadAdmitted), 1), []float64{1, 0, 1, 1, 1, 0}},            // eviction unseen
	}
	for i, s := range steps {
		tr.observe(s.wl, finish)
		got := tr.counts(classes)
		for j := range s.want {
			if got[j] != s.want[j] {
				t.Fatalf("step %d: counts %v, want %v", i, got, s.want)
			}
		}
	}
	// b's readmission after an eviction the run never saw is a new
	// admission: the eviction is counted and only a finish for the new
	// admission applies.
	if b := tr.state["b"]; b.rec.Evictions != 1 || tr.current("b", 1) || !tr.current("b", 2) {
		t.Errorf("b: %d evictions, epoch %d; want the missed eviction counted and a new admission", b.rec.Evictions, b.epoch)
	}
	if a := tr.state["a"]; a.rec.Evictions != 1 {
		t.Errorf("a: %d evictions, want 1", a.rec.Evictions)
	}
}

// A Job of the plan is followed through its Workload, which berth names
// and labels with the Job's name; a workload of that name in another
// namespace, or one the bench made itself, is not taken for it.
func TestTrackerFollowsJobsThroughTheirWorkloads(t *testing.T) {
	plan := []Planned{{Name: "j", Queue: 1, Class: &Class{Name: "job", Kind: KindJob, Runtime: time.Millisecond}}}
	tr, finish := startedTracker(t, plan)
	wl := workloadIn
	ofJob := map[string]string{jobs.NameLabel: "j"}
	tr.observe(wl("job-j-1a2b3", queueName(0), ofJob, berthv1.WorkloadAdmitted), finish)
	tr.observe(wl("j", queueName(1), nil, berthv1.WorkloadAdmitted), finish)
	if tr.nAdmitted != 0 {
		t.Fatalf("admitted %d: another namespace's Workload, or one not of the Job, was taken for the Job", tr.nAdmitted)
	}
	tr.observe(wl("job-j-1a2b3", queueName(1), ofJob, berthv1.WorkloadAdmitted), finish)
	if tr.nAdmitted != 1 {
		t.Fatalf("the Job's Workload was not followed")
	}
	tr.observe(wl("job-j-1a2b3", queueName(1), ofJob, berthv1.WorkloadAdmitted, berthv1.WorkloadFinished), finish)
	select {
	case <-tr.done:
	default:
		t.Error("the run is not done once its only Job finished")
	}
}

// startedTracker is a tracker of plan whose run began now and ends with the
// test.
func startedTracker(t *testing.T, plan []Planned) (*tracker, chan finishing) {
	tr := newTracker(plan)
	tr.start = time.Now()
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) })
	tr.stopped = stopped
	return tr, make(chan finishing, 8)
}

// workloadIn is a Workload with the conditions conds True.
func workloadIn(name, namespace string, labels map[string]string, conds ...string) *berthv1.Workload {
	w := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}}
	for _, c := range conds {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "Test"})
	}
	return w
}

func TestTimelineSamplesUntilStopped(t *testing.T) {
	n := 0.0
	read := func() []float64 { n++; return []float64{n, 10 * n, 100 * n} }
	tl := startTimeline(context.Background(), time.Now(), layout([]string{"p", "q"}, "x", "y"), read)
	c := tl.stop("title")
	again := tl.stop("title")
	if c.Title != "title" || len(c.Panels) != 2 || c.Panels[1].Title != "q" || c.Panels[0].Series[1].Name != "y" {
		t.Fatalf("chart %+v does not follow the layout", c)
	}
	first := c.Panels[0].Series[0].Points
	if len(first) < 2 {
		t.Fatalf("%d samples; want the first and a last one at stop", len(first))
	}
	if len(again.Panels[0].Series[0].Points) != len(first) {
		t.Errorf("a second stop sampled again")
	}
	last := first[len(first)-1]
	if last.Y != n {
		t.Errorf("last sample %v, want the value read at stop, %v", last.Y, n)
	}
	// Each value goes to its own series, panel by panel; a fourth series
	// had no value and stays empty.
	if got := c.Panels[1].Series[0].Points[len(first)-1].Y; got != 100*n {
		t.Errorf("panel q, series x: %v, want %v", got, 100*n)
	}
	if pts := c.Panels[1].Series[1].Points; len(pts) != 0 {
		t.Errorf("panel q, series y has %d points with no values read for it", len(pts))
	}
	for i := 1; i < len(first); i++ {
		if first[i].X < first[i-1].X {
			t.Fatalf("time goes back: %v", first)
		}
	}
}

// The tracker knows which planned object each of berth's Workloads stands
// for: a Job's, a pod group's, a plain Pod's, or a Workload the bench made.
func TestPlannedName(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		wl   berthv1.Workload
		want string
	}{
		{"a Job's", berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-j-1a2b3", Labels: map[string]string{jobs.NameLabel: "j"}}}, "j"},
		{"a pod group's", berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "group-g-1a2b3",
			Labels:          map[string]string{berthv1.PodGroupNameLabel: "g"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "g-0"}, {Kind: "Pod", Name: "g-1"}}}}, "g"},
		{"a Pod's", berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "pod-p-1a2b3",
			OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "p", Controller: &yes}}}}, "p"},
		{"the bench's own", berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, "w"},
	} {
		if got := plannedName(&tc.wl); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A plain Pod's or a pod group's Workload deleted before it finished is an
// eviction the bench answers by making the Pods again; a finished one's
// deletion, or a Job's, asks for nothing.
func TestTrackerRemakesEvictedPods(t *testing.T) {
	yes := true
	plan := []Planned{{Name: "p", Class: &Class{Name: "pod", Kind: KindPod}},
		{Name: "g", Class: &Class{Name: "group", Kind: KindPodGroup}},
		{Name: "j", Class: &Class{Name: "job", Kind: KindJob}}}
	tr, finish := startedTracker(t, plan)
	podWorkload := func(conds ...string) *berthv1.Workload {
		w := workloadIn("pod-p-1a2b3", queueName(0), nil, conds...)
		w.OwnerReferences = []metav1.OwnerReference{{Kind: "Pod", Name: "p", Controller: &yes}}
		return w
	}
	group := workloadIn("group-g-1a2b3", queueName(0), map[string]string{berthv1.PodGroupNameLabel: "g"}, berthv1.WorkloadAdmitted)
	job := workloadIn("job-j-1a2b3", queueName(0), map[string]string{jobs.NameLabel: "j"}, berthv1.WorkloadAdmitted)
	tr.observe(podWorkload(berthv1.WorkloadAdmitted), finish)
	if name, again := tr.deleted(podWorkload(berthv1.WorkloadAdmitted)); !again || name != "p" {
		t.Errorf("an admitted Pod's Workload deleted: %q %v, want p made again", name, again)
	}
	if got := tr.counts([]string{"pod"}); got[1] != 0 {
		t.Errorf("running after the eviction: %v", got)
	}
	if name, again := tr.deleted(group); !again || name != "g" {
		t.Errorf("a group's Workload deleted: %q %v, want g made again", name, again)
	}
	if _, again := tr.deleted(job); again {
		t.Error("a Job's Workload deleted: the Job controller's business, not the bench's")
	}
	tr.observe(podWorkload(berthv1.WorkloadAdmitted, berthv1.WorkloadFinished), finish)
	if _, again := tr.deleted(podWorkload(berthv1.WorkloadAdmitted, berthv1.WorkloadFinished)); again {
		t.Error("a finished Pod's Workload deleted: nothing to make again")
	}
}
