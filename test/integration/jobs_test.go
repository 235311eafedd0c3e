package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// A queued Job goes the whole way: created suspended by the webhook, a
// Workload made for it, admitted, started with its flavor's node selector, its
// pods created by the Job controller and bound by kube-scheduler to a node of
// the flavor, and once its pods succeed the Job completes, the Workload is
// finished and the quota is released.
func TestJobRunsThroughTheQueue(t *testing.T) {
	env := testenv.New(t)
	pool := env.Name("pool")
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	node := env.CreateReadyNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})

	job := MakeJob("hello", env.Namespace).Queue("main").Parallelism(2).Request("cpu", "1").Obj()
	env.Create(t, job)
	if !jobs.Suspended(job) {
		t.Fatal("the webhook did not create the queued Job suspended")
	}
	wl := jobWorkload(t, env, job)
	if got := wl.Spec.PodSets[0]; got.Count != 2 || got.Requests.Cpu().String() != "1" {
		t.Errorf("workload pod set %+v, want 2 pods of 1 cpu", got)
	}
	waitAdmitted(t, env, env.Namespace, wl.Name)

	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, "hello")
		if err != nil {
			return err
		}
		if jobs.Suspended(j) {
			return fmt.Errorf("job still suspended")
		}
		if got := j.Spec.Template.Spec.NodeSelector["example.com/pool"]; got != pool {
			return fmt.Errorf("job node selector %v lacks the flavor's label", j.Spec.Template.Spec.NodeSelector)
		}
		return nil
	})
	var pods corev1.PodList
	testenv.Eventually(t, wait, func() error {
		if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{"job-name": "hello"}); err != nil {
			return err
		}
		if len(pods.Items) != 2 {
			return fmt.Errorf("%d pods, want 2", len(pods.Items))
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != node.Name {
				return fmt.Errorf("pod %s bound to %q, want %s", p.Name, p.Spec.NodeName, node.Name)
			}
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		cq, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(cq, rf, "cpu"); total != "2" || cq.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("ClusterQueue status: cpu usage %q, admitted %d; want 2 and 1", total, cq.Status.AdmittedWorkloads)
		}
		return nil
	})

	// The pods run to completion, as a kubelet would report.
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.Phase = corev1.PodSucceeded
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted"}}
		if _, err := env.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, wl.Name)
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("workload not finished: %s", describe(wl))
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		cq, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(cq, rf, "cpu"); total != "0" || cq.Status.ReservingWorkloads != 0 {
			return fmt.Errorf("quota not released: cpu usage %q, reserving %d", total, cq.Status.ReservingWorkloads)
		}
		return nil
	})
}

// A workload marked finished while its Job runs is final: its quota is given
// back and berth leaves the running Job alone, though its cache keeps only an
// outline of the finished workload (no admission, no QuotaReserved).
func TestFinishedWorkloadLeavesItsRunningJobAlone(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	job := MakeJob("done-early", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, job)
	wl := waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, job).Name)
	running := func() error {
		j, err := getJob(env, env.Namespace, job.Name)
		if err != nil {
			return err
		}
		if jobs.Suspended(j) {
			return fmt.Errorf("job %s is suspended", j.Name)
		}
		return nil
	}
	testenv.Eventually(t, wait, running)

	orig := wl.DeepCopy()
	workload.SetFinished(wl, "ByHand", "finished by the test", time.Now())
	if err := env.Client.Status().Patch(ctx, wl, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		cq, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(cq, rf, "cpu"); total != "0" {
			return fmt.Errorf("quota not released: cpu usage %q", total)
		}
		return nil
	})
	// A change to the Job makes berth look at it again.
	j, err := getJob(env, env.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(j.DeepCopy())
	j.Annotations = map[string]string{"example.com/poke": "1"}
	if err := env.Client.Patch(ctx, j, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Consistently(t, 2*time.Second, running)
}

// Deleting a Job deletes its Workload (owner reference) and releases its quota.
func TestDeletingAJobReleasesItsQuota(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	first := MakeJob("first", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, first)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, first).Name)
	second := MakeJob("second", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, second)
	wl2 := jobWorkload(t, env, second)
	waitPending(t, env, env.Namespace, wl2.Name, "needs 1 cpu in flavor "+rf+", 0 free")

	if err := env.Client.Delete(ctx, first, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	// With no other event, the freed quota goes to the waiting Job.
	waitAdmitted(t, env, env.Namespace, wl2.Name)
	testenv.Eventually(t, wait, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace),
			client.MatchingLabels{"berth.dev/job-uid": string(first.UID)}); err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("the deleted Job's Workload is still there")
		}
		return nil
	})
}

