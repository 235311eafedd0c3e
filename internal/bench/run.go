package bench

import (
	"context"
	"encoding/json"
	"errors"

	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/chart"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/procstat"
	"github.com/berth-dev/berth/internal/workload"
)

// Label marks every object a run makes, so the next run can clear them.
const Label = "berth.dev/bench"

// Options tunes Run.
type Options struct {
	Scale    float64
	Output   string    // directory for results.json, summary.md, chart.png and chart.csv
	Progress io.Writer // a line every ProgressEvery; default io.Discard
	// ProgressEvery defaults to 2s; Timeout (for all workloads to finish)
	// to an hour.
	ProgressEvery, Timeout time.Duration
	// Processes of a berth instance to measure; 0 when not known.
	APIServerPID, ControllerPID int
}

// prepare fills in the defaults and makes the output directory.
func (o *Options) prepare() error {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 2 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = time.Hour
	}
	if err := os.MkdirAll(o.Output, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return nil
}

// await shows progress every o.ProgressEvery until done closes or ctx ends.
func await(ctx context.Context, done <-chan struct{}, progress func() string, o Options) error {
	tick := time.NewTicker(o.ProgressEvery)
	defer tick.Stop()
	defer func() { fmt.Fprintln(o.Progress, progress()) }()
	for {
		select {
		case <-done:
			return nil
		case <-tick.C:
			fmt.Fprintln(o.Progress, progress())
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out after %s: %s", o.Timeout, progress())
			}
			return ctx.Err()
		}
	}
}

// Run runs a scenario against the cluster and writes its results.
func Run(ctx context.Context, cfg *rest.Config, s Scenario, o Options) (*Results, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(o.Progress, "removing the objects of the last run")
	if err := Clear(ctx, c); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "making %d ClusterQueues in %d cohorts\n", s.Cohorts*s.QueuesPerCohort, s.Cohorts)
	if err := setUp(ctx, c, &s); err != nil {
		return nil, err
	}

	plan := s.Plan()
	t := newTracker(plan)
	t.endAtAdmission = s.Held
	wlCache, err := cache.New(cfg, cache.Options{Scheme: controller.Scheme(),
		ByObject: map[client.Object]cache.ByObject{&berthv1.Workload{}: {Label: labels.SelectorFromSet(labels.Set{Label: "true"})}}})
	if err != nil {
		return nil, err
	}
	inf, err := wlCache.GetInformer(ctx, &berthv1.Workload{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.stopped = ctx.Done()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); _ = wlCache.Start(ctx) }()
	if !wlCache.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("watching workloads: %w", ctx.Err())
	}
	finish := make(chan finishing, 1024)
	observe := func(obj any) {
		if wl, ok := obj.(*berthv1.Workload); ok {
			t.observe(wl, finish)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return nil, err
	}
	// Enough finishers that finishing never holds quota longer than the
	// runtime: each finish is a write to a busy API server.
	for range finishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case f := <-finish:
					if err := markFinished(ctx, wlCache, c, t, f); err != nil && ctx.Err() == nil {
						fmt.Fprintf(o.Progress, "marking %s finished: %v\n", f.name, err)
					}
				}
			}
		}()
	}

	cpuBefore := cpuOf(o.APIServerPID)
	mem := watchMemory(ctx, o.ControllerPID)
	fmt.Fprintf(o.Progress, "submitting %d workloads over %.1fs\n", len(plan), plan[len(plan)-1].At.Seconds())
	t.start = time.Now()
	var classes []string
	for _, c := range s.Classes {
		classes = append(classes, c.Name)
	}
	tl := startTimeline(ctx, t.start, layout(classes, chartSeries...), func() []float64 { return t.counts(classes) })
	var raw float64
	if s.Held {
		submit(ctx, c, plan, t, o.Progress)
		fmt.Fprintf(o.Progress, "measuring the API server's raw status-write rate\n")
		if raw, err = rawWriteRate(ctx, c, min(len(plan), 2000)); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Progress, "%.0f status writes per second; releasing the queues\n", raw)
		t.release()
		if err := release(ctx, c, &s); err != nil {
			return nil, err
		}
	} else {
		wg.Add(1)
		go func() { defer wg.Done(); submit(ctx, c, plan, t, o.Progress) }()
	}

	waitCtx, stopWaiting := context.WithTimeout(ctx, o.Timeout)
	runErr := await(waitCtx, t.done, t.progress, o)
	stopWaiting()
	cancel()
	ch := tl.stop(fmt.Sprintf("berth bench %s, scale %g: workloads per class", s.Name, o.Scale))

	res := Summarize(&s, o.Scale, t.records(), s.LowerBound(plan))
	res.Date, res.Version = time.Now().UTC(), version()
	if s.Held {
		res.RawStatusWritesPerSecond = raw
		res.AdmissionsPerSecond = t.admissionRate()
		if raw > 0 {
			res.AdmissionsOverRawWrites = res.AdmissionsPerSecond / raw
		}
	}
	if after := cpuOf(o.APIServerPID); cpuBefore != nil && after != nil {
		cpu := *after - *cpuBefore
		res.APIServerCPUSeconds = &cpu
		// Per workload carried through: finished, or admitted when the
		// scenario ends at admission.
		done := res.Finished
		if s.Held {
			done = 0
			for _, c := range res.Classes {
				done += c.Count
			}
		}
		if done > 0 {
			ms := 1000 * cpu / float64(done)
			res.APIServerCPUMsPerWorkload = &ms
		}
	}
	res.ControllerPeakRSSMiB, res.ControllerPeakAnonMiB = mem.peaks()
	if err := writeFiles(o.Output, res, Markdown(res), ch); err != nil {
		return &res, err
	}
	return &res, runErr
}

