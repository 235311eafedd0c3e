package integration

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// A Workload whose pod set allows fewer pods (minCount) is admitted with the
// most that fit beside what runs, and holds only their quota.
func TestPartialAdmissionOfAWorkload(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "10").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("running", env.Namespace).Queue("main").Request("cpu", "7").Obj())
	waitAdmitted(t, env, env.Namespace, "running")

	partial := MakeWorkload("partial", env.Namespace).Queue("main").Count(8).Request("cpu", "1").Obj()
	partial.Spec.PodSets[0].MinCount = ptr(int32(2))
	env.Create(t, partial)
	wl := waitAdmitted(t, env, env.Namespace, "partial")
	psa := wl.Status.Admission.PodSetAssignments[0]
	if psa.Count != 3 || psa.ResourceUsage.Cpu().String() != "3" {
		t.Fatalf("admitted %d pods using %s cpu; want the 3 that fit", psa.Count, psa.ResourceUsage.Cpu())
	}
	waitUsage(t, env, cq, "10")
}

// A Job that may run with fewer pods at once (berth.dev/job-min-parallelism)
// runs with as many as its quota allows and completes; stopped, it gets its
// own parallelism back, and resumed with room for all, runs with all.
func TestPartialAdmissionOfAJob(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "6").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	filler := MakeJob("filler", env.Namespace).Queue("main").Request("cpu", "4").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	env.Create(t, filler)
	fillerWL := waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, filler).Name)

	job := MakeJob("partial", env.Namespace).Queue("main").Parallelism(5).Request("cpu", "1").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	job.Annotations = map[string]string{berthv1.JobMinParallelismAnnotation: "1"}
	env.Create(t, job)
	wl := waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, job).Name)
	if n := wl.Status.Admission.PodSetAssignments[0].Count; n != 2 {
		t.Fatalf("admitted with %d pods; want the 2 that fit beside the filler", n)
	}
	waitJob(t, env, job.Name, func(j *batchv1.Job) error {
		if j.Spec.Parallelism == nil || *j.Spec.Parallelism != 2 || jobs.Suspended(j) || *j.Spec.Completions != 5 {
			return fmt.Errorf("parallelism %d, completions %d, suspended %v; want 2 of 5 running; annotations %v; events: %s",
				ptrValue(j.Spec.Parallelism), ptrValue(j.Spec.Completions), jobs.Suspended(j), j.Annotations, eventsOf(env, j.Name))
		}
		return nil
	})
	waitRunningPods(t, env, job.Name, 2)

	// Stopped: suspended with its own parallelism, its Workload asking for 5.
	berth := berthCLI(t, env, "-n", env.Namespace)
	if out, err := berth("stop", "job", job.Name); err != nil {
		t.Fatalf("berth stop: %v\n%s", err, out)
	}
	waitJob(t, env, job.Name, func(j *batchv1.Job) error {
		if !jobs.Suspended(j) || *j.Spec.Parallelism != 5 || jobs.Injected(j) {
			return fmt.Errorf("suspended %v, parallelism %d, injected %v; want suspended with its own 5", jobs.Suspended(j), *j.Spec.Parallelism, jobs.Injected(j))
		}
		return nil
	})
	if err := env.Client.Delete(ctx, filler, client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	// Its quota comes back once its pod is gone, with its Workload.
	testenv.Eventually(t, wait, func() error {
		if _, err := getWorkload(env, env.Namespace, fillerWL.Name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the filler's Workload is still there (%v)", err)
		}
		return nil
	})
	if out, err := berth("resume", "job", job.Name); err != nil {
		t.Fatalf("berth resume: %v\n%s", err, out)
	}
	wl = waitAdmitted(t, env, env.Namespace, wl.Name)
	if n := wl.Status.Admission.PodSetAssignments[0].Count; n != 5 {
		t.Fatalf("with room for all, admitted with %d pods; want 5", n)
	}
	waitRunningPods(t, env, job.Name, 5)
	if w, _ := getWorkload(env, env.Namespace, wl.Name); w.Spec.PodSets[0].Count != 5 || !workload.IsAdmitted(w) {
		t.Fatalf("workload %s", describe(w))
	}
}

func waitJob(t *testing.T, env *testenv.Env, name string, ok func(*batchv1.Job) error) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, name)
		if err != nil {
			return err
		}
		return ok(j)
	})
}

// waitRunningPods waits until Job name has n pods Running, and no more.
func waitRunningPods(t *testing.T, env *testenv.Env, name string, n int) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{"job-name": name}); err != nil {
			return err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		if running != n {
			return fmt.Errorf("Job %s: %d pods running, want %d", name, running, n)
		}
		return nil
	})
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

// eventsOf lists the reasons and notes of the events about name.
func eventsOf(env *testenv.Env, name string) string {
	var list eventsv1.EventList
	if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return strings.Join(out, "; ")
}
