package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// E2EJobs is real batch/v1 Jobs through berth's queue, the Job controller,
// kube-scheduler and the simulator: Jobs of Parallelism pods of 1 cpu,
// running Duration, created at once against a ClusterQueue of QuotaCPU on
// Nodes fake nodes with room to spare, so the quota is what they wait for.
type E2EJobs struct {
	Jobs, Parallelism, Nodes int
	QuotaCPU                 int64
	Duration                 time.Duration
}

// E2EJobsAt is 2,000 Jobs of 2 pods at scale 1, on 100 cpu of quota.
func E2EJobsAt(scale float64) E2EJobs {
	return E2EJobs{Jobs: max(2, int(math.Round(2000*scale))), Parallelism: 2, Nodes: 10, QuotaCPU: 100, Duration: 2 * time.Second}
}

// LowerBound is the wall time the quota allows at best.
func (e E2EJobs) LowerBound() time.Duration {
	work := float64(e.Jobs*e.Parallelism) * e.Duration.Seconds() // cpu-seconds, 1 cpu a pod
	return max(e.Duration, time.Duration(work/float64(e.QuotaCPU)*float64(time.Second)))
}

// JobResults is results.json of e2e-jobs.
type JobResults struct {
	Scenario          string    `json:"scenario"`
	Scale             float64   `json:"scale"`
	Date              time.Time `json:"date"`
	Version           string    `json:"version"`
	Jobs              int       `json:"jobs"`
	Pods              int       `json:"pods"`
	Started           int       `json:"started"` // Jobs whose pods all ran
	Succeeded         int       `json:"succeeded"`
	WallSeconds       float64   `json:"wallSeconds"`
	LowerBoundSeconds float64   `json:"lowerBoundSeconds"`
	// Seconds from a Job's creation until all its pods are Running.
	StartP50              float64  `json:"startP50Seconds"`
	StartP90              float64  `json:"startP90Seconds"`
	StartP99              float64  `json:"startP99Seconds"`
	StartMax              float64  `json:"startMaxSeconds"`
	APIServerCPUSeconds   *float64 `json:"apiServerCPUSeconds,omitempty"`
	ControllerPeakRSSMiB  *float64 `json:"controllerPeakRSSMiB,omitempty"`
	ControllerPeakAnonMiB *float64 `json:"controllerPeakAnonMiB,omitempty"`
}

