package bench

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/chaos"
	"github.com/berth-dev/berth/internal/integration/jobs"
)

// tracker holds what the run saw of each workload.
type tracker struct {
	start time.Time
	mu    sync.Mutex
	state map[string]*tracked
	order []string
	// counts for progress, and by class for the chart
	nCreated, nAdmitted, nFinished, nEvicted int
	byClass                                  map[string]*classCounts
	done                                     chan struct{}
	endAtAdmission                           bool            // done once all are admitted; nothing is finished
	released                                 time.Duration   // when held queues were released
	stopped                                  <-chan struct{} // the run is over
}

// classCounts are a class's workloads ever admitted, holding quota now,
// and finished.
type classCounts struct{ admitted, running, finished int }

type tracked struct {
	rec       Record
	namespace string
	// kind is its Class's Kind: "" for a Workload the bench finishes;
	// otherwise berth made the Workload, and berth and the pods finish it.
	kind     string
	runtime  time.Duration
	admitted bool
	epoch    int
	requeues int32 // at the admission last seen
}

// requeues is how many times the workload has been evicted: berth counts
// them in its requeue state, which admission leaves alone, so it tells one
// admission from the next.
func requeues(wl *berthv1.Workload) int32 {
	if rs := wl.Status.RequeueState; rs != nil && rs.Count != nil {
		return *rs.Count
	}
	return 0
}

func newTracker(plan []Planned) *tracker {
	t := &tracker{state: map[string]*tracked{}, byClass: map[string]*classCounts{}, done: make(chan struct{})}
	for _, p := range plan {
		t.state[p.Name] = &tracked{rec: Record{Name: p.Name, Class: p.Class.Name, Cohort: p.Cohort}, namespace: queueName(p.Queue),
			kind: p.Class.Kind, runtime: p.Class.Runtime}
		t.order = append(t.order, p.Name)
		if t.byClass[p.Class.Name] == nil {
			t.byClass[p.Class.Name] = &classCounts{}
		}
	}
	return t
}

func (t *tracker) created(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state[name].rec.Created = time.Since(t.start)
	t.nCreated++
}

// observe records a workload's admissions, evictions and finish, and
// schedules its finish once it has run for its runtime in an admission.
func (t *tracker) observe(wl *berthv1.Workload, finish chan<- finishing) {
	now := time.Since(t.start)
	admitted := meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadAdmitted)
	finished := meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadFinished)
	t.mu.Lock()
	defer t.mu.Unlock()
	name := plannedName(wl)
	st, ok := t.state[name]
	if !ok || st.rec.WasFinished || st.namespace != wl.Namespace || (st.kind != "") != (name != wl.Name) {
		return
	}
	counts := t.byClass[st.rec.Class]
	switch {
	case finished:
		st.rec.WasFinished, st.rec.Finished = true, now
		if st.admitted {
			counts.running--
		}
		st.admitted = false
		counts.finished++
		t.nFinished++
		if t.nFinished == len(t.state) {
			close(t.done)
		}
	case admitted && (!st.admitted || requeues(wl) != st.requeues):
		if st.admitted {
			// Evicted and admitted again between two events this run saw
			// (a watch that restarted): count the eviction it missed.
			st.rec.Evictions++
			st.rec.Released = append(st.rec.Released, now)
			t.nEvicted++
			counts.running--
		}
		st.admitted = true
		st.requeues = requeues(wl)
		st.epoch++
		counts.running++
		if !st.rec.WasAdmitted {
			st.rec.WasAdmitted, st.rec.Admitted = true, now
			counts.admitted++
			t.nAdmitted++
		} else {
			st.rec.Readmitted = append(st.rec.Readmitted, now)
		}
		if t.endAtAdmission {
			if t.nAdmitted == len(t.state) {
				close(t.done)
			}
			return
		}
		if st.kind != "" {
			return // its pods run for the runtime, and berth finishes it
		}
		f := finishing{name: wl.Name, namespace: wl.Namespace, epoch: st.epoch, requeues: st.requeues}
		time.AfterFunc(st.runtime, func() {
			select {
			case finish <- f:
			case <-t.stopped:
			}
		})
	case !admitted && st.admitted:
		st.admitted = false
		counts.running--
		st.epoch++ // the scheduled finish no longer applies
		st.rec.Evictions++
		st.rec.Released = append(st.rec.Released, now)
		t.nEvicted++
	}
}

