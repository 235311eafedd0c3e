package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/podgroups"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
)

// exampleNames are the names the examples give to cluster-wide objects and
// namespaces; the test prefixes them so that it shares nothing with other
// tests, or with whatever else runs in the cluster.
var exampleNames = regexp.MustCompile(`\b(name|namespace|clusterQueue|cohort): (team-a|team-b|shared|default|gpus)\b`)

// The README's examples work as written: the queues apply, and a Job created
// from examples/job.yaml is admitted in team-a's ClusterQueue.
func TestExamplesWork(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	prefix := env.Namespace + "-"
	dir := t.TempDir()
	example := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("../../examples", name))
		if err != nil {
			t.Fatal(err)
		}
		renamed := exampleNames.ReplaceAll(data, []byte("$1: "+prefix+"$2"))
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, renamed, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	kubectl := func(args ...string) {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"kubectl", "--kubeconfig", env.Kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	queues, job := example("queues.yaml"), example("job.yaml")
	kubectl("apply", "-f", queues)
	t.Cleanup(func() {
		_ = exec.Command(bin, "kubectl", "--kubeconfig", env.Kubeconfig, "delete", "-f", queues, "--wait=false").Run()
	})
	kubectl("create", "-f", job)
	teamA := prefix + "team-a"
	testenv.Eventually(t, wait, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace(teamA)); err != nil {
			return err
		}
		for i := range list.Items {
			wl := &list.Items[i]
			if workload.IsAdmitted(wl) && wl.Status.Admission.ClusterQueue == teamA {
				return nil
			}
		}
		return fmt.Errorf("no admitted workload in %s yet (%d workloads)", teamA, len(list.Items))
	})

	// examples/jobset.yaml: admitted whole in team-a's queue, a pod set per
	// replicated Job (before job-partial.yaml takes what is left).
	kubectl("create", "-f", example("jobset.yaml"))
	testenv.Eventually(t, wait, func() error {
		var list jobsetv1.JobSetList
		if err := env.Client.List(ctx, &list, client.InNamespace(teamA)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d JobSets in %s, want 1", len(list.Items), teamA)
		}
		js := &list.Items[0]
		wl, err := getWorkload(env, teamA, jobsets.WorkloadName(js))
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(wl) || len(wl.Status.Admission.PodSetAssignments) != 2 {
			return fmt.Errorf("JobSet %s: %s", js.Name, describe(wl))
		}
		if jobsets.Suspended(js) {
			return fmt.Errorf("JobSet %s admitted but still suspended", js.Name)
		}
		return nil
	})

	// examples/job-partial.yaml: 12 pods asked, fewer admitted, at least 2,
	// and the Job runs that many at once.
	kubectl("create", "-f", example("job-partial.yaml"))
	testenv.Eventually(t, wait, func() error {
		var list batchv1.JobList
		if err := env.Client.List(ctx, &list, client.InNamespace(teamA)); err != nil {
			return err
		}
		for _, j := range list.Items {
			if !strings.HasPrefix(j.Name, "partial-") {
				continue
			}
			wl, err := getWorkload(env, teamA, jobs.WorkloadName(&j))
			if err != nil {
				return err
			}
			if !workload.IsAdmitted(wl) {
				return fmt.Errorf("Job %s not admitted: %s", j.Name, describe(wl))
			}
			n := wl.Status.Admission.PodSetAssignments[0].Count
			if n < 2 || n >= 12 || j.Spec.Parallelism == nil || *j.Spec.Parallelism != n {
				return fmt.Errorf("Job %s admitted with %d pods, running %v at once; want 2 to 11, and as many", j.Name, n, j.Spec.Parallelism)
			}
			return nil
		}
		return fmt.Errorf("no partial- Job in %s", teamA)
	})

	// examples/deployment.yaml: its pods are queued one by one, each with a
	// Workload in team-a's LocalQueue.
	kubectl("apply", "-f", example("deployment.yaml"))
	testenv.Eventually(t, wait, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(teamA), client.MatchingLabels{"app": "web"}); err != nil {
			return err
		}
		if len(list.Items) != 2 {
			return fmt.Errorf("%d pods of Deployment web, want 2", len(list.Items))
		}
		for _, p := range list.Items {
			wl, err := getWorkload(env, teamA, pods.WorkloadName(&p))
			if err != nil {
				return fmt.Errorf("pod %s: %w", p.Name, err)
			}
			if wl.Spec.QueueName != "jobs" {
				return fmt.Errorf("pod %s queued in %q", p.Name, wl.Spec.QueueName)
			}
		}
		return nil
	})

	// examples/leaderworkerset.yaml: its group, the leader and 2 workers,
	// is one Workload in team-a's LocalQueue, queued whole.
	kubectl("apply", "-f", example("leaderworkerset.yaml"))
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, teamA, podgroups.WorkloadName("lws-serve-0"))
		if err != nil {
			return err
		}
		var n int32
		for _, ps := range wl.Spec.PodSets {
			n += ps.Count
		}
		if wl.Spec.QueueName != "jobs" || n != 3 || len(wl.Spec.PodSets) != 2 {
			return fmt.Errorf("LeaderWorkerSet serve: Workload in %q for %d pods in %d pod sets; want it in jobs for 3, the leader's and the workers'",
				wl.Spec.QueueName, n, len(wl.Spec.PodSets))
		}
		return nil
	})

	// examples/statefulset.yaml: its three pods are one Workload in
	// team-a's LocalQueue, queued whole (the Jobs above may hold the quota).
	kubectl("apply", "-f", example("statefulset.yaml"))
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, teamA, podgroups.WorkloadName(pods.StatefulSetGroup("cache")))
		if err != nil {
			return err
		}
		if wl.Spec.QueueName != "jobs" || wl.Spec.PodSets[0].Count != 3 ||
			!workload.IsAdmitted(wl) && !strings.Contains(describe(wl), "needs 1500m cpu") {
			return fmt.Errorf("StatefulSet cache: Workload in %q for %d pods, %s; want it in jobs for 3 pods, admitted or waiting for 1500m cpu",
				wl.Spec.QueueName, wl.Spec.PodSets[0].Count, describe(wl))
		}
		return nil
	})

	// examples/dra.yaml (TestMain maps gpu.example.com to example.com/gpu,
	// as its comment tells berth up to): train's 4 GPUs and evaluate's 1
	// are more than the quota of 4, so one of them waits for the other.
	kubectl("apply", "-f", example("dra.yaml"))
	gpus := prefix + "gpus"
	var names []string
	for _, name := range []string{"train", "evaluate"} {
		var job batchv1.Job
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: gpus, Name: name}, &job); err != nil {
			t.Fatal(err)
		}
		names = append(names, jobWorkload(t, env, &job).Name)
	}
	testenv.Eventually(t, wait, func() error {
		var admitted, waiting []string
		for _, name := range names {
			wl, err := getWorkload(env, gpus, name)
			if err != nil {
				return err
			}
			switch {
			case workload.IsAdmitted(wl):
				admitted = append(admitted, name)
			case strings.Contains(describe(wl), "example.com/gpu"):
				waiting = append(waiting, name)
			}
		}
		if len(admitted) != 1 || len(waiting) != 1 {
			return fmt.Errorf("admitted %v, waiting for GPUs %v; want one of each", admitted, waiting)
		}
		return nil
	})
}
