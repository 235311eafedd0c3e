package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/placement"
	"github.com/berth-dev/berth/internal/integration/trainjobs"
	"github.com/berth-dev/berth/internal/manifests"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// trainerEditors lets the edit role write TrainJobs, as Trainer's own
// install does for its users.
func trainerEditors(t *testing.T, env *testenv.Env) {
	t.Helper()
	editors := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "trainjob-edit",
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{trainerv1.GroupVersion.Group}, Resources: []string{"trainjobs"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if err := env.Client.Create(ctx, editors); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// jobSetEditors lets the edit role write JobSets too: a user who may would
// still not start a TrainJob's.
func jobSetEditors(t *testing.T, env *testenv.Env) {
	t.Helper()
	editors := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "jobset-edit",
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{jobsetv1.GroupVersion.Group}, Resources: []string{"jobsets"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if err := env.Client.Create(ctx, editors); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// trainJob is a TrainJob of the plain runtime in LocalQueue queue: nodes
// pods of 1 cpu that run for runFor on simulated nodes.
func trainJob(env *testenv.Env, name, queue string, nodes int32, runFor string) *trainerv1.TrainJob {
	return MakeTrainJob(name, env.Namespace, "plain").Queue(queue).Nodes(nodes).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", runFor).Obj()
}

// trainJobWorkload waits for tj's Workload to satisfy ok, and returns it.
func trainJobWorkload(t *testing.T, env *testenv.Env, tj *trainerv1.TrainJob, what string, ok func(*berthv1.Workload) bool) *berthv1.Workload {
	t.Helper()
	var wl berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		var now trainerv1.TrainJob
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), &now); err != nil {
			return err
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: trainjobs.WorkloadName(&now)}, &wl); err != nil {
			return err
		}
		if !ok(&wl) {
			return fmt.Errorf("TrainJob %s: its Workload is not %s: %+v", tj.Name, what, wl.Status.Conditions)
		}
		return nil
	})
	return &wl
}

// trainJobPods waits until tj's pods are n, all running, on nodes of pool,
// each found to be its Workload's (as the dashboard lists them).
func trainJobPods(t *testing.T, env *testenv.Env, tj *trainerv1.TrainJob, pool string, n int) {
	t.Helper()
	var now trainerv1.TrainJob
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), &now); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace), client.MatchingLabels{jobsetv1.JobSetNameKey: tj.Name}); err != nil {
			return err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			var node corev1.Node
			if err := env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node); err != nil {
				return err
			}
			if node.Labels["example.com/pool"] != pool {
				return fmt.Errorf("pod %s runs on %s, not a node of the flavor's pool %s", p.Name, p.Spec.NodeName, pool)
			}
			if key, _ := placement.PodWorkload(&p); key.Name != trainjobs.WorkloadName(&now) {
				t.Fatalf("pod %s is found to be Workload %q's, not its TrainJob's %s", p.Name, key.Name, trainjobs.WorkloadName(&now))
			}
			running++
		}
		if running != n {
			return fmt.Errorf("TrainJob %s: %d of %d pods running", tj.Name, running, n)
		}
		return nil
	})
}

