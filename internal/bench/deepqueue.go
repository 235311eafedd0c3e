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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/sim/nodepool"
)

// DeepQueue is the shape of Kueue's issue #14477 (a 1,300-node cluster,
// fair sharing and topology-aware placement, hundreds of gangs queued per
// ClusterQueue, about 9.6 admissions a minute): ClusterQueues of QuotaCPU
// each in one cohort, Depths[i] gangs queued at once in the i-th, each gang
// PodsPerGang pods of PodCPU running Duration and preferring one rack, on
// Nodes nodes of NodeCPU in racks and blocks. The quota, far less than the
// nodes, is what holds the gangs back: it frees in bursts, a wave of gangs
// at a time, as the gangs admitted together finish together.
type DeepQueue struct {
	Depths                             []int
	PodsPerGang                        int
	PodCPU, QuotaCPU, NodeCPU          int64
	Nodes, NodesPerRack, RacksPerBlock int
	Duration                           time.Duration
}

// DeepQueueAt is 200, 150 and 100 gangs at scale 1 (450 gangs of 8 pods of
// 4 cpu, 3,600 pods), on 1,300 nodes of 8 cpu in racks of 10 and blocks of
// 10 racks, under 3 x 512 cpu: 48 gangs run at once, for 30 s. Scale
// multiplies the gangs and the nodes (at least two racks), not the quota.
func DeepQueueAt(scale float64) DeepQueue {
	times := func(n int) int { return max(1, int(math.Round(float64(n)*scale))) }
	return DeepQueue{Depths: []int{times(200), times(150), times(100)}, PodsPerGang: 8, PodCPU: 4, QuotaCPU: 512,
		NodeCPU: 8, Nodes: max(20, times(1300)), NodesPerRack: 10, RacksPerBlock: 10, Duration: 30 * time.Second}
}

func (s DeepQueue) units() []unit {
	var out []unit
	for q, n := range s.Depths {
		for i := range n {
			out = append(out, unit{Name: fmt.Sprintf("q%d-gang-%d", q, i), Pods: s.PodsPerGang})
		}
	}
	return out
}

func (s DeepQueue) gangs() int {
	n := 0
	for _, d := range s.Depths {
		n += d
	}
	return n
}

// AtOnce is how many gangs the cohort's quota runs at once.
func (s DeepQueue) AtOnce() int {
	return max(1, int(int64(len(s.Depths))*s.QuotaCPU/(int64(s.PodsPerGang)*s.PodCPU)))
}

// LastStartBound is the earliest the last gang can start: when the waves
// before it have run, AtOnce gangs each.
func (s DeepQueue) LastStartBound() time.Duration {
	waves := (s.gangs() + s.AtOnce() - 1) / s.AtOnce()
	return time.Duration(waves-1) * s.Duration
}

// LowerBound is the wall time the quota allows at best: every wave run.
func (s DeepQueue) LowerBound() time.Duration { return s.LastStartBound() + s.Duration }

// DeepQueueResults is results.json of deep-queue.
type DeepQueueResults struct {
	Scenario          string    `json:"scenario"`
	Scale             float64   `json:"scale"`
	Date              time.Time `json:"date"`
	Version           string    `json:"version"`
	Jobs              int       `json:"jobs"`
	Pods              int       `json:"pods"`
	Succeeded         int       `json:"succeeded"` // pods
	WallSeconds       float64   `json:"wallSeconds"`
	LowerBoundSeconds float64   `json:"lowerBoundSeconds"`
	// LastStartSeconds is when the last gang had all its pods Running, from
	// the first creation; LastStartBoundSeconds the earliest it could.
	LastStartSeconds      float64 `json:"lastStartSeconds"`
	LastStartBoundSeconds float64 `json:"lastStartBoundSeconds"`
	// GangsPerMinute is gangs started a minute, first creation to last start.
	GangsPerMinute float64 `json:"gangsPerMinute"`
	// Start is from a gang's creation until all its pods are Running, by
	// ClusterQueue ("0", "1", ...).
	Start map[string]Latency `json:"start"`
	SimCosts
}

// DeepQueueMarkdown is deep-queue's summary for people.
func DeepQueueMarkdown(r DeepQueueResults) string {
	var b strings.Builder
	summaryHead(&b, "deep-queue", r.Scale, r.Date, r.Version, r.WallSeconds, r.LowerBoundSeconds)
	fmt.Fprintf(&b, "| pods succeeded | %d of %d (%d gangs) |\n", r.Succeeded, r.Pods, r.Jobs)
	fmt.Fprintf(&b, "| last gang started (all pods Running) | %.1f s, bound %.1f s (%.2f x) |\n",
		r.LastStartSeconds, r.LastStartBoundSeconds, r.LastStartSeconds/max(r.LastStartBoundSeconds, 1e-9))
	fmt.Fprintf(&b, "| gangs started a minute | %.1f |\n", r.GangsPerMinute)
	for q := range len(r.Start) {
		l := r.Start[strconv.Itoa(q)]
		fmt.Fprintf(&b, "| ClusterQueue %d: creation to all Running, p50 / p90 / p99 / max | %.1f / %.1f / %.1f / %.1f s |\n",
			q, l.P50, l.P90, l.P99, l.Max)
	}
	r.rows(&b, r.Pods)
	return b.String()
}