// Percentile is the p-th percentile (0 < p <= 100) of sorted values, by the
// nearest-rank method.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// JobMarkdown is e2e-jobs' summary for people.
func JobMarkdown(r JobResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# berth bench e2e-jobs\n\n")
	fmt.Fprintf(&b, "Scale %g, %s, berth %s.\n\n", r.Scale, r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Version)
	fmt.Fprintf(&b, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| Jobs succeeded | %d of %d (%d pods) |\n", r.Succeeded, r.Jobs, r.Pods)
	fmt.Fprintf(&b, "| wall time | %.1f s |\n| lower bound the quota allows | %.1f s |\n", r.WallSeconds, r.LowerBoundSeconds)
	fmt.Fprintf(&b, "| creation to all pods Running: p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s |\n",
		r.StartP50, r.StartP90, r.StartP99, r.StartMax)
	if r.APIServerCPUSeconds != nil {
		fmt.Fprintf(&b, "| kube-apiserver CPU | %.1f s |\n", *r.APIServerCPUSeconds)
	}
	controllerMemoryRows(&b, r.ControllerPeakRSSMiB, r.ControllerPeakAnonMiB)
	return b.String()
}

const jobsQueue = "bench-jobs"

// RunE2EJobs runs the e2e-jobs scenario with a `berth sim` (binary bin) of
// its own for the nodes, and removes those nodes at the end.
func RunE2EJobs(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, e E2EJobs, scale float64, o Options) (*JobResults, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	api, err := connect(cfg, benchQPS, benchBurst, false)
	if err != nil {
		return nil, err
	}
	kube, c := api.kube, api.c
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	fmt.Fprintln(o.Progress, "removing the objects of the last run")
	if err := Clear(ctx, c); err != nil {
		return nil, err
	}
	if err := clearSim(ctx, kube); err != nil {
		return nil, err
	}
	if err := setUpJobsQueue(ctx, c, e.QuotaCPU); err != nil {
		return nil, err
	}
	sim, err := startSim(bin, kubeconfig, e.Nodes, o.Output)
	if err != nil {
		return nil, err
	}
	defer func() {
		sim.stop()
		fmt.Fprintln(o.Progress, "removing the bench's nodes")
		_ = clearSim(context.Background(), kube)
	}()
	fmt.Fprintf(o.Progress, "waiting for %d nodes\n", e.Nodes)
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-sim.exited:
			return false, fmt.Errorf("the simulator exited; see its log in %s", o.Output)
		default:
		}
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simNodeLabel + "=true"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == e.Nodes, nil
	}); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}

	w := newJobWatch(e)
	podFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(jobsQueue),
		informers.WithTransform(func(o any) (any, error) {
			if p, ok := o.(*corev1.Pod); ok {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace,
					ResourceVersion: p.ResourceVersion, Labels: map[string]string{batchv1.JobNameLabel: p.Labels[batchv1.JobNameLabel]}},
					Status: corev1.PodStatus{Phase: p.Status.Phase}}, nil
			}
			return o, nil
		}))
	if _, err := podFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: w.pod, UpdateFunc: func(_, p any) { w.pod(p) },
	}); err != nil {
		return nil, err
	}
	podFactory.Start(ctx.Done()) // stops when the run's context ends
	podFactory.WaitForCacheSync(ctx.Done())

	cpuBefore := cpuOf(o.APIServerPID)
	mem := watchMemory(ctx, o.ControllerPID)
	fmt.Fprintf(o.Progress, "creating %d Jobs of %d pods\n", e.Jobs, e.Parallelism)
	w.start = time.Now()
	tl := startTimeline(ctx, w.start, layout([]string{"pods of the bench's Jobs"}, "created (admitted)", "running", "succeeded"), w.counts)
	if err := parallel(e.Jobs, 16, func(i int) error {
		name := "job-" + strconv.Itoa(i)
		w.jobCreated(name)
		return c.Create(ctx, benchJob(name, e))
	}); err != nil {
		return nil, fmt.Errorf("creating Jobs: %w", err)
	}
	runErr := await(ctx, w.done, w.progress, o)
	ch := tl.stop(fmt.Sprintf("berth bench e2e-jobs, scale %g", scale))
	res := w.results(e)
	res.Scale, res.Date, res.Version = scale, time.Now().UTC(), version()
	if after := cpuOf(o.APIServerPID); cpuBefore != nil && after != nil {
		cpu := *after - *cpuBefore
		res.APIServerCPUSeconds = &cpu
	}
	res.ControllerPeakRSSMiB, res.ControllerPeakAnonMiB = mem.peaks()
	if err := writeFiles(o.Output, res, JobMarkdown(*res), ch); err != nil {
		return res, err
	}
	return res, runErr
}

func setUpJobsQueue(ctx context.Context, c client.Client, quota int64) error {
	lbl := map[string]string{Label: "true"}
	rf := &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor, Labels: lbl}}
	if err := c.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ResourceFlavor %s: %w", flavor, err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobsQueue, Labels: lbl}},
		&berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: jobsQueue, Labels: lbl}, Spec: berthv1.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: jobsQueue}},
			ResourceGroups: []berthv1.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
				Flavors: []berthv1.FlavorQuotas{{Name: flavor, Resources: []berthv1.ResourceQuota{{
					Name: corev1.ResourceCPU, NominalQuota: *resource.NewQuantity(quota, resource.DecimalSI)}}}}}},
		}},
		&berthv1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: jobsQueue, Labels: lbl},
			Spec: berthv1.LocalQueueSpec{ClusterQueue: jobsQueue}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// benchJob is one of the scenario's Jobs: on berth's queue, its pods on the
