package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// Team A borrows team B's idle quota with real Jobs. When B submits, A's
// borrowing Jobs are preempted (Evicted and Preempted conditions naming the
// preemptor and the rule) and suspended, and B's Jobs run. When B's work is
// gone, A's Jobs run again.
func TestReclaimPreemptsBorrowingJobs(t *testing.T) {
	env := testenv.New(t)
	rf, a, b, co := env.Name("rf"), env.Name("a"), env.Name("b"), env.Name("co")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(a).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	bq := MakeClusterQueue(b).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj()
	bq.Spec.Preemption = &berthv1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1.PreemptionAny}
	env.Create(t, bq)
	env.Create(t, MakeLocalQueue("a", env.Namespace, a).Obj())
	env.Create(t, MakeLocalQueue("b", env.Namespace, b).Obj())

	var aJobs []*batchv1.Job
	for i := range 4 {
		j := MakeJob(fmt.Sprintf("a-%d", i), env.Namespace).Queue("a").Request("cpu", "1").Obj()
		env.Create(t, j)
		aJobs = append(aJobs, j)
	}
	for _, j := range aJobs {
		waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, j).Name)
		waitRunning(t, env, j.Name, true)
	}

	var bJobs []*batchv1.Job
	for i := range 2 {
		j := MakeJob(fmt.Sprintf("b-%d", i), env.Namespace).Queue("b").Request("cpu", "1").Obj()
		env.Create(t, j)
		bJobs = append(bJobs, j)
	}
	for _, j := range bJobs {
		waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, j).Name)
		waitRunning(t, env, j.Name, true)
	}

	// Exactly two of A's Jobs were preempted, and say so.
	var preempted []*batchv1.Job
	for _, j := range aJobs {
		wl := jobWorkload(t, env, j)
		c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadPreempted)
		if c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		preempted = append(preempted, j)
		if c.Reason != "InCohortReclamation" || !strings.Contains(c.Message, "preempted to make room for "+env.Namespace+"/job-b-") {
			t.Errorf("Preempted condition of %s: %s: %s", wl.Name, c.Reason, c.Message)
		}
		ev := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadEvicted)
		if ev == nil || ev.Status != metav1.ConditionTrue || ev.Reason != "Preempted" {
			t.Errorf("Evicted condition of %s: %+v", wl.Name, ev)
		}
		if wl.Status.RequeueState == nil || wl.Status.RequeueState.RequeueAt == nil {
			t.Errorf("%s was requeued without a backoff: %+v", wl.Name, wl.Status.RequeueState)
		}
		waitRunning(t, env, j.Name, false)
	}
	if len(preempted) != 2 {
		t.Fatalf("%d of A's Jobs were preempted, want 2", len(preempted))
	}

	// B's work goes away: A's preempted Jobs get their quota back and run.
	for _, j := range bJobs {
		if err := env.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range preempted {
		waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, j).Name)
		waitRunning(t, env, j.Name, true)
	}
}

// oneCPUQueuePreemptingLowerPriority makes LocalQueue main in env's
// namespace, for a ClusterQueue of 1 cpu that preempts lower priorities,
// and returns a WorkloadPriorityClass of 100.
func oneCPUQueuePreemptingLowerPriority(t *testing.T, env *testenv.Env) string {
	t.Helper()
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	return preemptLowerPriority(t, env, cq)
}

// Within a ClusterQueue, a higher-priority Job preempts a lower-priority one.
func TestPriorityPreemptionWithinAQueue(t *testing.T) {
	env := testenv.New(t)
	high := oneCPUQueuePreemptingLowerPriority(t, env)

	low := MakeJob("low", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, low)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, low).Name)
	urgent := MakeJob("urgent", env.Namespace).Queue("main").Label(berthv1.PriorityClassLabel, high).Request("cpu", "1").Obj()
	env.Create(t, urgent)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, urgent).Name)
	waitRunning(t, env, "low", false)
	wl := jobWorkload(t, env, low)
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadPreempted); c == nil || c.Reason != "InClusterQueue" {
		t.Errorf("Preempted condition of the low-priority workload: %+v", c)
	}
}

