package podsready

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/podgroups"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/integration/trainjobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
	"github.com/berth-dev/berth/test/standin"
)

// The controller's rules here: short, so a test sees several tries, yet
// long enough for pods that can run to be Ready on a busy machine.
const (
	timeout     = 10 * time.Second
	backoffBase = 2 * time.Second
	limit       = 3
	wait        = 90 * time.Second
	// failureDelay: a node not Ready this long is taken for failed.
	failureDelay = 3 * time.Second
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	// MPIJob, queued from configuration (its CRD installed by its test);
	// TrainJobs, with Trainer (which brings JobSet).
	kinds, err := filepath.Abs("../../examples/configured/kinds.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(testenv.MainClusters(m, testenv.Cluster{Name: "podsready", ControllerArgs: []string{
		"--wait-for-pods-ready", "--pods-ready-timeout=" + timeout.String(),
		"--pods-ready-backoff-base=" + backoffBase.String(), "--pods-ready-backoff-max=" + (2 * backoffBase).String(),
		fmt.Sprintf("--pods-ready-requeue-limit=%d", limit), "--pods-ready-block-admission",
		"--node-failure-delay=" + failureDelay.String()}, With: []string{"trainer"},
		ConfiguredKinds: kinds}))
}

// A kind queued from configuration (MPIJob, with a stand-in for its
// operator) starts all or nothing too: three workers of 3 cpu on one node
// of 8, two run and one stays Pending; at the timeout it is evicted,
// suspended, and its quota given back once its pods are gone; with room on a
// second node it is admitted again, its pods all Ready, and keeps its quota.
func TestAConfiguredKindsPodsMustAllBeReady(t *testing.T) {
	env := testenv.New(t)
	standin.InstallCRD(t, env, standin.MPIJobCRD, standin.MPIJobHook)
	queue(t, env, "10")
	standin.StartMPIOperator(t, env)
	job := standin.MPIJob("gang", env.Namespace, "main", "", 3, "3", 10*time.Minute, env.Toleration())
	launcher, _, _ := unstructured.NestedSlice(job.Object, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers")
	launcher[0].(map[string]any)["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m"}}
	_ = unstructured.SetNestedSlice(job.Object, launcher, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers")
	env.Create(t, job)
	key := types.NamespacedName{Namespace: env.Namespace, Name: configured.WorkloadNameFor("MPIJob", job.GetName(), job.GetUID())}

	w := waitFor(t, env, key, "evicted for its pods", func(w *berthv1.Workload) bool {
		return workload.PodsReadyTimeouts(w) == 1 && !workload.HasQuota(w)
	})
	c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady)
	if c == nil || c.Status != "False" || c.Reason != workload.PodsReadyTimeout {
		t.Fatalf("PodsReady after the timeout: %+v", c)
	}
	now := job.DeepCopy()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), now); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := unstructured.NestedBool(now.Object, "spec", "runPolicy", "suspend"); !held {
		t.Fatal("the evicted MPIJob is not suspended")
	}

	env.CreateSimNode(t, env.Name("n2"), nil)
	w = waitFor(t, env, key, "all pods Ready", func(w *berthv1.Workload) bool {
		return workload.IsAdmitted(w) && workload.PodsReady(w)
	})
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); !strings.Contains(c.Message, "4 of 4 pods Ready") {
		t.Errorf("PodsReady says %q", c.Message)
	}
	testenv.Consistently(t, timeout+time.Second, func() error {
		w, err := get(env, key)
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(w) || workload.IsStopping(w) {
			return fmt.Errorf("an MPIJob with all pods Ready lost its admission: %s", describe(w))
		}
		return nil
	})
}