// Jobs without a queue label are none of berth's business.
func TestUnlabelledJobsAreLeftAlone(t *testing.T) {
	env := testenv.New(t)
	free := MakeJob("free", env.Namespace).Request("cpu", "1").Obj()
	env.Create(t, free)
	if jobs.Suspended(free) {
		t.Fatal("a Job without a queue label was created suspended")
	}
	// berth sees Jobs in the order they were created: once the Workload of
	// a labelled Job created after it exists, berth has seen the unlabelled
	// one too. The Job reconciler runs several at once, so hold for a moment.
	queued := MakeJob("queued", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, queued)
	jobWorkload(t, env, queued)
	testenv.Consistently(t, time.Second, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, wl := range list.Items {
			if wl.Labels["berth.dev/job-uid"] != string(queued.UID) {
				return fmt.Errorf("berth made Workload %s for the unlabelled Job", wl.Name)
			}
		}
		j, err := getJob(env, env.Namespace, free.Name)
		if err != nil {
			return err
		}
		if jobs.Suspended(j) || jobs.Injected(j) {
			return fmt.Errorf("berth changed the unlabelled Job: suspend %v, annotations %v", j.Spec.Suspend, j.Annotations)
		}
		return nil
	})
}

// A Job that asks for a queue only in its pod template would run unqueued
// (its pods are queued with the Job, never one by one): the API server
// refuses it, saying where the label belongs. So does a template asking for
// another queue than the Job's; the same queue on both is fine.
func TestQueueLabelOnlyInThePodTemplateIsRefused(t *testing.T) {
	env := testenv.New(t)
	templated := func(name, jobQueue, templateLabel string) *batchv1.Job {
		// A label of its own: a Job without any takes its template's
		// (Kubernetes' defaulting), and so would be queued.
		j := MakeJob(name, env.Namespace).Request("cpu", "1").Obj()
		j.Labels["app"] = "train"
		if jobQueue != "" {
			j.Labels[berthv1.QueueNameLabel] = jobQueue
		}
		j.Spec.Template.Labels = map[string]string{templateLabel: "main"}
		return j
	}
	for _, c := range []struct {
		job  *batchv1.Job
		want string
	}{
		{templated("only-template", "", berthv1.QueueNameLabel), "move the label there"},
		{templated("only-template-kueue", "", berthv1.KueueQueueNameLabel), "move the label there"},
		{templated("two-queues", "other", berthv1.QueueNameLabel), "the Job for other"},
		{templated("same-queue", "main", berthv1.QueueNameLabel), ""},
	} {
		err := env.Client.Create(ctx, c.job)
		if c.want == "" {
			if err != nil {
				t.Errorf("Job %s: %v", c.job.Name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "spec.template.metadata.labels") {
			t.Errorf("Job %s created (%v); want it refused: %s", c.job.Name, err, c.want)
		}
	}
}

// Users moving from Kueue keep their label, and their priority classes.
func TestKueueLabelAndPriorityClass(t *testing.T) {
	env := testenv.New(t)
	rf, cq, wpc := env.Name("rf"), env.Name("cq"), env.Name("high")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: wpc}, Value: 1000})
	job := MakeJob("moved", env.Namespace).Label(berthv1.KueueQueueNameLabel, "main").
		Label(berthv1.KueuePriorityClassLabel, wpc).Request("cpu", "1").Obj()
	env.Create(t, job)
	if !jobs.Suspended(job) {
		t.Fatal("a Job with Kueue's queue label was not created suspended")
	}
	wl := jobWorkload(t, env, job)
	if wl.Spec.QueueName != "main" || wl.Spec.Priority == nil || *wl.Spec.Priority != 1000 || wl.Spec.PriorityClassName != wpc {
		t.Errorf("workload spec queue %q priority %v class %q", wl.Spec.QueueName, wl.Spec.Priority, wl.Spec.PriorityClassName)
	}
	waitAdmitted(t, env, env.Namespace, wl.Name)
}

