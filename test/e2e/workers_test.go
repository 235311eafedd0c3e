package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/testenv"
)

// `berth up --workers 2 --with jobset` starts a manager and two workers
// wired together, each running JobSet's controller: with the example queues
// applied, the example Job and JobSet submitted to the manager run on a
// worker and complete, the manager shows it; `berth down` of the manager
// stops the workers too.
func TestUpWithWorkers(t *testing.T) {
	t.Parallel()
	inst := newInstance(t, "fleet")
	kubeconfig := inst.up(t, "--workers", "2", "--nodes", "2", "--with", "jobset")
	kubectl := func(kc string, args ...string) string {
		t.Helper()
		out, err := exec.Command(inst.bin, append([]string{"kubectl", "--kubeconfig", kc}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	workerDirs := []string{filepath.Join(inst.dir, "workers", "worker1"), filepath.Join(inst.dir, "workers", "worker2")}
	kubectl(kubeconfig, "apply", "-f", "../../examples/multicluster-manager.yaml")
	for _, dir := range workerDirs {
		kubectl(controlplane.Layout{Dir: dir}.Kubeconfig(), "apply", "-f", "../../examples/multicluster-worker.yaml")
	}
	kubectl(kubeconfig, "create", "-f", "../../examples/job.yaml")
	kubectl(kubeconfig, "create", "-f", "../../examples/jobset.yaml")

	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, func() error {
		jobs, err := kube.BatchV1().Jobs("team-a").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(jobs.Items) != 1 {
			return fmt.Errorf("%d Jobs in team-a on the manager", len(jobs.Items))
		}
		for _, c := range jobs.Items[0].Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("the manager's Job is not Complete: %+v", jobs.Items[0].Status)
	})
	testenv.Eventually(t, 2*time.Minute, func() error {
		out := kubectl(kubeconfig, "get", "jobsets", "-n", "team-a",
			"-o", `jsonpath={range .items[*]}{.spec.managedBy} {.status.terminalState}{"\n"}{end}`)
		if strings.TrimSpace(out) != "berth.dev/multicluster Completed" {
			return fmt.Errorf("the manager's JobSets (managedBy, terminal state): %q; want one dispatched and Completed", out)
		}
		return nil
	})
	out, code := inst.run(t, "cluster", "list")
	if code != 0 || strings.Count(out, "Connected") != 2 {
		t.Errorf("berth cluster list: exit %d\n%s", code, out)
	}

	var workerPIDs []controlplane.ProcessRef
	for _, dir := range workerDirs {
		st, err := controlplane.ReadState(controlplane.Layout{Dir: dir})
		if err != nil || st == nil {
			t.Fatalf("worker state in %s: %v", dir, err)
		}
		workerPIDs = append(workerPIDs, st.Supervisor)
		for _, c := range st.Components {
			workerPIDs = append(workerPIDs, c.Process)
		}
	}
	inst.down(t)
	for _, p := range workerPIDs {
		if p.Alive() {
			t.Errorf("worker process %d still alive after the manager's berth down", p.PID)
		}
	}
}
