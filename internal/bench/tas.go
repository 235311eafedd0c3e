package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/sim/nodepool"
)

// TAS is gangs of mixed sizes through topology-aware placement: Jobs of
// Sizes pods (in turn) of 1 cpu running Duration, each preferring one rack,
// on Nodes fake nodes of NodeCPU in racks of NodesPerRack (and blocks of
// RacksPerBlock racks), under a quota of QuotaCPU.
type TAS struct {
	Jobs                               int
	Sizes                              []int
	Nodes, NodesPerRack, RacksPerBlock int
	NodeCPU, QuotaCPU                  int64
	Duration                           time.Duration
}

// TASAt is 400 Jobs of 4, 8, 16 and 32 pods at scale 1 (6,000 pods), on 64
// nodes of 8 cpu in racks of 4 (32 cpu a rack: the largest gang fills one),
// under 256 cpu of quota.
func TASAt(scale float64) TAS {
	return TAS{Jobs: max(4, int(math.Round(400*scale))), Sizes: []int{4, 8, 16, 32},
		Nodes: 64, NodesPerRack: 4, RacksPerBlock: 4, NodeCPU: 8, QuotaCPU: 256, Duration: 2 * time.Second}
}

func (s TAS) units() []unit {
	out := make([]unit, s.Jobs)
	for i := range out {
		out[i] = unit{Name: "gang-" + strconv.Itoa(i), Pods: s.Sizes[i%len(s.Sizes)]}
	}
	return out
}

// PodCount is how many pods the scenario runs.
func (s TAS) PodCount() int {
	n := 0
	for _, u := range s.units() {
		n += u.Pods
	}
	return n
}

// LowerBound is the wall time the quota allows at best.
func (s TAS) LowerBound() time.Duration {
	work := float64(s.PodCount()) * s.Duration.Seconds()
	return max(s.Duration, time.Duration(work/float64(min(s.QuotaCPU, int64(s.Nodes)*s.NodeCPU))*float64(time.Second)))
}

// TASResults is results.json of tas.
type TASResults struct {
	Scenario          string    `json:"scenario"`
	Scale             float64   `json:"scale"`
	Date              time.Time `json:"date"`
	Version           string    `json:"version"`
	Jobs              int       `json:"jobs"`
	Pods              int       `json:"pods"`
	Succeeded         int       `json:"succeeded"` // pods
	WallSeconds       float64   `json:"wallSeconds"`
	LowerBoundSeconds float64   `json:"lowerBoundSeconds"`
	// Start is from a Job's creation until all its pods are Running, by
	// gang size.
	Start map[string]Latency `json:"start"`
	// RacksSpanned counts, by gang size, the gangs whose pods ran in 1, 2,
	// ... racks ("16": {"1": 90, "2": 10}).
	RacksSpanned map[string]map[string]int `json:"racksSpanned"`
	SimCosts
}

// TASMarkdown is tas' summary for people.
func TASMarkdown(r TASResults) string {
	var b strings.Builder
	summaryHead(&b, "tas", r.Scale, r.Date, r.Version, r.WallSeconds, r.LowerBoundSeconds)
	fmt.Fprintf(&b, "| pods succeeded | %d of %d (%d Jobs) |\n", r.Succeeded, r.Pods, r.Jobs)
	for _, size := range slices.SortedFunc(maps.Keys(r.Start), byNumber) {
		l := r.Start[size]
		fmt.Fprintf(&b, "| gangs of %s: creation to all Running, p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s |\n",
			size, l.P50, l.P90, l.P99, l.Max)
		var spans []string
		counts := r.RacksSpanned[size]
		for _, k := range slices.SortedFunc(maps.Keys(counts), byNumber) {
			spans = append(spans, fmt.Sprintf("%d in %s", counts[k], k))
		}
		fmt.Fprintf(&b, "| gangs of %s: racks spanned | %s |\n", size, strings.Join(spans, ", "))
	}
	r.rows(&b, r.Pods)
	return b.String()
}

// byNumber orders numbers written in decimal.
func byNumber(a, b string) int {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x - y
}

const (
	tasTopology = "bench"
	tasFlavor   = "bench-tas"
)