// memoryWatch follows a process's memory: the kernel's record of its peak
// RSS, and the peak of the private (anonymous) part of it, sampled. The rest
// of RSS is the pages of the berth binary, which every component of a berth
// instance maps and shares.
type memoryWatch struct {
	pid  int
	anon atomic.Int64 // KiB
}

// watchMemory samples pid's memory until ctx ends; pid 0 watches nothing.
func watchMemory(ctx context.Context, pid int) *memoryWatch {
	m := &memoryWatch{pid: pid}
	if pid > 0 {
		go sample(ctx, pid, &m.anon)
	}
	return m
}

// peaks are the peak RSS and peak private memory in MiB, when known.
func (m *memoryWatch) peaks() (rss, anon *float64) {
	if m.pid <= 0 {
		return nil, nil
	}
	if kb, err := procstat.StatusKB(m.pid, "VmHWM"); err == nil {
		v := float64(kb) / 1024
		rss = &v
	}
	if kb := m.anon.Load(); kb > 0 {
		v := float64(kb) / 1024
		anon = &v
	}
	return rss, anon
}

func cpuOf(pid int) *float64 {
	if pid <= 0 {
		return nil
	}
	v, err := procstat.CPUSeconds(pid)
	if err != nil {
		return nil
	}
	return &v
}

// writeFiles writes results.json, summary.md, chart.png and chart.csv.
func writeFiles(dir string, results any, summary string, ch chart.Chart) error {
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(summary), 0o644); err != nil {
		return err
	}
	return chart.WriteFiles(filepath.Join(dir, "chart"), ch)
}

// version is the commit berth was built from, when the build knows it.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown (built without VCS stamping)"
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if dirty {
		rev += "+"
	}
	return rev
}

