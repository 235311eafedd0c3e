package hostile

import (
	"fmt"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/guard"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// queues makes a flavor on a simulated node of the test's own, and a
// ClusterQueue of 4 cpu in it with a LocalQueue of the same name for each
// name given: the ClusterQueues' names, in order.
func queues(t *testing.T, env *testenv.Env, names ...string) (flavor string, cqs []string) {
	t.Helper()
	pool := env.Name("pool")
	env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	flavor = env.Name("rf")
	env.Create(t, MakeResourceFlavor(flavor).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Obj())
	for _, n := range names {
		cq := env.Name(n)
		env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(flavor).Resource("cpu", "4").Obj()).Obj())
		env.Create(t, MakeLocalQueue(n, env.Namespace, cq).Obj())
		cqs = append(cqs, cq)
	}
	return flavor, cqs
}

// job is a Job of n pods of 1 cpu at once that run an hour, in LocalQueue
// queue, created by c.
func job(t *testing.T, c client.Client, env *testenv.Env, name, queue string, n int32) *batchv1.Job {
	t.Helper()
	j := MakeJob(name, env.Namespace).Queue(queue).Parallelism(n).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "1h").Obj()
	if err := c.Create(ctx, j); err != nil {
		t.Fatalf("creating Job %s: %v", name, err)
	}
	return j
}

// running waits until the Job runs n pods and its Workload is admitted.
func running(t *testing.T, env *testenv.Env, j *batchv1.Job, n int32) *berthv1.Workload {
	t.Helper()
	var wl berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: j.Namespace, Name: jobs.WorkloadName(j)}, &wl); err != nil {
			return err
		}
		var now batchv1.Job
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), &now); err != nil {
			return err
		}
		if !workload.IsAdmitted(&wl) || jobs.Suspended(&now) || now.Status.Active != n {
			return fmt.Errorf("Job %s: admitted %v, suspended %v, %d pods active; want admitted and %d running",
				j.Name, workload.IsAdmitted(&wl), jobs.Suspended(&now), now.Status.Active, n)
		}
		return nil
	})
	return &wl
}

// The escape the issue reported: a user took the queue label off a running
// Job and raised its parallelism, and 12 pods of 1 cpu ran on a quota of 4.
// The API server refuses the edit, and each half of it, naming the field;
// the Job keeps running as admitted.
func TestRunningJobCannotLeaveItsQueue(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	_, cqs := queues(t, env, "main")
	j := MakeJob("train", env.Namespace).Queue("main").Parallelism(4).Completions(40).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "1h").Obj()
	if err := c.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	running(t, env, j, 4)

	err := edit(c, j, func(j *batchv1.Job) {
		delete(j.Labels, berthv1.QueueNameLabel)
		n := int32(12)
		j.Spec.Parallelism = &n
	})
	refused(t, "label taken off and parallelism raised", err,
		`Job train: metadata.labels[berth.dev/queue-name]: the queue of a queued Job may change only in an update that leaves it suspended`)
	refused(t, "label taken off", edit(c, j, func(j *batchv1.Job) { delete(j.Labels, berthv1.QueueNameLabel) }),
		"metadata.labels[berth.dev/queue-name]")
	refused(t, "moved to another queue while running", edit(c, j, func(j *batchv1.Job) { j.Labels[berthv1.QueueNameLabel] = "other" }),
		"metadata.labels[berth.dev/queue-name]")
	refused(t, "priority class set while running", edit(c, j, func(j *batchv1.Job) { j.Labels[berthv1.PriorityClassLabel] = "high" }),
		"metadata.labels[berth.dev/priority-class]")
	refused(t, "prebuilt Workload named", edit(c, j, func(j *batchv1.Job) { j.Labels[berthv1.PrebuiltWorkloadLabel] = "x" }),
		"metadata.labels[berth.dev/prebuilt-workload-name]")
	holds(t, env, cqs[0], env.Name("rf"), 1, "4")
	var now batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), &now); err != nil {
		t.Fatal(err)
	}
	if *now.Spec.Parallelism != 4 || now.Labels[berthv1.QueueNameLabel] != "main" {
		t.Errorf("Job after the refusals: parallelism %d, labels %v", *now.Spec.Parallelism, now.Labels)
	}
}

