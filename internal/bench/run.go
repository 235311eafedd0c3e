package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/bench/plot"
	"github.com/berth-dev/berth/internal/chaos"
	"github.com/berth-dev/berth/internal/controller"
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
	// Processes of a berth instance to measure, by component name
	// (kube-apiserver, berth-controller, ...); empty when not known.
	Processes map[string]int
	// WritesLog is the instance's audit log of writes (berth up
	// --audit-writes), read to count writes by client; "" when not kept.
	WritesLog string
	// WorkerWritesLogs are the worker instances' audit logs of writes, by
	// WorkerCluster name, for multicluster.
	WorkerWritesLogs map[string]string
	// Profile is a directory for CPU profiles of kube-apiserver and berth's
	// controller over the run; "" takes none. ControllerMetrics is the
	// controller's metrics address (host:port), where it serves profiles.
	Profile, ControllerMetrics string
	// Alive, when set, checks that the cluster still answers; a run fails
	// once it has failed for UnreachableAfter (default 30s) without a pass.
	Alive            func(context.Context) error
	UnreachableAfter time.Duration
	// Audit runs the auditor (package audit) alongside. Off by default: its
	// watch is load on the API server, which the runs measure.
	Audit bool
	// Chaos, when set, runs alongside from the first submission until the
	// run ends (berth bench chaos): it injects faults, reading the run's
	// progress, and returns how each went.
	Chaos func(ctx context.Context, start time.Time, progress func() chaos.Progress) []chaos.Result
}

func (o Options) pid(component string) int { return o.Processes[component] }

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
	if o.UnreachableAfter == 0 {
		o.UnreachableAfter = 30 * time.Second
	}
	if err := os.MkdirAll(o.Output, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return nil
}

// await shows progress every o.ProgressEvery until done closes, ctx ends,
// or the cluster stops answering (watchdog).
func await(ctx context.Context, done <-chan struct{}, progress func() string, o Options) error {
	tick := time.NewTicker(o.ProgressEvery)
	defer tick.Stop()
	defer func() { fmt.Fprintln(o.Progress, progress()) }()
	dog := newWatchdog(o)
	for {
		select {
		case <-done:
			return nil
		case <-tick.C:
			fmt.Fprintln(o.Progress, progress())
			if err := dog.check(ctx); err != nil {
				return fmt.Errorf("%w: %s", err, progress())
			}
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out after %s: %s", o.Timeout, progress())
			}
			return ctx.Err()
		}
	}
}

// awaitAll is await for up to o.Timeout, its progress how many of total
// are what so far (count, read under mu).
func awaitAll(ctx context.Context, done <-chan struct{}, began time.Time, mu *sync.Mutex, count func() int, total int, what string, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	return await(ctx, done, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("%6.1fs  %d of %d %s", time.Since(began).Seconds(), count(), total, what)
	}, o)
}