// Clear deletes the last run's namespaces (with their workloads) and
// ClusterQueues, and waits until they are gone.
func Clear(ctx context.Context, c client.Client) error {
	sel := client.MatchingLabels{Label: "true"}
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss, sel); err != nil {
		return err
	}
	for _, ns := range nss.Items {
		if err := c.Delete(ctx, &ns); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
	}
	if err := c.DeleteAllOf(ctx, &berthv1.ClusterQueue{}, sel); err != nil {
		return fmt.Errorf("deleting ClusterQueues: %w", err)
	}
	var left int
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var cqs berthv1.ClusterQueueList
		if err := c.List(ctx, &cqs, sel); err != nil {
			return false, err
		}
		if err := c.List(ctx, &nss, sel); err != nil {
			return false, err
		}
		left = len(cqs.Items) + len(nss.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the last run's objects are not gone (%d left): %w", left, err)
	}
	return nil
}

const flavor = "bench"

func queueName(q int) string { return fmt.Sprintf("bench-q%d", q) }

// setUp makes the scenario's flavor, namespaces, ClusterQueues and
// LocalQueues, and waits until every ClusterQueue is active.
func setUp(ctx context.Context, c client.Client, s *Scenario) error {
	lbl := map[string]string{Label: "true"}
	rf := &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor, Labels: lbl}}
	if err := c.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ResourceFlavor %s: %w", flavor, err)
	}
	for q := range s.Cohorts * s.QueuesPerCohort {
		name := queueName(q)
		borrowing := resource.NewQuantity(s.BorrowingCPU, resource.DecimalSI)
		cq := &berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
			Spec: berthv1.ClusterQueueSpec{
				Cohort:            fmt.Sprintf("bench-c%d", q/s.QueuesPerCohort),
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: name}},
				ResourceGroups: []berthv1.ResourceGroup{{
					CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
					Flavors: []berthv1.FlavorQuotas{{Name: flavor, Resources: []berthv1.ResourceQuota{{
						Name: corev1.ResourceCPU, NominalQuota: *resource.NewQuantity(s.NominalCPU, resource.DecimalSI),
						BorrowingLimit: borrowing}}}},
				}},
			}}
		if s.Held {
			cq.Spec.StopPolicy = berthv1.Hold
		}
		if s.Preemption {
			cq.Spec.Preemption = &berthv1.ClusterQueuePreemption{
				ReclaimWithinCohort: berthv1.PreemptionAny, WithinClusterQueue: berthv1.PreemptionLowerPriority}
		}
		objs := []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}},
			cq,
			&berthv1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: name, Labels: lbl},
				Spec: berthv1.LocalQueueSpec{ClusterQueue: name}},
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var cqs berthv1.ClusterQueueList
		if err := c.List(ctx, &cqs, client.MatchingLabels(lbl)); err != nil {
			return false, err
		}
		ready := 0
		for _, cq := range cqs.Items {
			// A held queue is inactive, but has said so.
			if c := meta.FindStatusCondition(cq.Status.Conditions, "Active"); c != nil && (c.Status == metav1.ConditionTrue || s.Held) {
				ready++
			}
		}
		return ready == s.Cohorts*s.QueuesPerCohort, nil
	})
}

// submit creates the plan's workloads on schedule, creators at a time.
func submit(ctx context.Context, c client.Client, plan []Planned, t *tracker, progress io.Writer) {
	work := make(chan Planned)
	var wg sync.WaitGroup
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				prio := p.Class.Priority
				wl := &berthv1.Workload{
					ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: queueName(p.Queue), Labels: map[string]string{Label: "true"}},
					Spec: berthv1.WorkloadSpec{QueueName: "bench", Priority: &prio, PodSets: []berthv1.PodSet{{
						Name: "main", Count: 1,
						Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(p.Class.CPU, resource.DecimalSI)}}}},
				}
				t.created(p.Name)
				if err := c.Create(ctx, wl); err != nil && ctx.Err() == nil {
					fmt.Fprintf(progress, "creating workload %s/%s: %v\n", wl.Namespace, wl.Name, err)
				}
			}
		}()
	}
	defer wg.Wait()
	defer close(work)
	for _, p := range plan {
		if d := time.Until(t.start.Add(p.At)); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d): // pacing the arrivals, as the scenario says
			}
		}
		select {
		case <-ctx.Done():
			return
		case work <- p:
		}
	}
}

