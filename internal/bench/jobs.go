package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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
	StartP50 float64 `json:"startP50Seconds"`
	StartP90 float64 `json:"startP90Seconds"`
	StartP99 float64 `json:"startP99Seconds"`
	StartMax float64 `json:"startMaxSeconds"`
	SimCosts
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

// JobMarkdown is e2e-jobs' (and e2e-jobsets') summary for people.
func JobMarkdown(r JobResults) string {
	var b strings.Builder
	summaryHead(&b, r.Scenario, r.Scale, r.Date, r.Version, r.WallSeconds, r.LowerBoundSeconds)
	what := "Jobs"
	if r.Scenario == "e2e-jobsets" {
		what = "JobSets"
	}
	fmt.Fprintf(&b, "| %s succeeded | %d of %d (%d pods) |\n", what, r.Succeeded, r.Jobs, r.Pods)
	fmt.Fprintf(&b, "| creation to all pods Running: p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s |\n",
		r.StartP50, r.StartP90, r.StartP99, r.StartMax)
	r.rows(&b, r.Pods)
	return b.String()
}

const jobsQueue = "bench-jobs"

// RunE2EJobs runs the e2e-jobs scenario with a `berth sim` (binary bin) of
// its own for the nodes, and removes those nodes at the end.
func RunE2EJobs(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, e E2EJobs, scale float64, o Options) (*JobResults, error) {
	return runE2E(ctx, cfg, kubeconfig, bin, e, scale, o, e2eKind{scenario: "e2e-jobs", what: "Jobs", unitLabel: batchv1.JobNameLabel,
		create: func(ctx context.Context, c client.Client, name string) error {
			job := benchJob(name, jobsQueue, int32(e.Parallelism), e.Duration)
			job.Labels[berthv1.QueueNameLabel] = "bench"
			return c.Create(ctx, job)
		}})
}

// e2eKind is what e2e-jobs and e2e-jobsets differ in: the objects made.
type e2eKind struct {
	scenario, what string
	// unitLabel is the pod label that names the object a pod is of.
	unitLabel string
	create    func(ctx context.Context, c client.Client, name string) error
}

// runE2E runs E2EJobs' shape with the objects k makes.
func runE2E(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, e E2EJobs, scale float64, o Options, k e2eKind) (*JobResults, error) {
	units := make([]unit, e.Jobs)
	for i := range units {
		units[i] = unit{Name: "job-" + strconv.Itoa(i), Pods: e.Parallelism}
	}
	st, runErr := runOnSim(ctx, cfg, kubeconfig, bin, simRun{Scenario: k.scenario, What: fmt.Sprintf("%d %s of %d pods", e.Jobs, k.what, e.Parallelism),
		Nodes: e.Nodes, QuotaCPU: e.QuotaCPU, UnitLabel: k.unitLabel, Units: units,
		Create: func(ctx context.Context, c client.Client, u unit) error { return k.create(ctx, c, u.Name) },
	}, scale, o)
	if st == nil {
		return nil, runErr
	}
	w := st.watch
	lat := latencyOf(w.startLatencies(func(string) bool { return true }))
	res := &JobResults{Scenario: k.scenario, Scale: scale, Date: time.Now().UTC(), Version: version(),
		Jobs: e.Jobs, Pods: w.pods, Started: len(w.startedAt), Succeeded: len(w.succeeded) / max(1, e.Parallelism),
		WallSeconds: w.last.Seconds(), LowerBoundSeconds: e.LowerBound().Seconds(),
		StartP50: lat.P50, StartP90: lat.P90, StartP99: lat.P99, StartMax: lat.Max,
		SimCosts: st.costs()}
	if err := writeFiles(o.Output, res, JobMarkdown(*res), st.chart); err != nil {
		return res, err
	}
	return res, runErr
}

func setUpJobsQueue(ctx context.Context, c client.Client, quota int64) error {
	rf := &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor, Labels: map[string]string{Label: "true"}}}
	if err := c.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ResourceFlavor %s: %w", flavor, err)
	}
	return setUpBenchQueue(ctx, c, flavor, quota)
}

// setUpBenchQueue makes the namespace of the runs on the simulator, its
// ClusterQueue of quota cpu in flavor, and its LocalQueue "bench".
func setUpBenchQueue(ctx context.Context, c client.Client, flavor string, quota int64) error {
	lbl := map[string]string{Label: "true"}
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

// benchJob is a Job of the bench's: pods of 1 cpu that run for d on the
// bench's fake nodes, labelled as the bench's; the caller adds its queue.
func benchJob(name, namespace string, pods int32, d time.Duration) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{Label: "true"}},
		Spec: batchv1.JobSpec{Parallelism: &pods, Completions: &pods, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"berth.dev/sim-duration": d.String()}},
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
