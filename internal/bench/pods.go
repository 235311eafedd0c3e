package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Pods is plain Pods and pod groups through berth's queue, kube-scheduler
// and the simulator: Singles Pods, and Groups pod groups of GroupSize Pods,
// each Pod of 1 cpu running Duration, created at once (the groups spread
// among the single Pods) against a ClusterQueue of QuotaCPU on Nodes fake
// nodes with room to spare.
type Pods struct {
	Singles, Groups, GroupSize, Nodes int
	QuotaCPU                          int64
	Duration                          time.Duration
}

// PodsAt is 5,000 single Pods and 500 groups of 8 at scale 1, on 100 cpu of
// quota.
func PodsAt(scale float64) Pods {
	return Pods{Singles: max(1, int(math.Round(5000*scale))), Groups: max(1, int(math.Round(500*scale))), GroupSize: 8,
		Nodes: 10, QuotaCPU: 100, Duration: 2 * time.Second}
}

// PodCount is how many Pods the scenario runs.
func (p Pods) PodCount() int { return p.Singles + p.Groups*p.GroupSize }

// LowerBound is the wall time the quota allows at best.
func (p Pods) LowerBound() time.Duration {
	work := float64(p.PodCount()) * p.Duration.Seconds() // cpu-seconds, 1 cpu a pod
	return max(p.Duration, time.Duration(work/float64(p.QuotaCPU)*float64(time.Second)))
}

// units are the scenario's single Pods and groups, the groups spread evenly
// among the Pods.
func (p Pods) units() []unit {
	var out []unit
	s, g := 0, 0
	for s < p.Singles || g < p.Groups {
		if g < p.Groups && (s >= p.Singles || g*p.Singles <= s*p.Groups) {
			out = append(out, unit{Name: "group-" + strconv.Itoa(g), Pods: p.GroupSize})
			g++
		} else {
			out = append(out, unit{Name: "pod-" + strconv.Itoa(s), Pods: 1})
			s++
		}
	}
	return out
}

// PodResults is results.json of pods.
type PodResults struct {
	Scenario          string    `json:"scenario"`
	Scale             float64   `json:"scale"`
	Date              time.Time `json:"date"`
	Version           string    `json:"version"`
	Singles           int       `json:"singles"`
	Groups            int       `json:"groups"`
	GroupSize         int       `json:"groupSize"`
	Pods              int       `json:"pods"`
	Succeeded         int       `json:"succeeded"` // Pods
	WallSeconds       float64   `json:"wallSeconds"`
	LowerBoundSeconds float64   `json:"lowerBoundSeconds"`
	// From a single Pod's creation until it is Running, and from the
	// creation of a group's first Pod until all its Pods are.
	SingleStart Latency `json:"singleStart"`
	GroupStart  Latency `json:"groupStart"`
	SimCosts
}

// PodMarkdown is pods' summary for people.
func PodMarkdown(r PodResults) string {
	var b strings.Builder
	summaryHead(&b, "pods", r.Scale, r.Date, r.Version, r.WallSeconds, r.LowerBoundSeconds)
	fmt.Fprintf(&b, "| Pods succeeded | %d of %d (%d single, %d groups of %d) |\n", r.Succeeded, r.Pods, r.Singles, r.Groups, r.GroupSize)
	fmt.Fprintf(&b, "| single Pod, creation to Running: p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s |\n",
		r.SingleStart.P50, r.SingleStart.P90, r.SingleStart.P99, r.SingleStart.Max)
	fmt.Fprintf(&b, "| group, first Pod's creation to all Running: p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s |\n",
		r.GroupStart.P50, r.GroupStart.P90, r.GroupStart.P99, r.GroupStart.Max)
	r.rows(&b, r.Pods)
	return b.String()
}

// unitLabel names, on each of the scenario's Pods, its single Pod or group.
const unitLabel = "berth.dev/bench-unit"

// RunPods runs the pods scenario with a `berth sim` (binary bin) of its own
// for the nodes, and removes those nodes at the end.
func RunPods(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, p Pods, scale float64, o Options) (*PodResults, error) {
	st, runErr := runOnSim(ctx, cfg, kubeconfig, bin, simRun{Scenario: "pods",
		What: fmt.Sprintf("%d Pods and %d pod groups of %d", p.Singles, p.Groups, p.GroupSize), Nodes: p.Nodes, QuotaCPU: p.QuotaCPU,
		UnitLabel: unitLabel, Units: p.units(),
		Create: func(ctx context.Context, c client.Client, u unit) error {
			if u.Pods == 1 {
				return c.Create(ctx, benchPod(u.Name, u.Name, p))
			}
			for i := range u.Pods {
				pod := benchPod(u.Name+"-"+strconv.Itoa(i), u.Name, p)
				pod.Labels[berthv1.PodGroupNameLabel] = u.Name
				pod.Annotations[berthv1.PodGroupTotalCountAnnotation] = strconv.Itoa(u.Pods)
				if err := c.Create(ctx, pod); err != nil {
					return err
				}
			}
			return nil
		},
	}, scale, o)
	if st == nil {
		return nil, runErr
	}
	w := st.watch
	res := &PodResults{Scenario: "pods", Scale: scale, Date: time.Now().UTC(), Version: version(),
		Singles: p.Singles, Groups: p.Groups, GroupSize: p.GroupSize, Pods: w.pods, Succeeded: len(w.succeeded),
		WallSeconds: w.last.Seconds(), LowerBoundSeconds: p.LowerBound().Seconds(),
		SingleStart: latencyOf(w.startLatencies(func(u string) bool { return w.size[u] == 1 })),
		GroupStart:  latencyOf(w.startLatencies(func(u string) bool { return w.size[u] > 1 })),
		SimCosts:    st.costs()}
	if err := writeFiles(o.Output, res, PodMarkdown(*res), st.chart); err != nil {
		return res, err
	}
	return res, runErr
}

// benchPod is one of the scenario's Pods: on berth's queue, on the bench's
// own fake nodes for the scenario's duration.
func benchPod(name, unit string, p Pods) *corev1.Pod {
	pod := simPod(name, jobsQueue, 1, p.Duration)
	pod.Labels[berthv1.QueueNameLabel], pod.Labels[unitLabel] = "bench", unit
	return pod
}

// simPod is a Pod of the bench's asking cpu cpus, that runs for d on the
// bench's fake nodes; the caller adds its queue.
func simPod(name, namespace string, cpu int64, d time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels:      map[string]string{Label: "true"},
			Annotations: map[string]string{"berth.dev/sim-duration": d.String()}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{simNodeLabel: "true"},
			Tolerations:   []corev1.Toleration{{Key: simNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI)}}}},
		},
	}
}