// RunTAS runs the tas scenario with a `berth sim` (binary bin) of its own
// for the nodes, and removes those nodes at the end.
func RunTAS(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, s TAS, scale float64, o Options) (*TASResults, error) {
	units := s.units()
	st, runErr := runOnSim(ctx, cfg, kubeconfig, bin, simRun{Scenario: "tas",
		What:  fmt.Sprintf("%d Jobs of %v pods preferring one rack", s.Jobs, s.Sizes),
		Nodes: s.Nodes, QuotaCPU: s.QuotaCPU, UnitLabel: batchv1.JobNameLabel, Units: units,
		SimArgs: []string{"--nodes-per-rack", strconv.Itoa(s.NodesPerRack), "--racks-per-block", strconv.Itoa(s.RacksPerBlock),
			"--node-capacity", fmt.Sprintf("cpu=%d,memory=64Gi,pods=110", s.NodeCPU)},
		SetUp: func(ctx context.Context, c client.Client) error { return setUpTASQueue(ctx, c, s.QuotaCPU) },
		Create: func(ctx context.Context, c client.Client, u unit) error {
			job := benchJob(u.Name, jobsQueue, int32(u.Pods), s.Duration)
			job.Labels[berthv1.QueueNameLabel] = "bench"
			job.Spec.Template.Annotations[integration.PreferredTopologyAnnotation] = nodepool.RackLabel
			return c.Create(ctx, job)
		},
	}, scale, o)
	if st == nil {
		return nil, runErr
	}
	w := st.watch
	res := &TASResults{Scenario: "tas", Scale: scale, Date: time.Now().UTC(), Version: version(), Jobs: s.Jobs,
		Pods: w.pods, Succeeded: len(w.succeeded), WallSeconds: w.last.Seconds(), LowerBoundSeconds: s.LowerBound().Seconds(),
		Start: map[string]Latency{}, RacksSpanned: map[string]map[string]int{},
		SimCosts: st.costs()}
	for _, size := range s.Sizes {
		res.Start[strconv.Itoa(size)] = latencyOf(w.startLatencies(func(u string) bool { return w.size[u] == size }))
	}
	// Rack of each node, as the simulator named them (racks of
	// NodesPerRack nodes in the order of their numbers).
	w.mu.Lock()
	for u, nodes := range w.nodes {
		racks := map[int]bool{}
		for n := range nodes {
			if i, err := strconv.Atoi(strings.TrimPrefix(n, simNodePrefix)); err == nil {
				racks[i/s.NodesPerRack] = true
			}
		}
		size := strconv.Itoa(w.size[u])
		if res.RacksSpanned[size] == nil {
			res.RacksSpanned[size] = map[string]int{}
		}
		res.RacksSpanned[size][strconv.Itoa(len(racks))]++
	}
	w.mu.Unlock()
	if err := writeFiles(o.Output, res, TASMarkdown(*res), st.chart); err != nil {
		return res, err
	}
	return res, runErr
}

// setUpTASQueue makes the bench's topology and flavor (setUpTASFlavor),
// and the bench's queue on that flavor.
func setUpTASQueue(ctx context.Context, c client.Client, quota int64) error {
	if err := setUpTASFlavor(ctx, c); err != nil {
		return err
	}
	return setUpBenchQueue(ctx, c, tasFlavor, quota)
}

// setUpTASFlavor makes the bench's Topology (block, rack, host) and a
// flavor of the bench's nodes with it.
func setUpTASFlavor(ctx context.Context, c client.Client) error {
	lbl := map[string]string{Label: "true"}
	topo := &berthv1.Topology{ObjectMeta: metav1.ObjectMeta{Name: tasTopology, Labels: lbl},
		Spec: berthv1.TopologySpec{Levels: []berthv1.TopologyLevel{{NodeLabel: nodepool.BlockLabel},
			{NodeLabel: nodepool.RackLabel}, {NodeLabel: nodepool.HostnameLabel}}}}
	name := tasTopology
	rf := &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: tasFlavor, Labels: lbl},
		Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{simNodeLabel: "true"}, TopologyName: &name,
			Tolerations: []corev1.Toleration{{Key: simNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
	for _, o := range []client.Object{topo, rf} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