// deepCohort holds the deep-queue's ClusterQueues.
const deepCohort = "bench-deep"

// RunDeepQueue runs the deep-queue scenario with a `berth sim` (binary bin)
// of its own for the nodes, and removes those nodes at the end.
func RunDeepQueue(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, s DeepQueue, scale float64, o Options) (*DeepQueueResults, error) {
	units := s.units()
	st, runErr := runOnSim(ctx, cfg, kubeconfig, bin, simRun{Scenario: "deep-queue",
		What:  fmt.Sprintf("%v gangs of %d pods of %d cpu in %d ClusterQueues, each preferring one rack", s.Depths, s.PodsPerGang, s.PodCPU, len(s.Depths)),
		Nodes: s.Nodes, UnitLabel: batchv1.JobNameLabel, Units: units,
		SimArgs: []string{"--nodes-per-rack", strconv.Itoa(s.NodesPerRack), "--racks-per-block", strconv.Itoa(s.RacksPerBlock),
			"--node-capacity", fmt.Sprintf("cpu=%d,memory=64Gi,pods=110", s.NodeCPU)},
		SetUp: func(ctx context.Context, c client.Client) error {
			return setUpDeepQueues(ctx, c, len(s.Depths), s.QuotaCPU)
		},
		Create: func(ctx context.Context, c client.Client, u unit) error {
			job := benchJob(u.Name, jobsQueue, int32(u.Pods), s.Duration)
			job.Labels[berthv1.QueueNameLabel] = deepLocalQueue(queueOf(u.Name))
			job.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewQuantity(s.PodCPU, resource.DecimalSI)
			job.Spec.Template.Annotations[integration.PreferredTopologyAnnotation] = nodepool.RackLabel
			return c.Create(ctx, job)
		},
	}, scale, o)
	if st == nil {
		return nil, runErr
	}
	w := st.watch
	res := &DeepQueueResults{Scenario: "deep-queue", Scale: scale, Date: time.Now().UTC(), Version: version(), Jobs: len(units),
		Pods: w.pods, Succeeded: len(w.succeeded), WallSeconds: w.last.Seconds(), LowerBoundSeconds: s.LowerBound().Seconds(),
		LastStartBoundSeconds: s.LastStartBound().Seconds(), Start: map[string]Latency{},
		SimCosts: st.costs()}
	w.mu.Lock()
	for _, at := range w.startedAt {
		res.LastStartSeconds = max(res.LastStartSeconds, at.Seconds())
	}
	w.mu.Unlock()
	if res.LastStartSeconds > 0 {
		res.GangsPerMinute = float64(len(units)) / res.LastStartSeconds * 60
	}
	for q := range s.Depths {
		res.Start[strconv.Itoa(q)] = latencyOf(w.startLatencies(func(u string) bool { return queueOf(u) == q }))
	}
	if err := writeFiles(o.Output, res, DeepQueueMarkdown(*res), st.chart); err != nil {
		return res, err
	}
	return res, runErr
}

// queueOf is the ClusterQueue index of a gang named q<i>-gang-<n>.
func queueOf(gang string) int {
	q, _, _ := strings.Cut(strings.TrimPrefix(gang, "q"), "-")
	i, _ := strconv.Atoi(q)
	return i
}

func deepLocalQueue(q int) string { return "deep-" + strconv.Itoa(q) }

// setUpDeepQueues makes the bench's topology and flavor (as tas'), and n
// ClusterQueues of quota cpu in one cohort, each with a LocalQueue in the
// bench's namespace.
func setUpDeepQueues(ctx context.Context, c client.Client, n int, quota int64) error {
	if err := setUpTASFlavor(ctx, c); err != nil {
		return err
	}
	lbl := map[string]string{Label: "true"}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobsQueue, Labels: lbl}}}
	for q := range n {
		name := jobsQueue + "-deep-" + strconv.Itoa(q)
		objs = append(objs,
			&berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}, Spec: berthv1.ClusterQueueSpec{
				Cohort:            deepCohort,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: jobsQueue}},
				ResourceGroups: []berthv1.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
					Flavors: []berthv1.FlavorQuotas{{Name: tasFlavor, Resources: []berthv1.ResourceQuota{{
						Name: corev1.ResourceCPU, NominalQuota: *resource.NewQuantity(quota, resource.DecimalSI)}}}}}},
			}},
			&berthv1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: deepLocalQueue(q), Namespace: jobsQueue, Labels: lbl},
				Spec: berthv1.LocalQueueSpec{ClusterQueue: name}})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