// A gang of three pods of 3 cpu on one node of 8 cpu: two run, the third
// stays Pending. It is evicted after the timeout and queues again after a
// backoff; meanwhile a Job that fits uses the quota and finishes; after the
// third timeout the gang is deactivated and says why; resumed, with room on
// a second node, its pods are all Ready and it keeps its quota.
func TestAGangThatCannotStartGivesItsQuotaBack(t *testing.T) {
	env := testenv.New(t)
	queue(t, env, "9")

	gang := MakeJob("gang", env.Namespace).Queue("main").Parallelism(3).Request("cpu", "3").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	env.Create(t, gang)
	gwl := jobWorkload(t, env, "gang")
	waitFor(t, env, gwl, "admitted", func(w *berthv1.Workload) bool { return workload.IsAdmitted(w) })
	waitPods(t, env, "gang", 2, 1)

	// Queued behind the gang: 6 cpu, and the gang holds 9 of 9.
	other := MakeJob("other", env.Namespace).Queue("main").Parallelism(2).Request("cpu", "3").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "2s").Obj()
	env.Create(t, other)
	owl := jobWorkload(t, env, "other")

	// First timeout: evicted, its quota given back once its pods are gone.
	w := waitFor(t, env, gwl, "evicted for its pods", func(w *berthv1.Workload) bool {
		return workload.PodsReadyTimeouts(w) == 1 && !workload.HasQuota(w)
	})
	c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady)
	if c == nil || c.Status != "False" || c.Reason != workload.PodsReadyTimeout || !strings.Contains(c.Message, "not all Ready within "+timeout.String()) {
		t.Fatalf("PodsReady after the timeout: %+v", c)
	}
	evicted := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted)
	if at := w.Status.RequeueState.RequeueAt; at == nil || at.Sub(evicted.LastTransitionTime.Time) < backoffBase-time.Second {
		t.Fatalf("requeue at %v after an eviction at %v, want a backoff of %s", at, evicted.LastTransitionTime, backoffBase)
	}
	// The quota it gave back runs the other Job to the end meanwhile.
	waitFor(t, env, owl, "finished", func(w *berthv1.Workload) bool { return workload.IsFinished(w) })

	// Two more tries, then it is deactivated and says why.
	w = waitFor(t, env, gwl, "deactivated after 3 timeouts", func(w *berthv1.Workload) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved)
		return !workload.IsActive(w) && !workload.HasQuota(w) && c != nil && c.Reason == "Deactivated"
	})
	if n := workload.PodsReadyTimeouts(w); n != limit {
		t.Fatalf("%d timeouts counted, want %d", n, limit)
	}
	if msg := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved).Message; !strings.Contains(msg, "3 times") ||
		!strings.Contains(msg, "berth resume") {
		t.Fatalf("the deactivated workload says %q", msg)
	}
	waitPods(t, env, "gang", 0, 0)
	why := berth(t, env, "why", "job", "gang", "-n", env.Namespace)
	if !strings.Contains(why, "Deactivated") || !strings.Contains(why, "not all Ready within "+timeout.String()) {
		t.Fatalf("berth why for the deactivated gang:\n%s", why)
	}

	// Room for all three, and resumed: its tries start again, its pods are
	// all Ready, and it keeps its quota past the timeout.
	env.CreateSimNode(t, env.Name("n2"), nil)
	berth(t, env, "resume", "job", "gang", "-n", env.Namespace)
	waitFor(t, env, gwl, "all pods Ready", func(w *berthv1.Workload) bool {
		return workload.IsAdmitted(w) && workload.PodsReady(w) && workload.PodsReadyTimeouts(w) == 0
	})
	testenv.Consistently(t, timeout+time.Second, func() error {
		w, err := get(env, gwl)
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(w) || workload.IsStopping(w) {
			return fmt.Errorf("a gang with all pods Ready lost its admission: %s", describe(w))
		}
		return nil
	})
	why = berth(t, env, "why", "job", "gang", "-n", env.Namespace)
	if !strings.Contains(why, "3 of 3 pods Ready") {
		t.Fatalf("berth why for the running gang:\n%s", why)
	}
}

// With --pods-ready-block-admission a ClusterQueue admits nothing while a
// Job it admitted has pods not Ready, though its quota has room: until that
// Job is evicted for its timeout, or its pods are all Ready.
func TestAdmissionWaitsForTheGangsPods(t *testing.T) {
	env := testenv.New(t)
	queue(t, env, "20")
	job := func(name string, pods int32, cpu string) types.NamespacedName {
		env.Create(t, MakeJob(name, env.Namespace).Queue("main").Parallelism(pods).Request("cpu", cpu).
			Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj())
		return jobWorkload(t, env, name)
	}

	gang := job("gang", 3, "3") // two of its pods fit on n1
	waitFor(t, env, gang, "admitted", func(w *berthv1.Workload) bool { return workload.IsAdmitted(w) })
	small := job("small", 1, "1")
	waitFor(t, env, small, "blocked by the gang's pods", func(w *berthv1.Workload) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved)
		return c != nil && c.Status == "False" && c.Reason == "WaitingForPodsReady" &&
			strings.Contains(c.Message, "admits nothing until the pods of the 1 workload(s) it admitted are all Ready")
	})
	// The gang's timeout lets it in.
	waitFor(t, env, gang, "evicted", func(w *berthv1.Workload) bool { return workload.PodsReadyTimeouts(w) == 1 })
	waitFor(t, env, small, "admitted, its pod Ready", func(w *berthv1.Workload) bool { return workload.PodsReady(w) })

	// Room for the gang on a second node: readmitted, it blocks a Job
	// created meanwhile until its pods are all Ready.
	env.CreateSimNode(t, env.Name("n2"), nil)
	waitFor(t, env, gang, "admitted again", func(w *berthv1.Workload) bool { return workload.IsAdmitted(w) })
	late := job("late", 1, "1")
	g := waitFor(t, env, gang, "all pods Ready", func(w *berthv1.Workload) bool { return workload.PodsReady(w) })
	l := waitFor(t, env, late, "admitted", func(w *berthv1.Workload) bool { return workload.IsAdmitted(w) })
	ready := meta.FindStatusCondition(g.Status.Conditions, berthv1.WorkloadPodsReady).LastTransitionTime
	admitted := meta.FindStatusCondition(l.Status.Conditions, berthv1.WorkloadQuotaReserved).LastTransitionTime
	if admitted.Before(&ready) {
		t.Fatalf("a Job was admitted at %v, before the gang ahead of it had all its pods Ready at %v", admitted, ready)
	}
}