// deleted observes a Workload's deletion and reports whether the plan's
// Pod or pod group it stood for must be made again: an evicted Pod is
// deleted, and its Workload with it, and berth deletes an evicted group's
// Workload once its Pods have stopped; whoever made the Pods makes them
// again, as the bench does. (A watch that missed the Finished update of an
// evicted Pod's Workload, the API server being down, sees only this.)
func (t *tracker) deleted(wl *berthv1.Workload) (name string, again bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name = plannedName(wl)
	st, ok := t.state[name]
	if !ok || (st.kind != KindPod && st.kind != KindPodGroup) || st.rec.WasFinished || st.namespace != wl.Namespace ||
		meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadFinished) {
		return "", false
	}
	if st.admitted {
		t.byClass[st.rec.Class].running--
		st.admitted = false
		st.epoch++
		st.rec.Evictions++
		st.rec.Released = append(st.rec.Released, time.Since(t.start))
		t.nEvicted++
	}
	return name, true
}

// release marks the moment held queues are released: from then on the
// workloads wait to be admitted, so their waits are measured from it.
func (t *tracker) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.released = time.Since(t.start)
	for _, st := range t.state {
		st.rec.Created = t.released
	}
}

// admissionRate is admissions per second from the release to the last one.
func (t *tracker) admissionRate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Duration
	n := 0
	for _, st := range t.state {
		if st.rec.WasAdmitted {
			n++
			last = max(last, st.rec.Admitted)
		}
	}
	if n == 0 || last <= t.released {
		return 0
	}
	return float64(n) / (last - t.released).Seconds()
}

func (t *tracker) current(name string, epoch int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state[name]
	return st != nil && st.admitted && st.epoch == epoch
}

func (t *tracker) progress() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%6.1fs  created %d/%d  admitted %d  finished %d  evictions %d",
		time.Since(t.start).Seconds(), t.nCreated, len(t.state), t.nAdmitted, t.nFinished, t.nEvicted)
}

// counts gives each class's chartSeries, in the order of classes.
func (t *tracker) counts(classes []string) []float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]float64, 0, 3*len(classes))
	for _, name := range classes {
		c := t.byClass[name]
		if c == nil {
			c = &classCounts{}
		}
		out = append(out, float64(c.admitted), float64(c.running), float64(c.finished))
	}
	return out
}

// unfinished names up to n workloads not finished, with what the run saw
// of them: where to look when a run does not end.
func (t *tracker) unfinished(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	total := 0
	for _, name := range t.order {
		st := t.state[name]
		if st.rec.WasFinished {
			continue
		}
		total++
		if len(names) < n {
			names = append(names, fmt.Sprintf("%s/%s (%s, admitted now %v, evictions %d)",
				st.namespace, name, st.rec.Class, st.admitted, st.rec.Evictions))
		}
	}
	if total == 0 {
		return "every workload finished"
	}
	return fmt.Sprintf("%d not finished: %s", total, strings.Join(names, ", "))
}

func (t *tracker) records() []Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Record, 0, len(t.order))
	for _, name := range t.order {
		out = append(out, t.state[name].rec)
	}
	return out
}

// chaosProgress is what a fault injector reads of the run: admissions so
// far, and workloads created that hold no quota and have not finished.
func (t *tracker) chaosProgress() chaos.Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	running := 0
	for _, c := range t.byClass {
		running += c.running
	}
	return chaos.Progress{Admitted: t.nAdmitted, Waiting: max(0, t.nCreated-t.nFinished-running)}
}

// plannedName is the name the plan gives the object a Workload stands for:
// a Job's, a pod group's or a Pod's name, or the Workload's own for one the
// bench made.
func plannedName(wl *berthv1.Workload) string {
	if job := wl.Labels[jobs.NameLabel]; job != "" {
		return job
	}
	if group := wl.Labels[berthv1.PodGroupNameLabel]; group != "" {
		return group
	}
	if ref := metav1.GetControllerOf(wl); ref != nil && ref.Kind == "Pod" {
		return ref.Name
	}
	return wl.Name
}