// Run runs a scenario against the cluster and writes its results.
func Run(ctx context.Context, cfg *rest.Config, s Scenario, o Options) (*Results, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	api, err := connect(cfg, benchQPS, benchBurst, false)
	if err != nil {
		return nil, err
	}
	c := api.c
	fmt.Fprintln(o.Progress, "removing the objects of the last run")
	if err := Clear(ctx, c); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "making %d ClusterQueues in %d cohorts\n", s.Cohorts*s.QueuesPerCohort, s.Cohorts)
	if err := setUp(ctx, c, &s); err != nil {
		return nil, err
	}
	if s.hasPods() {
		fmt.Fprintf(o.Progress, "making %d fake nodes for the pods\n", s.Nodes)
		if err := setUpJobs(ctx, c, &s); err != nil {
			return nil, err
		}
	}

	plan := s.Plan()
	t := newTracker(plan)
	t.endAtAdmission = s.Held
	// The bench labels the Workloads it makes; its Jobs' and Pods'
	// Workloads are berth's, unlabelled, and the tracker tells them by
	// namespace and owner.
	watched := labels.SelectorFromSet(labels.Set{Label: "true"})
	if s.hasPods() {
		watched = labels.Everything()
	}
	wlCache, err := cache.New(api.cfg, cache.Options{Scheme: controller.Scheme(),
		ByObject: map[client.Object]cache.ByObject{&berthv1.Workload{}: {Label: watched}}})
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
	byName := map[string]Planned{}
	for _, p := range plan {
		byName[p.Name] = p
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			wl, ok := obj.(*berthv1.Workload)
			if !ok {
				return
			}
			if name, again := t.deleted(wl); again {
				// Ends with ctx, as the run does.
				go remake(ctx, c, byName[name], o.Progress)
			}
		},
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

	auditor, err := startAudit(ctx, api.cfg, o.Audit)
	if err != nil {
		return nil, err
	}
	m := startMeter(ctx, api.cfg, o)
	mem := watchMemory(ctx, o.pid("berth-controller"))
	fmt.Fprintf(o.Progress, "submitting %d workloads over %.1fs\n", len(plan), plan[len(plan)-1].At.Seconds())
	t.start = time.Now()
	var classes []string
	for _, c := range s.Classes {
		classes = append(classes, c.Name)
	}
	panels := append(layout(classes, chartSeries...), plot.Panel{Title: "quota in use", Series: []plot.Series{{Name: "% of all nominal cpu"}}})
	tl := startTimeline(ctx, t.start, panels, func() []float64 { return withQuotaInUse(&s, t.counts(classes)) })
	var faults []chaos.Result
	chaosDone := make(chan struct{})
	chaosCtx, stopChaos := context.WithCancel(ctx)
	defer stopChaos()
	if o.Chaos != nil {
		go func() { defer close(chaosDone); faults = o.Chaos(chaosCtx, t.start, t.chaosProgress) }()
	} else {
		close(chaosDone)
	}
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
	if runErr != nil {
		runErr = fmt.Errorf("%w; %s", runErr, t.unfinished(10))
	}
	if o.Chaos != nil && runErr == nil {
		// A run ends when its work and its faults both have: faults still
		// to come hit the cluster the work left, and the auditor keeps
		// watching, rather than going uninjected.
		select {
		case <-chaosDone:
		default:
			fmt.Fprintf(o.Progress, "the work is done; the faults still planned follow\n")
			select {
			case <-chaosDone:
			case <-waitCtx.Done():
			}
		}
	}
	stopWaiting()
	stopChaos()
	<-chaosDone
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
	res.Cost = m.end(classByName(classes))
	if cpu, ok := res.Cost.CPUSeconds["kube-apiserver"]; ok {
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
	if cpu, ok := res.Cost.CPUSeconds["berth-controller"]; ok {
		res.ControllerCPUSeconds = &cpu
	}
	res.ControllerPeakRSSMiB, res.ControllerPeakAnonMiB = mem.peaks()
	res.Audit = endAudit(auditor, s.Held)
	if o.Chaos != nil {
		res.Faults, res.Recovery = faults, chaos.Summarize(faults)
	}
	if err := writeFiles(o.Output, res, Markdown(res), ch); err != nil {
		return &res, err
	}
	if err := writeQueues(filepath.Join(o.Output, "queues.yaml"), &s); err != nil {
		return &res, err
	}
	return &res, runErr
}

// writeQueues writes the scenario's queues as YAML, for berth whatif to
// replay a trace of the run against (docs/whatif.md).
func writeQueues(path string, s *Scenario) error {
	var b bytes.Buffer
	b.WriteString("# The queues of berth bench " + s.Name + ", as created: berth whatif --config takes them as they are.\n")
	for _, o := range QueueObjects(s) {
		data, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
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
				objs := planned(p)
				t.created(p.Name)
				for _, obj := range objs {
					if err := create(ctx, c, obj); err != nil && ctx.Err() == nil {
						fmt.Fprintf(progress, "creating %T %s/%s: %v\n", obj, obj.GetNamespace(), obj.GetName(), err)
					}
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

// planned is what the bench creates for p, in its queue's namespace, at its
// class's priority: a Workload; or, on the scenario's nodes, a Job of its
// class's cpu in pods of 1 cpu, a Pod of its class's cpu, or a pod group of
// that many Pods of 1 cpu.
func planned(p Planned) []client.Object {
	ns, lbl := queueName(p.Queue), map[string]string{Label: "true"}
	queued := func(o client.Object) client.Object {
		l := o.GetLabels()
		l[berthv1.QueueNameLabel] = "bench"
		l[berthv1.PriorityClassLabel] = priorityClassOf(p.Class)
		return o
	}
	switch p.Class.Kind {
	case KindJob:
		return []client.Object{queued(benchJob(p.Name, ns, int32(p.Class.CPU), p.Class.Runtime))}
	case KindPod:
		return []client.Object{queued(simPod(p.Name, ns, p.Class.CPU, p.Class.Runtime))}
	case KindPodGroup:
		var out []client.Object
		for i := range p.Class.CPU {
			pod := simPod(p.Name+"-"+strconv.FormatInt(i, 10), ns, 1, p.Class.Runtime)
			pod.Labels[berthv1.PodGroupNameLabel] = p.Name
			pod.Annotations[berthv1.PodGroupTotalCountAnnotation] = strconv.FormatInt(p.Class.CPU, 10)
			out = append(out, queued(pod))
		}
		return out
	}
	prio := p.Class.Priority
	return []client.Object{&berthv1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns, Labels: lbl},
		Spec: berthv1.WorkloadSpec{QueueName: "bench", Priority: &prio, PodSets: []berthv1.PodSet{{
			Name: "main", Count: 1,
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(p.Class.CPU, resource.DecimalSI)}}}},
	}}
}