// A Job waiting for quota is started by berth alone: its user cannot
// unsuspend it, or drop the field.
func TestWaitingJobIsStartedByBerthAlone(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	queues(t, env, "main")
	job(t, c, env, "fits", "main", 4)
	waiting := job(t, c, env, "waits", "main", 2)
	refused(t, "unsuspended by its user", edit(c, waiting, func(j *batchv1.Job) { f := false; j.Spec.Suspend = &f }),
		"Job waits: spec.suspend: a queued Job is started by berth once its Workload is admitted; nobody else may set spec.suspend to false")
	refused(t, "suspend dropped by its user", edit(c, waiting, func(j *batchv1.Job) { j.Spec.Suspend = nil }), "spec.suspend")
}

// A queued Pod that does not fit stays gated whatever its user does: the
// gates are berth's to lift, the queue label stays, and so the Pod is never
// bound. (The escapes reported: its gates lifted, or its label and then its
// gates, and it ran at once.)
func TestQueuedPodStaysGated(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	queues(t, env, "main")
	job(t, c, env, "fills-the-queue", "main", 4)
	pod := MakePod("p", env.Namespace).Label(berthv1.QueueNameLabel, "main").Request("cpu", "1").Obj()
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.SchedulingGates) == 0 {
		t.Fatal("the queued Pod was not created gated")
	}
	gatesOff := func(p *corev1.Pod) {
		p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == berthv1.AdmissionGate })
	}
	refused(t, "admission gate lifted", edit(c, pod, gatesOff),
		"Pod p: spec.schedulingGates: the gate berth.dev/admission of a queued Pod is lifted by berth once it is admitted")
	refused(t, "every gate lifted", edit(c, pod, func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }), "spec.schedulingGates")
	refused(t, "queue label taken off", edit(c, pod, func(p *corev1.Pod) { delete(p.Labels, berthv1.QueueNameLabel) }),
		`Pod p: metadata.labels[berth.dev/queue-name]: the queue of a queued Pod may not change (from "main" to "")`)
	refused(t, "queue label and gates taken off at once", edit(c, pod, func(p *corev1.Pod) {
		delete(p.Labels, berthv1.QueueNameLabel)
		gatesOff(p)
	}), "metadata.labels[berth.dev/queue-name]")
	refused(t, "put in a pod group", edit(c, pod, func(p *corev1.Pod) { p.Labels[berthv1.PodGroupNameLabel] = "g" }),
		"metadata.labels[berth.dev/pod-group-name]: may not change on a queued Pod")
	// What is not berth's the user may still change (and so may the
	// Job controller, say, take its finalizer off a Job's Pod).
	if err := edit(c, pod, func(p *corev1.Pod) { p.Labels["app"] = "web" }); err != nil {
		t.Errorf("labelling a queued Pod: %v", err)
	}
	var now corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &now); err != nil {
		t.Fatal(err)
	}
	if now.Spec.NodeName != "" || len(now.Spec.SchedulingGates) != 2 {
		t.Errorf("the queued Pod after the refusals: node %q, gates %v", now.Spec.NodeName, now.Spec.SchedulingGates)
	}
}