// A JobSet is timed as a Job is: a driver and two workers of 3 cpu on one
// node of 8 cpu cannot all start, so it is evicted after the timeout,
// suspended, and gives its quota back; with room on a second node it is
// admitted again after its backoff and its pods are all Ready.
func TestAJobSetThatCannotStartGivesItsQuotaBack(t *testing.T) {
	env := testenv.New(t)
	queue(t, env, "9")
	js := MakeJobSet("train", env.Namespace).Queue("main").
		ReplicatedJob("driver", 1, 1).Request("cpu", "3").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").
		ReplicatedJob("workers", 2, 1).Request("cpu", "3").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	env.Create(t, js)
	var key types.NamespacedName
	testenv.Eventually(t, wait, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace),
			client.MatchingLabels{jobsets.NameLabel: "train"}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d workloads for JobSet train, want 1", len(list.Items))
		}
		key = client.ObjectKeyFromObject(&list.Items[0])
		return nil
	})
	waitFor(t, env, key, "admitted", func(w *berthv1.Workload) bool { return workload.IsAdmitted(w) })

	w := waitFor(t, env, key, "evicted for its pods", func(w *berthv1.Workload) bool {
		return workload.PodsReadyTimeouts(w) == 1 && !workload.HasQuota(w)
	})
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c == nil || c.Reason != workload.PodsReadyTimeout {
		t.Fatalf("PodsReady after the timeout: %+v", c)
	}
	var got jobsetv1.JobSet
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil || !jobsets.Suspended(&got) {
		t.Fatalf("the evicted JobSet is not suspended (%v)", err)
	}

	env.CreateSimNode(t, env.Name("n2"), nil)
	w = waitFor(t, env, key, "all pods Ready", func(w *berthv1.Workload) bool {
		return workload.IsAdmitted(w) && workload.PodsReady(w)
	})
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c.Message != "3 of 3 Jobs with all their pods Ready or succeeded" {
		t.Errorf("PodsReady says %q", c.Message)
	}
}

// A TrainJob is timed as its JobSet is: three nodes of 3 cpu on one node of
// 8 cpu cannot all start, so it is evicted after the timeout, suspended
// (Trainer suspends its JobSet), and gives its quota back; with room on a
// second node it is admitted again and its pods are all Ready.
func TestATrainJobThatCannotStartGivesItsQuotaBack(t *testing.T) {
	env := testenv.New(t)
	queue(t, env, "9")
	env.Create(t, MakeTrainingRuntime("plain", env.Namespace))
	tj := MakeTrainJob("train", env.Namespace, "plain").Queue("main").Nodes(3).Request("cpu", "3").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	env.Create(t, tj)
	key := types.NamespacedName{Namespace: env.Namespace, Name: trainjobs.WorkloadName(tj)}
	waitFor(t, env, key, "admitted", func(w *berthv1.Workload) bool { return workload.IsAdmitted(w) })

	w := waitFor(t, env, key, "evicted for its pods", func(w *berthv1.Workload) bool {
		return workload.PodsReadyTimeouts(w) == 1 && !workload.HasQuota(w)
	})
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c == nil || c.Reason != workload.PodsReadyTimeout {
		t.Fatalf("PodsReady after the timeout: %+v", c)
	}
	var got trainerv1.TrainJob
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), &got); err != nil || !trainjobs.Suspended(&got) {
		t.Fatalf("the evicted TrainJob is not suspended (%v)", err)
	}

	env.CreateSimNode(t, env.Name("n2"), nil)
	w = waitFor(t, env, key, "all pods Ready", func(w *berthv1.Workload) bool {
		return workload.IsAdmitted(w) && workload.PodsReady(w)
	})
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c.Message != "1 of 1 Jobs with all their pods Ready or succeeded" {
		t.Errorf("PodsReady says %q", c.Message)
	}
}