// A Job whose WorkloadPriorityClass does not exist yet waits at priority 0,
// and gets the class's priority once it is created.
func TestPriorityClassCreatedAfterItsJob(t *testing.T) {
	env := testenv.New(t)
	rf, cq, wpc := env.Name("rf"), env.Name("cq"), env.Name("late")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	// Too big for the queue: it stays pending, so its priority may change.
	job := MakeJob("early", env.Namespace).Queue("main").Label(berthv1.PriorityClassLabel, wpc).Request("cpu", "2").Obj()
	env.Create(t, job)
	wl := jobWorkload(t, env, job)
	if wl.Spec.Priority != nil {
		t.Fatalf("priority %d before the class exists, want none", *wl.Spec.Priority)
	}
	// Once its pending reason is written nothing else happens to it: only the
	// class's arrival can bring its priority.
	waitPending(t, env, env.Namespace, wl.Name, "needs 2 cpu")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: wpc}, Value: 700})
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, wl.Name)
		if err != nil {
			return err
		}
		if wl.Spec.Priority == nil || *wl.Spec.Priority != 700 || wl.Spec.PriorityClassName != wpc {
			return fmt.Errorf("workload priority %v class %q, want 700 from %s", wl.Spec.Priority, wl.Spec.PriorityClassName, wpc)
		}
		return nil
	})
}

// Raising the parallelism of a running Job past its quota keeps it running
// as admitted while the increase waits (its growth Workload); raised again
// to what fits, the increase is admitted and the Job runs with it, never
// suspended.
func TestRaisedJobGrowsOnceTheIncreaseFits(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", "x").Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "3").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	job := MakeJob("grows", env.Namespace).Queue("main").Parallelism(2).Completions(10).Request("cpu", "1").
		NodeSelector("team", "a").Obj()
	env.Create(t, job)
	wl := waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, job).Name)
	setParallelism := func(n int32) {
		t.Helper()
		testenv.Eventually(t, wait, func() error {
			j, err := getJob(env, env.Namespace, job.Name)
			if err != nil {
				return err
			}
			if jobs.Suspended(j) {
				return fmt.Errorf("job not started yet")
			}
			patch := client.MergeFromWithOptions(j.DeepCopy(), client.MergeFromWithOptimisticLock{})
			j.Spec.Parallelism = &n
			return env.Client.Patch(ctx, j, patch)
		})
	}
	setParallelism(4)
	// 2 more pods of 1 cpu do not fit in the 1 left: they wait as the
	// growth Workload, and the Job runs on with 2.
	waitPending(t, env, env.Namespace, jobs.GrowthName(wl.Name), "needs 2 cpu")
	if j, err := getJob(env, env.Namespace, job.Name); err != nil || jobs.Suspended(j) || *j.Spec.Parallelism != 2 ||
		j.Annotations[berthv1.PendingParallelismAnnotation] != "4" {
		t.Fatalf("the raised Job while its increase waits: %v %+v", err, j.Annotations)
	}
	// Down to 3: the increase of 1 fits, and the Job runs with 3.
	setParallelism(3)
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, wl.Name)
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(wl) || wl.Status.Admission.PodSetAssignments[0].Count != 3 || wl.Spec.PodSets[0].Count != 3 {
			return fmt.Errorf("workload not admitted with 3 pods: %s", describe(wl))
		}
		j, err := getJob(env, env.Namespace, job.Name)
		if err != nil {
			return err
		}
		if jobs.Suspended(j) || *j.Spec.Parallelism != 3 || j.Annotations[berthv1.PendingParallelismAnnotation] != "" {
			return fmt.Errorf("job suspended %v, parallelism %d, annotations %v", jobs.Suspended(j), *j.Spec.Parallelism, j.Annotations)
		}
		if _, err := getWorkload(env, env.Namespace, jobs.GrowthName(wl.Name)); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the growth Workload is still there (%v)", err)
		}
		return nil
	})
	waitEvent(t, env, job.Name, "Grown", "runs 3 pods at once instead of 2")

	// Raised again past the quota, then evicted while the increase waits:
	// the growth Workload goes, and the Job queues again with the raise as
	// its parallelism.
	setParallelism(5)
	waitPending(t, env, env.Namespace, jobs.GrowthName(wl.Name), "needs 2 cpu")
	lq := &berthv1.LocalQueue{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "main"}, lq); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(lq.DeepCopy())
	lq.Spec.StopPolicy = berthv1.HoldAndDrain
	if err := env.Client.Patch(ctx, lq, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		cur, err := getWorkload(env, env.Namespace, wl.Name)
		if err != nil {
			return err
		}
		if workload.HasQuota(cur) || cur.Spec.PodSets[0].Count != 5 {
			return fmt.Errorf("the evicted Job's Workload: %d pods asked, %s", cur.Spec.PodSets[0].Count, describe(cur))
		}
		j, err := getJob(env, env.Namespace, job.Name)
		if err != nil {
			return err
		}
		if !jobs.Suspended(j) || *j.Spec.Parallelism != 5 || j.Annotations[berthv1.PendingParallelismAnnotation] != "" {
			return fmt.Errorf("the evicted Job: suspended %v, parallelism %d, annotations %v", jobs.Suspended(j), *j.Spec.Parallelism, j.Annotations)
		}
		if _, err := getWorkload(env, env.Namespace, jobs.GrowthName(wl.Name)); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the growth Workload is still there (%v)", err)
		}
		return nil
	})
}