// remake makes an evicted Pod, or an evicted pod group's missing Pods,
// again once those being deleted are gone, as their owner does after berth
// evicted them. A Pod of a group that never started is not deleted by the
// eviction; it stays, and only the others are made.
func remake(ctx context.Context, c client.Client, p Planned, progress io.Writer) {
	objs := planned(p)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, obj := range objs {
			cur := obj.DeepCopyObject().(client.Object)
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur)
			if (err == nil && cur.GetDeletionTimestamp() != nil) || (err != nil && !apierrors.IsNotFound(err)) {
				return false, nil // still going, or cannot tell: retried until the deadline
			}
		}
		return true, nil
	})
	for _, obj := range objs {
		if err == nil {
			if err = create(ctx, c, obj); apierrors.IsAlreadyExists(err) {
				err = nil // it stayed
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(progress, "making %s again after its eviction: %v\n", p.Name, err)
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
// and creates, at once. With 64 finishers a small workload (200 ms) held
// its quota 3.7 s past its runtime in the baseline, waiting for a finisher
// while writes took a few hundred milliseconds; with 256, 0.5 to 0.9 s.
const finishers, creators = 256, 32

// markFinished sets the workload's Finished condition, if it is still in
// the admission the request was made for. It reads the workload from the
// bench's cache, which has seen the admission, and from the API server only
// after a conflict.
func markFinished(ctx context.Context, cached client.Reader, c client.Client, t *tracker, f finishing) error {
	read := cached
	conflicts, failures := 0, 0
	for {
		if !t.current(f.name, f.epoch) {
			return nil // evicted since; it runs again once readmitted
		}
		var wl berthv1.Workload
		err := read.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: f.name}, &wl)
		if err == nil {
			read = c
			if !meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadAdmitted) ||
				meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadFinished) ||
				requeues(&wl) != f.requeues {
				return nil // not in that admission any more; the tracker sees the next one
			}
			workload.SetFinished(&wl, "Succeeded", "berth bench: ran for its class's runtime", time.Now())
			err = c.Status().Update(ctx, &wl)
		}
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err):
			if conflicts++; conflicts > 10 {
				return err
			}
		case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			return err
		default:
			// The API server is restarting or overloaded: a workload left
			// unfinished would hold its quota for the rest of the run.
			failures++
			select {
			case <-ctx.Done():
				return err
			case <-time.After(min(100*time.Millisecond<<min(failures, 5), 2*time.Second)):
			}
		}
	}
}

// create creates a workload (or Job) of the run, trying again while the
// API server is restarting or overloaded: a workload the tracker counts as
// created but that never was would hold the run open. An earlier try that
// did create it, its answer lost, shows as AlreadyExists.
func create(ctx context.Context, c client.Client, obj client.Object) error {
	for failures := 1; ; failures++ {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
		switch {
		case err == nil || (apierrors.IsAlreadyExists(err) && failures > 1):
			return nil
		case apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) ||
			apierrors.IsNotFound(err):
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(100*time.Millisecond<<min(failures, 5), 2*time.Second)):
		}
	}
}

// withQuotaInUse adds to counts (chartSeries of each class) the share of
// the nominal cpu that the running workloads hold, in percent.
func withQuotaInUse(s *Scenario, counts []float64) []float64 {
	var held float64
	for i, c := range s.Classes {
		if running := 3*i + 1; running < len(counts) {
			held += counts[running] * float64(c.CPU)
		}
	}
	nominal := float64(int64(s.Cohorts*s.QueuesPerCohort) * s.NominalCPU)
	return append(counts, 100*held/max(nominal, 1))
}

// chartSeries names what counts gives of each class.
var chartSeries = []string{"admitted", "running", "finished"}