// A StatefulSet's pod group is timed too: three replicas of 3 cpu on one
// node of 8 cpu cannot all start, so its group is evicted after the
// timeout, its pods deleted; the StatefulSet makes them again and the same
// Workload queues again after its backoff; with room on a second node its
// pods are all Ready.
func TestAStatefulSetThatCannotStartGivesItsQuotaBack(t *testing.T) {
	env := testenv.New(t)
	queue(t, env, "9")
	replicas := int32(3)
	labels := map[string]string{"app": "db"}
	db := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: env.Namespace, Labels: map[string]string{berthv1.QueueNameLabel: "main"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, PodManagementPolicy: appsv1.ParallelPodManagement, ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"berth.dev/sim-duration": "10m"}},
				Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{env.Toleration()}, Containers: []corev1.Container{{Name: "main", Image: "db",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("3")}}}}},
			},
		},
	}
	env.Create(t, db)
	key := types.NamespacedName{Namespace: env.Namespace, Name: podgroups.WorkloadName(pods.StatefulSetGroup("db"))}
	first := waitFor(t, env, key, "admitted", func(w *berthv1.Workload) bool { return workload.IsAdmitted(w) })

	w := waitFor(t, env, key, "evicted for its pods", func(w *berthv1.Workload) bool {
		return workload.PodsReadyTimeouts(w) == 1 && !workload.HasQuota(w)
	})
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c == nil || c.Reason != workload.PodsReadyTimeout {
		t.Fatalf("PodsReady after the timeout: %+v", c)
	}
	if w.UID != first.UID {
		t.Fatal("the group's Workload was made again; want the same one queued again, counting its timeouts")
	}

	env.CreateSimNode(t, env.Name("n2"), nil)
	w = waitFor(t, env, key, "all pods Ready", func(w *berthv1.Workload) bool {
		return workload.IsAdmitted(w) && workload.PodsReady(w)
	})
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c.Message != "3 of 3 pods Ready" || workload.PodsReadyTimeouts(w) < 1 {
		t.Errorf("PodsReady says %q after %d timeouts", c.Message, workload.PodsReadyTimeouts(w))
	}
}

// queue makes one simulated node of 8 cpu for the test, and LocalQueue
// main of a ClusterQueue with cpu of quota.
func queue(t *testing.T, env *testenv.Env, cpu string) {
	t.Helper()
	env.CreateSimNode(t, env.Name("n1"), nil)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", cpu).Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
}

// berth runs the CLI against the control plane and returns its output.
func berth(t *testing.T, env *testenv.Env, args ...string) string {
	t.Helper()
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append(args, "--kubeconfig", env.Kubeconfig)...).CombinedOutput()
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func get(env *testenv.Env, key types.NamespacedName) (*berthv1.Workload, error) {
	var w berthv1.Workload
	err := env.Client.Get(ctx, key, &w)
	return &w, err
}

func waitFor(t *testing.T, env *testenv.Env, key types.NamespacedName, what string, ok func(*berthv1.Workload) bool) *berthv1.Workload {
	t.Helper()
	var w *berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		var err error
		if w, err = get(env, key); err != nil {
			return err
		}
		if !ok(w) {
			return fmt.Errorf("workload %s not %s: %s", key, what, describe(w))
		}
		return nil
	})
	return w
}

// jobWorkload waits for the Workload of Job name.
func jobWorkload(t *testing.T, env *testenv.Env, name string) types.NamespacedName {
	t.Helper()
	var key types.NamespacedName
	testenv.Eventually(t, wait, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace),
			client.MatchingLabels{"berth.dev/job-name": name}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d workloads for Job %s, want 1", len(list.Items), name)
		}
		key = client.ObjectKeyFromObject(&list.Items[0])
		return nil
	})
	return key
}

// waitPods waits until Job name has running Ready pods and pending ones.
func waitPods(t *testing.T, env *testenv.Env, name string, ready, pending int) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{"job-name": name}); err != nil {
			return err
		}
		r, p := 0, 0
		for _, pod := range pods.Items {
			switch {
			case pod.DeletionTimestamp != nil:
				return fmt.Errorf("pod %s is being deleted", pod.Name)
			case pod.Status.Phase == corev1.PodPending:
				p++
			case isReady(&pod):
				r++
			}
		}
		if r != ready || p != pending {
			return fmt.Errorf("Job %s: %d pods Ready and %d Pending, want %d and %d", name, r, p, ready, pending)
		}
		return nil
	})
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describe(w *berthv1.Workload) string {
	var parts []string
	if !workload.IsActive(w) {
		parts = append(parts, "inactive")
	}
	for _, c := range w.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	if rs := w.Status.RequeueState; rs != nil {
		parts = append(parts, fmt.Sprintf("requeue at %v, %d pods-ready timeouts", rs.RequeueAt, workload.PodsReadyTimeouts(w)))
	}
	return strings.Join(parts, "; ")
}