// A TrainJob, queued by berth with Kubeflow Trainer running (berth up
// --with trainer), is one Workload of the pods its runtime and its trainer
// settings make: held until they fit, then run on its flavor's nodes (its
// pods reach them only through the flavor's toleration). A namespace user
// cannot start a waiting one, nor its JobSet, nor make a JobSet in a
// TrainJob's name. Preempted, a running one is suspended and gives its
// quota back once its pods are gone, waits whole, and runs again once the
// one that took its place has run to its end.
func TestTrainJobIsQueuedWholeAndRunsOnItsFlavor(t *testing.T) {
	env := testenv.New(t)
	trainerEditors(t, env)
	jobSetEditors(t, env)
	c := env.AsEditor(t, mallory)
	flavor, cqs := queues(t, env, "main")
	pool := env.Name("pool")
	env.Create(t, MakeTrainingRuntime("plain", env.Namespace))

	first := trainJob(env, "first", "main", 3, "1h")
	testenv.Eventually(t, wait, func() error { return c.Create(ctx, first) }) // once the edit role has TrainJobs
	if !trainjobs.Suspended(first) {
		t.Fatal("a queued TrainJob was not created suspended")
	}
	wl := trainJobWorkload(t, env, first, "admitted", workload.IsAdmitted)
	if len(wl.Spec.PodSets) != 1 || wl.Spec.PodSets[0].Name != "node" || wl.Spec.PodSets[0].Count != 3 ||
		wl.Spec.PodSets[0].Requests.Cpu().String() != "1" {
		t.Fatalf("Workload %s asks for %+v; want pod set node of 3 pods of 1 cpu (the runtime's Job, the TrainJob's 3 nodes)", wl.Name, wl.Spec.PodSets)
	}
	trainJobPods(t, env, first, pool, 3)
	holds(t, env, cqs[0], flavor, 1, "3")
	// Running, it keeps what Trainer makes its JobSet from: grown at the
	// moment berth lets it go, Trainer would start the JobSet as it then
	// says.
	refused(t, "a running TrainJob grown", edit(c, first, func(tj *trainerv1.TrainJob) { tj.Spec.Trainer.NumNodes = ptr.To(int32(8)) }),
		"spec.trainer: may change on a queued TrainJob only in an update that leaves it suspended")
	refused(t, "a running TrainJob's overrides changed", edit(c, first, func(tj *trainerv1.TrainJob) { tj.Spec.PodTemplateOverrides = nil }),
		"spec.podTemplateOverrides: may change on a queued TrainJob only in an update that leaves it suspended")

	high := env.Name("high")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: high}, Value: 100})
	second := trainJob(env, "second", "main", 2, "1s")
	second.Labels[berthv1.PriorityClassLabel] = high
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	trainJobWorkload(t, env, second, "pending for 2 pods", func(wl *berthv1.Workload) bool {
		return !workload.HasQuota(wl) && len(wl.Spec.PodSets) == 1 && wl.Spec.PodSets[0].Count == 2
	})
	// berth why explains the waiting TrainJob, and, asked about its JobSet,
	// points at the TrainJob.
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	why, err := exec.Command(bin, "why", "trainjob", second.Name, "-n", env.Namespace, "--kubeconfig", env.Kubeconfig).CombinedOutput()
	if err != nil || !strings.Contains(string(why), "trainjob-second-") || !strings.Contains(string(why), "node") {
		t.Errorf("berth why trainjob %s: %v\n%s", second.Name, err, why)
	}
	why, err = exec.Command(bin, "why", "jobset", second.Name, "-n", env.Namespace, "--kubeconfig", env.Kubeconfig).CombinedOutput()
	if err == nil || !strings.Contains(string(why), "has no Workload of its own: it is queued with its TrainJob second") {
		t.Errorf("berth why jobset %s: %v\n%s", second.Name, err, why)
	}
	refused(t, "a waiting TrainJob started", edit(c, second, func(tj *trainerv1.TrainJob) { tj.Spec.Suspend = ptr.To(false) }),
		"spec.suspend")
	// Waiting, its user may still change it, and Trainer makes its JobSet
	// again as it now says.
	if err := edit(c, second, func(tj *trainerv1.TrainJob) {
		tj.Spec.PodTemplateOverrides = append(tj.Spec.PodTemplateOverrides, trainerv1.PodTemplateOverride{
			TargetJobs: []trainerv1.PodTemplateOverrideTargetJob{{Name: "node"}},
			Metadata:   &metav1.ObjectMeta{Annotations: map[string]string{"example.com/note": "edited"}}})
	}); err != nil {
		t.Fatalf("a waiting TrainJob's overrides changed by its user: %v", err)
	}
	testenv.Eventually(t, wait, func() error {
		var js jobsetv1.JobSet
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), &js); err != nil {
			return err
		}
		if a := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations; a["example.com/note"] != "edited" {
			return fmt.Errorf("the waiting TrainJob's JobSet is not made again from its edit: annotations %v", a)
		}
		return nil
	})
	var js jobsetv1.JobSet
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), &js); err != nil {
		t.Fatal(err)
	}
	refused(t, "a waiting TrainJob's JobSet started", edit(c, &js, func(js *jobsetv1.JobSet) { js.Spec.Suspend = ptr.To(false) }),
		"JobSet "+js.Name+": spec.suspend: a TrainJob's JobSet is started by the TrainJob's controller")

	// Where everything is queued, a JobSet in a TrainJob's name would be
	// queued with it: only Trainer makes one.
	enforce(t, env)
	forged := js.DeepCopy()
	forged.ObjectMeta = metav1.ObjectMeta{Name: "forged", Namespace: env.Namespace, OwnerReferences: js.OwnerReferences}
	forged.Spec.Suspend = ptr.To(false)
	forged.Status = jobsetv1.JobSetStatus{}
	refused(t, "a JobSet in a TrainJob's name", c.Create(ctx, forged), "only the TrainJob controller makes the JobSets of a TrainJob")

	// Preemption turned on, the second, of a higher priority, takes the
	// first's place: the first is suspended, gives its quota back once its
	// pods are gone, and waits again whole; the second runs to its end and
	// the first runs again.
	var q berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cqs[0]}, &q); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(q.DeepCopy())
	q.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: berthv1.PreemptionLowerPriority}
	if err := env.Client.Patch(ctx, &q, patch); err != nil {
		t.Fatal(err)
	}
	trainJobWorkload(t, env, second, "finished", workload.IsFinished)
	trainJobWorkload(t, env, first, "admitted again", func(wl *berthv1.Workload) bool {
		rs := wl.Status.RequeueState
		return workload.IsAdmitted(wl) && rs != nil && rs.Count != nil && *rs.Count == 1
	})
	trainJobPods(t, env, first, pool, 3)
	holds(t, env, cqs[0], flavor, 1, "3")
	var done trainerv1.TrainJob
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), &done); err != nil {
		t.Fatal(err)
	}
	if finished, failed := trainjobs.Finished(&done); !finished || failed {
		t.Errorf("TrainJob second: finished %v, failed %v; want it complete", finished, failed)
	}
}