// A workload evicted by HoldAndDrain stops its Job: suspended again, with the
// pod template it was submitted with.
func TestHoldAndDrainSuspendsAndRestoresJobs(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", "x").Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	lq := MakeLocalQueue("main", env.Namespace, cq).Obj()
	env.Create(t, lq)
	job := MakeJob("drained", env.Namespace).Queue("main").Request("cpu", "1").NodeSelector("team", "a").Obj()
	env.Create(t, job)
	wl := jobWorkload(t, env, job)
	waitAdmitted(t, env, env.Namespace, wl.Name)
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, job.Name)
		if err != nil || jobs.Suspended(j) {
			return fmt.Errorf("job not started (%v)", err)
		}
		return nil
	})

	patch := client.MergeFrom(lq.DeepCopy())
	lq.Spec.StopPolicy = berthv1.HoldAndDrain
	if err := env.Client.Patch(ctx, lq, patch); err != nil {
		t.Fatal(err)
	}
	// Pending, saying why: first "evicted: LocalQueue ... is stopped with
	// stopPolicy HoldAndDrain", then, once back in line, that it waits for
	// the stopped queue; either may be the one seen.
	drained := waitPending(t, env, env.Namespace, wl.Name, "LocalQueue "+env.Namespace+"/main is stopped")
	if c := meta.FindStatusCondition(drained.Status.Conditions, berthv1.WorkloadEvicted); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "LocalQueueStopped" {
		t.Errorf("drained workload's Evicted condition %+v, want True with reason LocalQueueStopped", c)
	}
	waitSuspendedAsSubmitted(t, env, job.Name)
	// Releasing the queue admits it again.
	patch = client.MergeFrom(lq.DeepCopy())
	lq.Spec.StopPolicy = berthv1.StopPolicyNone
	if err := env.Client.Patch(ctx, lq, patch); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, wl.Name)
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, job.Name)
		if err != nil || jobs.Suspended(j) {
			return fmt.Errorf("job not restarted (%v)", err)
		}
		return nil
	})
}

// waitSuspendedAsSubmitted waits until a Job (made with node selector
// team=a) is suspended with the pod template it was submitted with.
func waitSuspendedAsSubmitted(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, name)
		if err != nil {
			return err
		}
		ns := j.Spec.Template.Spec.NodeSelector
		if !jobs.Suspended(j) || jobs.Injected(j) || len(ns) != 1 || ns["team"] != "a" {
			return fmt.Errorf("job suspended=%v injected=%v nodeSelector=%v; want suspended with its own selector team=a",
				jobs.Suspended(j), jobs.Injected(j), ns)
		}
		return nil
	})
}