// finishing asks to mark a workload finished, for the admission it was
// scheduled in.
type finishing struct {
	name, namespace string
	epoch           int
	requeues        int32 // the workload's evictions before this admission
}

// finishers and creators are how many workloads the bench marks finished,
// and creates, at once.
const finishers, creators = 64, 32

// markFinished sets the workload's Finished condition, if it is still in
// the admission the request was made for. It reads the workload from the
// bench's cache, which has seen the admission, and from the API server only
// after a conflict.
func markFinished(ctx context.Context, cached client.Reader, c client.Client, t *tracker, f finishing) error {
	read := cached
	for attempt := 0; ; attempt++ {
		if !t.current(f.name, f.epoch) {
			return nil // evicted since; it runs again once readmitted
		}
		var wl berthv1.Workload
		if err := read.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: f.name}, &wl); err != nil {
			return err
		}
		read = c
		if !meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadAdmitted) ||
			meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadFinished) ||
			requeues(&wl) != f.requeues {
			return nil // not in that admission any more; the tracker sees the next one
		}
		workload.SetFinished(&wl, "Succeeded", "berth bench: ran for its class's runtime", time.Now())
		err := c.Status().Update(ctx, &wl)
		if err == nil || !apierrors.IsConflict(err) || attempt == 10 {
			return err
		}
	}
}

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
	rec      Record
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
		t.state[p.Name] = &tracked{rec: Record{Name: p.Name, Class: p.Class.Name}, runtime: p.Class.Runtime}
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
	st, ok := t.state[wl.Name]
	if !ok || st.rec.WasFinished {
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
		}
		if t.endAtAdmission {
			if t.nAdmitted == len(t.state) {
				close(t.done)
			}
			return
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
		t.nEvicted++
	}
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

// chartSeries names what counts gives of each class.
var chartSeries = []string{"admitted", "running", "finished"}

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

func (t *tracker) records() []Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Record, 0, len(t.order))
	for _, name := range t.order {
		out = append(out, t.state[name].rec)
	}
	return out
}

// rawWriteRate is how many Workload status writes per second the API server
// takes from 32 writers doing nothing else: n merge patches spread over 100
// Workloads that belong to no queue, so no controller acts on them.
func rawWriteRate(ctx context.Context, c client.Client, n int) (float64, error) {
	const ns, objects = "bench-raw", 100
	lbl := map[string]string{Label: "true"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: lbl}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	wls := make([]*berthv1.Workload, objects)
	for i := range wls {
		wls[i] = &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i), Namespace: ns, Labels: lbl},
			Spec: berthv1.WorkloadSpec{PodSets: []berthv1.PodSet{{Name: "main", Count: 1,
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
		if err := c.Create(ctx, wls[i]); err != nil {
			return 0, fmt.Errorf("creating probe workload %s: %w", wls[i].Name, err)
		}
	}
	work := make(chan int)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	began := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"BenchProbe","status":"True","reason":"Probe","message":"write %d","lastTransitionTime":%q}]}}`,
					i, time.Now().UTC().Format(time.RFC3339))
				if err := c.Status().Patch(ctx, wls[i%objects], client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					errs <- fmt.Errorf("probe write %d: %w", i, err)
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return 0, err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(n) / time.Since(began).Seconds(), nil
}

// release lets held queues admit.
func release(ctx context.Context, c client.Client, s *Scenario) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"stopPolicy":"None"}}`))
	for q := range s.Cohorts * s.QueuesPerCohort {
		cq := &berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: queueName(q)}}
		if err := c.Patch(ctx, cq, patch); err != nil {
			return fmt.Errorf("releasing ClusterQueue %s: %w", cq.Name, err)
		}
	}
	return nil
}