// What its user may do: move a running Job to another queue by suspending
// it in the same update. (In two updates berth may start it again in
// between, its Workload being still admitted.) Its Workload then gives the
// first queue's quota back once its pods are gone and is admitted in the
// second, and berth starts it there.
func TestSuspendedJobMovesToAnotherQueue(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	flavor, cqs := queues(t, env, "first", "second")
	j := job(t, c, env, "train", "first", 2)
	running(t, env, j, 2)
	holds(t, env, cqs[0], flavor, 1, "2")

	if err := edit(c, j, func(j *batchv1.Job) {
		j.Spec.Suspend = ptr.To(true)
		j.Labels[berthv1.QueueNameLabel] = "second"
	}); err != nil {
		t.Fatalf("suspending a running Job and moving it to another queue: %v", err)
	}
	wl := running(t, env, j, 2)
	if wl.Spec.QueueName != "second" || wl.Status.Admission.ClusterQueue != cqs[1] {
		t.Errorf("Workload in LocalQueue %s, admitted by %s; want second, %s", wl.Spec.QueueName, wl.Status.Admission.ClusterQueue, cqs[1])
	}
	holds(t, env, cqs[0], flavor, 0, "0")
	holds(t, env, cqs[1], flavor, 1, "2")
}

// A Job whose user suspends it and takes its queue label off (in one
// update) is none of berth's business any more: its Workload goes, and with
// it the quota, once its pods are gone; nothing stays held for work that is
// gone.
func TestUnqueuedJobGivesItsQuotaBack(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	flavor, cqs := queues(t, env, "main")
	j := job(t, c, env, "train", "main", 2)
	wl := running(t, env, j, 2)
	if err := edit(c, j, func(j *batchv1.Job) {
		j.Spec.Suspend = ptr.To(true)
		delete(j.Labels, berthv1.QueueNameLabel)
	}); err != nil {
		t.Fatalf("suspending a running Job and taking its queue label off: %v", err)
	}
	testenv.Eventually(t, wait, func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(wl), &berthv1.Workload{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("Workload %s still there (%v)", wl.Name, err)
		}
		return nil
	})
	holds(t, env, cqs[0], flavor, 0, "0")
}

// A running Job's Pod cannot be set free: relabelled, or given another
// controller, the Job controller would let it go (it runs on) and make
// another in its place, one pod past the quota each time.
func TestJobsPodCannotBeSetFree(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	queues(t, env, "main")
	j := job(t, c, env, "train", "main", 2)
	running(t, env, j, 2)
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{"job-name": "train"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("the Job's pods: %d, %v", len(pods.Items), err)
	}
	p := &pods.Items[0]
	refused(t, "selector label changed", edit(c, p, func(p *corev1.Pod) { p.Labels["batch.kubernetes.io/controller-uid"] = "free" }),
		"metadata.labels[batch.kubernetes.io/controller-uid]: the Job finds its Pods by it")
	refused(t, "job-name label taken off", edit(c, p, func(p *corev1.Pod) { delete(p.Labels, "job-name") }), "metadata.labels[job-name]")
	refused(t, "controller taken away", edit(c, p, func(p *corev1.Pod) { p.OwnerReferences = nil }),
		"metadata.ownerReferences: the controller of a Job's Pod may not change")
	var now batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), &now); err != nil {
		t.Fatal(err)
	}
	if now.Status.Active != 2 {
		t.Errorf("the Job runs %d pods, admitted for 2", now.Status.Active)
	}
}

// The policies' rules are checked by the API server against the kinds'
// real schemas (JobSet's and LeaderWorkerSet's CRDs are installed here):
// none has an expression it warns about.
func TestPoliciesTypeCheck(t *testing.T) {
	env := testenv.New(t)
	var names []string
	for _, k := range guard.Kinds {
		names = append(names, guard.PolicyName(k))
		for _, c := range k.Children {
			names = append(names, guard.ChildPolicyName(k, c))
		}
	}
	for _, name := range names {
		testenv.Eventually(t, wait, func() error {
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, &p); err != nil {
				return err
			}
			if p.Status.ObservedGeneration != p.Generation || p.Status.TypeChecking == nil {
				return fmt.Errorf("policy %s not type-checked yet", p.Name)
			}
			if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
				t.Errorf("policy %s: %+v", p.Name, w)
			}
			return nil
		})
	}
}