// Raising a running Job's parallelism past its quota never runs a pod the
// quota does not cover, not even for a moment: the webhook keeps the raise
// back in the same write, before the Job controller can create more pods,
// and the Job runs on as admitted. Once quota frees, the increase is
// admitted and the Job grows while its pods keep running. The user is an
// editor of the namespace; every pod event is watched throughout.
func TestGrowingAJobNeverRunsPastItsQuota(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	editor := env.AsEditor(t, "erin")
	job := MakeJob("grows", env.Namespace).Queue("main").Parallelism(2).Completions(40).Request("cpu", "1").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	if err := editor.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	wl := waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, job).Name)
	blocker := MakeJob("blocker", env.Namespace).Queue("main").Parallelism(2).Request("cpu", "1").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	env.Create(t, blocker)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, blocker).Name)
	waitRunningPods(t, env, "grows", 2)

	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{"job-name": "grows"}); err != nil {
		t.Fatal(err)
	}
	// From here on, every change of every pod of the Job.
	w, err := env.Kube.CoreV1().Pods(env.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: pods.ResourceVersion, LabelSelector: "job-name=grows"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	placed := map[string]bool{} // pods bound to a node that have not ended
	for _, p := range pods.Items {
		placed[p.Name] = p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	}
	count := func() int {
		n := 0
		for _, on := range placed {
			if on {
				n++
			}
		}
		return n
	}
	// watch follows the pods until done says so, and returns the most that
	// were placed at once.
	watch := func(what string, done func() bool) int {
		t.Helper()
		most := count()
		deadline := time.After(wait)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatal("the pod watch ended")
				}
				if p, isPod := ev.Object.(*corev1.Pod); isPod {
					placed[p.Name] = ev.Type != "DELETED" && p.Spec.NodeName != "" &&
						p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
					most = max(most, count())
				}
			case <-deadline:
				t.Fatalf("%s: not within %s; %d pods placed", what, wait, count())
			case <-time.After(200 * time.Millisecond):
				if done() {
					return most
				}
			}
		}
	}

	var j batchv1.Job
	if err := editor.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
		t.Fatal(err)
	}
	if err := editor.Patch(ctx, &j, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"parallelism":4}}`))); err != nil {
		t.Fatalf("an editor raising their running Job's parallelism: %v", err)
	}
	growth := jobs.GrowthName(wl.Name)
	most := watch("the increase queued", func() bool {
		g, err := getWorkload(env, env.Namespace, growth)
		return err == nil && strings.Contains(describe(g), "needs 2 cpu")
	})
	if most > 2 {
		t.Errorf("%d pods placed at once with 2 admitted, while the increase waits", most)
	}
	if j, err := getJob(env, env.Namespace, "grows"); err != nil || jobs.Suspended(j) || *j.Spec.Parallelism != 2 ||
		j.Annotations[berthv1.PendingParallelismAnnotation] != "4" {
		t.Fatalf("while the increase waits, the Job runs on as admitted: %v, %+v", err, j.Spec)
	}

	// Quota frees: the increase is admitted, and the Job grows in place.
	if err := env.Client.Delete(ctx, blocker, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	most = watch("grown to 4", func() bool {
		cur, err := getWorkload(env, env.Namespace, wl.Name)
		_, gerr := getWorkload(env, env.Namespace, growth)
		return err == nil && count() == 4 && cur.Status.Admission != nil && cur.Status.Admission.PodSetAssignments[0].Count == 4 &&
			apierrors.IsNotFound(gerr)
	})
	if most > 4 {
		t.Errorf("%d pods placed at once with 4 admitted", most)
	}
	if j, err := getJob(env, env.Namespace, "grows"); err != nil || jobs.Suspended(j) || *j.Spec.Parallelism != 4 {
		t.Fatalf("the grown Job: %v, %+v", err, j.Spec)
	}
	waitEvent(t, env, "grows", "Grown", "runs 4 pods at once instead of 2")
	// Its ClusterQueue counts the 4 cpu once (the growth Workload's gone).
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(q, rf, "cpu"); total != "4" || q.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("ClusterQueue %s: %s cpu used by %d workloads; want 4 by 1", cq, total, q.Status.AdmittedWorkloads)
		}
		return nil
	})
}
