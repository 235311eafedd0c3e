package hostile

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// jobSetsJobs waits until JobSet js has made n Jobs, and returns them.
func jobSetsJobs(t *testing.T, env *testenv.Env, js *jobsetv1.JobSet, n int) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	testenv.Eventually(t, wait, func() error {
		if err := env.Client.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{jobsetv1.JobSetNameKey: js.Name}); err != nil {
			return err
		}
		if len(list.Items) != n {
			return fmt.Errorf("JobSet %s has %d Jobs, want %d", js.Name, len(list.Items), n)
		}
		return nil
	})
	return list.Items
}

// A JobSet's Jobs carry no queue label of their own: they are held with
// their JobSet and started by the JobSet's controller once berth starts the
// JobSet. A namespace user, who may edit Jobs, cannot start the Job of a
// JobSet that waits for quota, nor make the Job of a running one run more
// pods than were admitted. (Before, either ran pods past the quota.)
func TestJobSetsJobsStartWithTheirJobSet(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	_, cqs := queues(t, env, "main")
	// The user may edit Jobs, not JobSets (the edit role has no JobSet
	// rights here): their admin makes them.
	runs := MakeJobSet("runs", env.Namespace).Queue("main").ReplicatedJob("workers", 2, 1).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "1h").Toleration(env.Toleration()).Obj()
	env.Create(t, runs)
	holds(t, env, cqs[0], env.Name("rf"), 1, "2")
	waits := MakeJobSet("waits", env.Namespace).Queue("main").ReplicatedJob("workers", 2, 2).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "1h").Toleration(env.Toleration()).Obj()
	env.Create(t, waits)

	running := jobSetsJobs(t, env, runs, 2)
	testenv.Eventually(t, wait, func() error {
		var j batchv1.Job
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&running[0]), &j); err != nil {
			return err
		}
		if jobs.Suspended(&j) {
			return fmt.Errorf("Job %s of the admitted JobSet is still suspended", j.Name)
		}
		return nil
	})
	// An Indexed Job (a JobSet's are) may change its completions with its
	// parallelism: both raised, it would run 8 pods where 1 was admitted.
	refused(t, "a running JobSet's Job grown", edit(c, &running[0], func(j *batchv1.Job) {
		n := int32(8)
		j.Spec.Parallelism, j.Spec.Completions = &n, &n
	}), "Job "+running[0].Name+": a JobSet's Job may not run more pods at once (from 1 to 8)")

	held := jobSetsJobs(t, env, waits, 2)
	for _, j := range held {
		if !jobs.Suspended(&j) {
			t.Fatalf("Job %s of the waiting JobSet is not suspended", j.Name)
		}
	}
	refused(t, "a waiting JobSet's Job started", edit(c, &held[0], func(j *batchv1.Job) { f := false; j.Spec.Suspend = &f }),
		"Job "+held[0].Name+": spec.suspend: a JobSet's Job is started by the JobSet's controller")
	// Grown while it waits, it would run grown once its JobSet is admitted:
	// the JobSet's controller starts it, and berth admitted the JobSet's
	// own shape.
	refused(t, "a waiting JobSet's Job grown", edit(c, &held[0], func(j *batchv1.Job) {
		n := int32(8)
		j.Spec.Parallelism, j.Spec.Completions = &n, &n
	}), "Job "+held[0].Name+": a JobSet's Job may not run more pods at once (from 2 to 8)")
	holds(t, env, cqs[0], env.Name("rf"), 1, "2")
}