// A preempted Job keeps its quota until its pods are gone: with a pod held
// in Terminating (a finalizer stands in for a slow kubelet, or an API server
// that is down), the Job is suspended and its Workload says Evicted, but the
// preemptor is not admitted to that quota; once the pod is gone, it is.
func TestPreemptedJobKeepsQuotaUntilItsPodsAreGone(t *testing.T) {
	env := testenv.New(t)
	high := oneCPUQueuePreemptingLowerPriority(t, env)

	low := MakeJob("low", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, low)
	lowWL := jobWorkload(t, env, low).Name
	waitAdmitted(t, env, env.Namespace, lowWL)
	const hold = "test.berth.dev/hold"
	var pod corev1.Pod
	testenv.Eventually(t, wait, func() error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{batchv1.JobNameLabel: "low"}); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods of Job low, want 1", len(pods.Items))
		}
		pod = pods.Items[0]
		return nil
	})
	orig := pod.DeepCopy()
	pod.Finalizers = append(pod.Finalizers, hold)
	if err := env.Client.Patch(ctx, &pod, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}

	urgent := MakeJob("urgent", env.Namespace).Queue("main").Label(berthv1.PriorityClassLabel, high).Request("cpu", "1").Obj()
	env.Create(t, urgent)
	urgentWL := jobWorkload(t, env, urgent).Name
	// berth has acted on the preemption: the victim is Evicted, its Job
	// suspended, and the Job controller counts its pod terminating.
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, lowWL)
		if err != nil {
			return err
		}
		j, err := getJob(env, env.Namespace, "low")
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadEvicted) || !jobs.Suspended(j) ||
			j.Status.Terminating == nil || *j.Status.Terminating != 1 {
			return fmt.Errorf("victim: %s; Job suspended %v, terminating %v", describe(wl), jobs.Suspended(j), j.Status.Terminating)
		}
		return nil
	})
	wl, err := getWorkload(env, env.Namespace, lowWL)
	if err != nil {
		t.Fatal(err)
	}
	if !workload.HasQuota(wl) {
		t.Fatalf("the victim gave its quota back while its pod still terminates: %s", describe(wl))
	}
	if u, err := getWorkload(env, env.Namespace, urgentWL); err != nil || workload.HasQuota(u) {
		t.Fatalf("the preemptor was admitted to quota a terminating pod still holds (%v): %s", err, describe(u))
	}

	// The Job controller drops its own finalizer meanwhile: edit the pod as
	// it is now.
	testenv.Eventually(t, wait, func() error {
		var now corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&pod), &now); err != nil {
			return err
		}
		now.Finalizers = slices.DeleteFunc(now.Finalizers, func(f string) bool { return f == hold })
		return env.Client.Update(ctx, &now)
	})
	waitAdmitted(t, env, env.Namespace, urgentWL)
	if wl, err := getWorkload(env, env.Namespace, lowWL); err != nil || workload.HasQuota(wl) {
		t.Errorf("the victim still holds quota after its pod went (%v): %s", err, describe(wl))
	}
}

// A cycle of cohort parents is reported in the cohorts' status and stops
// admission below them, without a crash; breaking it lets work in.
func TestCohortCycleIsReportedAndFixable(t *testing.T) {
	env := testenv.New(t)
	rf, cq, x, y := env.Name("rf"), env.Name("cq"), env.Name("x"), env.Name("y")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	cx := &berthv1.Cohort{ObjectMeta: metav1.ObjectMeta{Name: x}, Spec: berthv1.CohortSpec{Parent: y}}
	cy := &berthv1.Cohort{ObjectMeta: metav1.ObjectMeta{Name: y}, Spec: berthv1.CohortSpec{Parent: x}}
	env.Create(t, cx)
	env.Create(t, cy)
	env.Create(t, MakeClusterQueue(cq).Cohort(x).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "w", "cycle of parents")
	for _, name := range []string{x, y} {
		testenv.Eventually(t, wait, func() error {
			var co berthv1.Cohort
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &co); err != nil {
				return err
			}
			c := meta.FindStatusCondition(co.Status.Conditions, "Active")
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "CohortCycle" || !strings.Contains(c.Message, x) {
				return fmt.Errorf("cohort %s Active condition %+v", name, c)
			}
			return nil
		})
	}
	patch := client.MergeFrom(cy.DeepCopy())
	cy.Spec.Parent = ""
	if err := env.Client.Patch(ctx, cy, patch); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, "w")
	testenv.Eventually(t, wait, func() error {
		var co berthv1.Cohort
		if err := env.Client.Get(ctx, client.ObjectKey{Name: x}, &co); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(co.Status.Conditions, "Active") {
			return fmt.Errorf("cohort %s still inactive: %+v", x, co.Status.Conditions)
		}
		return nil
	})
}

// A parent cohort's own quota is available to ClusterQueues two levels down.
func TestHierarchicalCohortQuota(t *testing.T) {
	env := testenv.New(t)
	rf, cq, team, org := env.Name("rf"), env.Name("cq"), env.Name("team"), env.Name("org")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	root := &berthv1.Cohort{ObjectMeta: metav1.ObjectMeta{Name: org}}
	root.Spec.ResourceGroups = MakeClusterQueue("").ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "8").Obj()).Obj().Spec.ResourceGroups
	env.Create(t, root)
	env.Create(t, &berthv1.Cohort{ObjectMeta: metav1.ObjectMeta{Name: team}, Spec: berthv1.CohortSpec{Parent: org}})
	env.Create(t, MakeClusterQueue(cq).Cohort(team).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("big", env.Namespace).Queue("main").Request("cpu", "9").Obj())
	waitAdmitted(t, env, env.Namespace, "big")
	env.Create(t, MakeWorkload("more", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "more", "needs 1 cpu in flavor "+rf+", 0 free")
}

// waitRunning waits until the Job is unsuspended (running) or suspended.
func waitRunning(t *testing.T, env *testenv.Env, name string, running bool) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, name)
		if err != nil {
			return err
		}
		if jobs.Suspended(j) == running {
			return fmt.Errorf("job %s suspended=%v, want running=%v", name, jobs.Suspended(j), running)
		}
		return nil
	})
}
