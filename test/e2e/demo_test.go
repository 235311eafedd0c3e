package e2e

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/controlplane"
)

// `berth up --demo`, the README's first command: fake nodes, the example
// queues, the demo's Jobs admitted through them and run to completion on the
// simulator, a view of each queue, and the control plane left running.
func TestUpDemo(t *testing.T) {
	t.Parallel()
	inst := newInstance(t, "demo")
	all, stdout, code := inst.runSplit(t, "up", "--demo", "--detach")
	if code != 0 {
		t.Fatalf("berth up --demo --detach: exit %d\n%s", code, all)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	kubeconfig := controlplane.Layout{Dir: inst.dir}.Kubeconfig()
	if last := lines[len(lines)-1]; last != kubeconfig {
		t.Fatalf("last line of stdout is %q, want the kubeconfig path %q\n%s", last, kubeconfig, stdout)
	}
	for _, want := range []string{"QUEUE", "team-a", "team-b", "all 8 Jobs finished", "keeps running"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// The last view shows every Job finished, in its queue.
	view := stdout[strings.LastIndex(stdout, "QUEUE"):]
	for _, row := range [][]string{{"team-a", "0", "0", "5 of 5"}, {"team-b", "0", "0", "3 of 3"}} {
		if !containsFields(view, row) {
			t.Errorf("last view has no row %v:\n%s", row, view)
		}
	}

	// What it said is what the cluster holds, and it is still up.
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	for ns, n := range map[string]int{"team-a": 5, "team-b": 3} {
		jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "berth.dev/demo=true"})
		if err != nil {
			t.Fatal(err)
		}
		complete := 0
		for _, j := range jobs.Items {
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					complete++
				}
			}
		}
		if len(jobs.Items) != n || complete != n {
			t.Errorf("%s: %d demo Jobs, %d complete; want %d of each", ns, len(jobs.Items), complete, n)
		}
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "berth.dev/sim-node=true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 4 {
		t.Errorf("%d simulated nodes, want the demo's 4", len(nodes.Items))
	}
}

// containsFields reports whether some line of s has exactly these
// whitespace-separated fields ("5 of 5" counts as three).
func containsFields(s string, fields []string) bool {
	want := strings.Fields(strings.Join(fields, " "))
	for _, line := range strings.Split(s, "\n") {
		got := strings.Fields(line)
		if len(got) >= len(want) && strings.Join(got[:len(want)], " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}