// bench's own fake nodes for the scenario's duration.
func benchJob(name string, e E2EJobs) *batchv1.Job {
	n := int32(e.Parallelism)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: jobsQueue,
			Labels: map[string]string{Label: "true", berthv1.QueueNameLabel: "bench"}},
		Spec: batchv1.JobSpec{Parallelism: &n, Completions: &n, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"berth.dev/sim-duration": e.Duration.String()}},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{simNodeLabel: "true"},
				Tolerations:   []corev1.Toleration{{Key: simNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			},
		}},
	}
}

// jobWatch follows the Jobs' pods: when each Job has all its pods Running,
// and when every pod has succeeded.
type jobWatch struct {
	parallelism, pods int
	start             time.Time
	mu                sync.Mutex
	createdAt         map[string]time.Duration
	running           map[string]map[string]bool // job -> pods seen Running
	startedAt         map[string]time.Duration
	succeeded         map[string]bool // pods
	created           map[string]bool // pods seen; Jobs have pods once admitted
	ran               int             // pods seen Running, or done
	last              time.Duration
	done              chan struct{}
}

func newJobWatch(e E2EJobs) *jobWatch {
	return &jobWatch{parallelism: e.Parallelism, pods: e.Jobs * e.Parallelism, createdAt: map[string]time.Duration{},
		running: map[string]map[string]bool{}, startedAt: map[string]time.Duration{}, succeeded: map[string]bool{},
		created: map[string]bool{}, done: make(chan struct{})}
}

func (w *jobWatch) jobCreated(job string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.createdAt[job] = time.Since(w.start)
}

func (w *jobWatch) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Since(w.start)
	job := p.Labels[batchv1.JobNameLabel]
	w.mu.Lock()
	defer w.mu.Unlock()
	w.created[p.Name] = true
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded:
		if w.running[job] == nil {
			w.running[job] = map[string]bool{}
		}
		if !w.running[job][p.Name] {
			w.running[job][p.Name] = true
			w.ran++
		}
		if _, ok := w.startedAt[job]; !ok && len(w.running[job]) == w.parallelism {
			w.startedAt[job] = now
		}
	}
	if p.Status.Phase == corev1.PodSucceeded && !w.succeeded[p.Name] {
		w.succeeded[p.Name] = true
		w.last = now
		if len(w.succeeded) == w.pods {
			close(w.done)
		}
	}
}

// counts are the pods created, running now, and succeeded.
func (w *jobWatch) counts() []float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return []float64{float64(len(w.created)), float64(w.ran - len(w.succeeded)), float64(len(w.succeeded))}
}

func (w *jobWatch) progress() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%6.1fs  Jobs created %d, started %d; pods succeeded %d of %d",
		time.Since(w.start).Seconds(), len(w.createdAt), len(w.startedAt), len(w.succeeded), w.pods)
}

func (w *jobWatch) results(e E2EJobs) *JobResults {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &JobResults{Scenario: "e2e-jobs", Jobs: e.Jobs, Pods: w.pods, Started: len(w.startedAt),
		Succeeded: len(w.succeeded) / max(1, e.Parallelism), WallSeconds: w.last.Seconds(),
		LowerBoundSeconds: e.LowerBound().Seconds()}
	var lat []float64
	for job, at := range w.startedAt {
		if c, ok := w.createdAt[job]; ok {
			lat = append(lat, (at - c).Seconds())
		}
	}
	slices.Sort(lat)
	r.StartP50, r.StartP90, r.StartP99 = Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99)
	if len(lat) > 0 {
		r.StartMax = lat[len(lat)-1]
	}
	return r
}
