package hostile

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// enforce makes env's namespace one where everything is queued, and waits
// until the API server's webhooks see it so (a Pod made without a queue
// comes out gated).
func enforce(t *testing.T, env *testenv.Env) {
	t.Helper()
	var ns corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: env.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels[enforced] = "true"
	if err := env.Client.Patch(ctx, &ns, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		probe := MakePod(fmt.Sprintf("probe-%d", time.Now().UnixNano()), env.Namespace).Obj()
		if err := env.Client.Create(ctx, probe); err != nil {
			return err
		}
		if err := env.Client.Delete(ctx, probe); err != nil {
			return err
		}
		if !pods.Gated(probe) {
			return fmt.Errorf("pod %s not gated yet", probe.Name)
		}
		return nil
	})
}

// held says why obj, as the API server stored it, is not queued in
// LocalQueue "default", or "".
func held(obj client.Object) string {
	if q := obj.GetLabels()[berthv1.QueueNameLabel]; q != "default" {
		return fmt.Sprintf("%T %s: queue label %q, want default", obj, obj.GetName(), q)
	}
	return ""
}

// Where queueing is enforced (--manage-jobs-without-queue-name, and this
// namespace selected), nothing a namespace user makes runs unqueued: a Job,
// a Pod, a Deployment's and a StatefulSet's pods, a JobSet and a
// LeaderWorkerSet, each made without a queue label, go to the namespace's
// LocalQueue "default", held until admitted. (Before, only batch Jobs were
// covered, and every other kind ran at once.)
func TestEnforcedNamespaceQueuesEveryKind(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	queues(t, env, "default")
	enforce(t, env)

	job := MakeJob("job", env.Namespace).Parallelism(2).Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", "1h").Obj()
	pod := MakePod("pod", env.Namespace).Request("cpu", "8").Obj()
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/web:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}}}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: env.Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: env.Namespace},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: template.Spec}}}
	for _, obj := range []client.Object{job, pod, deploy, sts} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s as a namespace user: %v", obj, obj.GetName(), err)
		}
		if why := held(obj); why != "" {
			t.Error(why)
		}
	}
	if !jobs.Suspended(job) {
		t.Error("the Job was created running")
	}
	if !pods.Gated(pod) {
		t.Error("the Pod was created ungated")
	}
	// The user may make no JobSets or LeaderWorkerSets here; their admin
	// may, and those are queued too.
	js := MakeJobSet("train", env.Namespace).ReplicatedJob("w", 1, 1).Request("cpu", "1").Toleration(env.Toleration()).Obj()
	env.Create(t, js)
	if why := held(js); why != "" || js.Spec.Suspend == nil || !*js.Spec.Suspend {
		t.Errorf("JobSet: %s, suspended %v", why, js.Spec.Suspend)
	}

	// The Job fits and runs; the rest, asking for 8 cpu of 4, waits: their
	// pods exist, gated, but never run.
	running(t, env, job, 2)
	testenv.Eventually(t, wait, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		gated := map[string]bool{}
		for _, p := range list.Items {
			if p.Labels["app"] == "web" || p.Labels["app"] == "db" {
				if p.Spec.NodeName != "" {
					return fmt.Errorf("pod %s of a workload that does not fit runs on %s", p.Name, p.Spec.NodeName)
				}
				gated[p.Labels["app"]] = pods.Gated(&p) && p.Labels[berthv1.QueueNameLabel] == "default"
			}
		}
		if !gated["web"] || !gated["db"] {
			return fmt.Errorf("the Deployment's and StatefulSet's pods, queued and gated: %v", gated)
		}
		return nil
	})
}

// An owner reference keeps an object from being queued on its own only when
// the owner's controller made it for an owner that exists and is queued:
// a user cannot dodge the queue by naming a Job, or a JobSet, as its
// object's controller. (Before, a Pod naming any Job, even one that did
// not exist, ran unqueued.)
func TestForgedOwnersAreRefused(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	flavor, cqs := queues(t, env, "default")
	enforce(t, env)
	own := MakeJob("own", env.Namespace).Parallelism(1).Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", "1h").Obj()
	if err := c.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	running(t, env, own, 1)

	ref := func(apiVersion, kind, name string, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	big := func(name string, refs []metav1.OwnerReference, labels map[string]string) *corev1.Pod {
		p := MakePod(name, env.Namespace).Request("cpu", "64").Obj()
		p.OwnerReferences = refs
		for k, v := range labels {
			p.Labels[k] = v
		}
		return p
	}
	for _, tc := range []struct {
		name string
		obj  client.Object
		want string
	}{
		{"a Pod naming the user's own running Job", big("rider", ref("batch/v1", "Job", own.Name, string(own.UID)),
			map[string]string{batchv1.ControllerUidLabel: string(own.UID), batchv1.JobNameLabel: own.Name}),
			"Pod rider: metadata.ownerReferences: its controller is Job own, but only the Job controller makes the Pods of a Job (not mallory)"},
		{"a Pod naming a Job that does not exist", big("ghost", ref("batch/v1", "Job", "ghost", "0f0f0f0f-0000-0000-0000-000000000000"), nil),
			"only the Job controller makes the Pods of a Job"},
		{"a Job naming a JobSet", func() client.Object {
			j := MakeJob("child", env.Namespace).Request("cpu", "64").Obj()
			j.OwnerReferences = ref(jobsetv1.SchemeGroupVersion.String(), "JobSet", "nothing", "0f0f0f0f-0000-0000-0000-000000000001")
			return j
		}(), "Job child: metadata.ownerReferences: its controller is JobSet nothing, but only the JobSet controller makes the Jobs of a JobSet"},
	} {
		err := c.Create(ctx, tc.obj)
		refused(t, tc.name, err, tc.want)
	}
	// A Pod that asks for a queue itself is vouched for the same way: the
	// owner reference would let it skip that queue.
	pod := big("labelled-rider", ref("batch/v1", "Job", own.Name, string(own.UID)), map[string]string{berthv1.QueueNameLabel: "default"})
	refused(t, "a labelled Pod naming the user's own Job", c.Create(ctx, pod), "only the Job controller makes the Pods of a Job")
	holds(t, env, cqs[0], flavor, 1, "1")
}

// Where queueing is enforced, a Job cannot be taken out of its queue: a
// user who suspends it and takes its queue label off (which the guard lets
// them do in an update that suspends it, to move it) finds it queued in LocalQueue
// "default" again, in the same write, so starting it again waits for an
// admission. (Before, the Job then ran unqueued.)
func TestEnforcedNamespaceKeepsJobsQueued(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	queues(t, env, "default", "other")
	enforce(t, env)
	j := MakeJob("train", env.Namespace).Queue("other").Parallelism(2).Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", "1h").Obj()
	if err := c.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	running(t, env, j, 2)
	if err := edit(c, j, func(j *batchv1.Job) {
		j.Spec.Suspend = ptr.To(true)
		delete(j.Labels, berthv1.QueueNameLabel)
	}); err != nil {
		t.Fatalf("suspending a running Job and taking its queue label off: %v", err)
	}
	if why := held(j); why != "" {
		t.Fatalf("after its label was taken off: %s", why)
	}
	// Its user starts it: refused, it is queued again.
	refused(t, "the Job started by its user", edit(c, j, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(false) }), "spec.suspend")
	// berth starts it, in the default queue.
	wl := running(t, env, j, 2)
	if wl.Spec.QueueName != "default" {
		t.Errorf("Workload in LocalQueue %s, want default", wl.Spec.QueueName)
	}
}