// examples/trainjob.yaml runs as written (its runtime and TrainJob, here in
// the test's namespace and queue): admitted whole for its 2 nodes, on its
// flavor's nodes.
func TestTheTrainJobExampleRuns(t *testing.T) {
	env := testenv.New(t)
	pool, flavor, cq := env.Name("pool"), env.Name("rf"), env.Name("main")
	env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	env.Create(t, MakeResourceFlavor(flavor).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(flavor).Resource("cpu", "4").Resource("memory", "8Gi").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	data, err := os.ReadFile("../../examples/trainjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var tj *trainerv1.TrainJob
	for _, o := range objs {
		o.SetNamespace(env.Namespace)
		if o.GetKind() == trainerv1.TrainJobKind {
			o.SetLabels(map[string]string{berthv1.QueueNameLabel: "main"})
			tj = &trainerv1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: env.Namespace}}
		}
		env.Create(t, o)
	}
	if tj == nil {
		t.Fatal("examples/trainjob.yaml has no TrainJob")
	}
	wl := trainJobWorkload(t, env, tj, "admitted", workload.IsAdmitted)
	if len(wl.Spec.PodSets) != 1 || wl.Spec.PodSets[0].Count != 2 {
		t.Errorf("the example's Workload asks for %+v; want its 2 nodes", wl.Spec.PodSets)
	}
	trainJobPods(t, env, tj, pool, 2)
	holds(t, env, cq, flavor, 1, "2")
}

// A TrainJob whose nodes require a rack (an override's annotation) runs
// with every node in one rack of a flavor with a topology: its pods are
// gated until berth gives each a domain; one of more nodes than a rack
// holds waits suspended, saying why, though the quota has room.
func TestATrainJobsNodesArePlacedInOneRack(t *testing.T) {
	env := testenv.New(t)
	const rackLabel = "topology.berth.dev/rack"
	pool := env.Name("racks")
	rackOf := map[string]string{}
	for r := range 2 {
		for h := range 3 {
			name := env.Name(fmt.Sprintf("r%d-h%d", r, h))
			env.CreateSimNode(t, name, map[string]string{"example.com/pool": pool, rackLabel: fmt.Sprint("r", r)})
			rackOf[name] = fmt.Sprint("r", r)
		}
	}
	topo := &berthv1.Topology{Spec: berthv1.TopologySpec{Levels: []berthv1.TopologyLevel{
		{NodeLabel: rackLabel}, {NodeLabel: "kubernetes.io/hostname"}}}}
	topo.Name = env.Name("dc")
	env.Create(t, topo)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Topology(topo.Name).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1000").Obj()).Obj())
	env.Create(t, MakeLocalQueue("racks", env.Namespace, cq).Obj())
	env.Create(t, MakeTrainingRuntime("plain", env.Namespace))

	// 4 nodes of 4 cpu: a rack (3 nodes of 8 cpu) holds them, a host two.
	tj := MakeTrainJob("fits", env.Namespace, "plain").Queue("racks").Nodes(4).Request("cpu", "4").
		PodAnnotation("berth.dev/sim-duration", "1h").PodAnnotation("berth.dev/podset-required-topology", rackLabel).Obj()
	env.Create(t, tj)
	wl := trainJobWorkload(t, env, tj, "admitted", workload.IsAdmitted)
	if ta := wl.Status.Admission.PodSetAssignments[0].TopologyAssignment; ta == nil || len(ta.Levels) != 2 {
		t.Errorf("admission %+v: want a topology assignment over racks and hosts", wl.Status.Admission)
	}
	testenv.Eventually(t, wait, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace), client.MatchingLabels{jobsetv1.JobSetNameKey: tj.Name}); err != nil {
			return err
		}
		racks := map[string]bool{}
		var states []string
		for _, p := range list.Items {
			states = append(states, fmt.Sprintf("%s gates=%v node=%q %s", p.Name, p.Spec.SchedulingGates, p.Spec.NodeName, p.Status.Phase))
			if p.Status.Phase == corev1.PodRunning {
				racks[rackOf[p.Spec.NodeName]] = true
			}
		}
		if len(list.Items) != 4 || len(racks) != 1 || racks[""] {
			return fmt.Errorf("TrainJob %s: want 4 pods running in one rack, have racks %v: %v", tj.Name, racks, states)
		}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("TrainJob %s: not all running: %v", tj.Name, states)
			}
		}
		return nil
	})

	// 7 nodes of 4 cpu: no rack holds them.
	big := MakeTrainJob("big", env.Namespace, "plain").Queue("racks").Nodes(7).Request("cpu", "4").
		PodAnnotation("berth.dev/podset-required-topology", rackLabel).Obj()
	env.Create(t, big)
	trainJobWorkload(t, env, big, "pending on the topology", func(w *berthv1.Workload) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "needs 7 pods of 4 cpu in one "+rackLabel)
	})
	var now trainerv1.TrainJob
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(big), &now); err != nil || !trainjobs.Suspended(&now) {
		t.Errorf("the TrainJob no rack holds is not suspended (%v)", err)
	}
}
