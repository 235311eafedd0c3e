package raydashboard

import (
	"context"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/berth-dev/berth/internal/sim/nodepool"
)

func TestAJobRunsForItsDurationThenEndsAsItsExitCodeSays(t *testing.T) {
	made := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		after       time.Duration
		want        rayv1.JobStatus
		ended       bool
	}{
		{"no duration runs on", nil, 24 * time.Hour, rayv1.JobStatusRunning, false},
		{"before its end", map[string]string{DurationAnnotation: "30s"}, 29 * time.Second, rayv1.JobStatusRunning, false},
		{"at its end", map[string]string{DurationAnnotation: "30s"}, 30 * time.Second, rayv1.JobStatusSucceeded, true},
		{"failing", map[string]string{DurationAnnotation: "30s", ExitCodeAnnotation: "3"}, time.Minute, rayv1.JobStatusFailed, true},
		{"exit code 0", map[string]string{DurationAnnotation: "1s", ExitCodeAnnotation: "0"}, time.Minute, rayv1.JobStatusSucceeded, true},
		{"a duration that cannot be read", map[string]string{DurationAnnotation: "soon"}, 0, rayv1.JobStatusFailed, true},
		{"an exit code that cannot be read", map[string]string{DurationAnnotation: "1s", ExitCodeAnnotation: "x"}, 0, rayv1.JobStatusFailed, true},
	} {
		info := JobInfo("job-1", tc.annotations, made, made.Add(tc.after))
		if info.JobStatus != tc.want || info.JobId != "job-1" || (info.EndTime != 0) != tc.ended || info.StartTime != uint64(made.UnixMilli()) {
			t.Errorf("%s: got %+v, want %s (ended %v)", tc.name, info, tc.want, tc.ended)
		}
		if info.Message == "" {
			t.Errorf("%s: says nothing", tc.name)
		}
	}
	info := JobInfo("j", map[string]string{DurationAnnotation: "30s"}, made, made.Add(time.Hour))
	if want := uint64(made.Add(30 * time.Second).UnixMilli()); info.EndTime != want {
		t.Errorf("ended at %d, want %d (its start and duration)", info.EndTime, want)
	}
}

// A head on a simulated node, or no head at all, is answered by the
// simulation; a head on any other node by KubeRay's own client.
func TestTheSimulationAnswersForAHeadOnASimulatedNode(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	node := func(name string, sim bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if sim {
			n.Labels[nodepool.OwnerLabel] = "true"
		}
		return n
	}
	head := func(cluster, nodeName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-head", Namespace: "team",
			Labels: map[string]string{"ray.io/cluster": cluster, "ray.io/node-type": "head"}}, Spec: corev1.PodSpec{NodeName: nodeName}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node("sim-0", true), node("real-0", false),
		head("a", "sim-0"), head("b", "real-0"), head("c", "")).Build()
	// A pod's Serve proxy is asked where the pod runs: nowhere yet is as
	// good as simulated.
	for nodeName, want := range map[string]bool{"sim-0": true, "real-0": false, "": true} {
		if got, err := onSimulatedNode(context.Background(), c, head("p", nodeName)); err != nil || got != want {
			t.Errorf("a pod on %q: simulated %v (%v), want %v", nodeName, got, err, want)
		}
	}
	for cluster, want := range map[string]bool{"a": true, "b": false, "c": true, "gone": true} {
		rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: "team"}}
		got, err := headSimulated(context.Background(), c, rc)
		if err != nil || got != want {
			t.Errorf("cluster %s: simulated %v (%v), want %v", cluster, got, err, want)
		}
	}
}
