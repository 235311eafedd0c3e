package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/placement"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// trainer is a JobSet of a driver (1 pod) and workers (2 Jobs of 1 pod),
// 1 cpu a pod, whose pods run for d on the simulator's nodes.
func trainer(env *testenv.Env, name, queue, d string) *jobsetv1.JobSet {
	return MakeJobSet(name, env.Namespace).Queue(queue).
		ReplicatedJob("driver", 1, 1).Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", d).Toleration(env.Toleration()).
		ReplicatedJob("workers", 2, 1).Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", d).Toleration(env.Toleration()).Obj()
}

func getJobSet(env *testenv.Env, name string) (*jobsetv1.JobSet, error) {
	var js jobsetv1.JobSet
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &js)
	return &js, err
}

// jobSetPods lists the pods of a JobSet, by the label its controller puts
// on them.
func jobSetPods(env *testenv.Env, name string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{jobsetv1.JobSetNameKey: name})
	return pods.Items, err
}

// waitJobSetRunning waits until the JobSet runs: unsuspended, its three
// pods bound, each to a node of the flavor (label pool=pool).
func waitJobSetRunning(t *testing.T, env *testenv.Env, name, pool string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		pods, err := jobSetPods(env, name)
		if err != nil {
			return err
		}
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
				continue
			}
			if p.Spec.NodeSelector["example.com/pool"] != pool {
				return fmt.Errorf("pod %s has node selector %v, not its flavor's", p.Name, p.Spec.NodeSelector)
			}
			bound++
		}
		if bound != 3 {
			return fmt.Errorf("%d of the JobSet's 3 pods bound", bound)
		}
		return nil
	})
}

// A queued JobSet goes the whole way: created suspended, one Workload with
// a pod set per replicated Job, held while the quota is short, admitted
// whole, its Jobs' pods on the flavor's nodes; deleting one gives its quota
// to the next, and one that completes finishes its Workload and frees its
// quota.
func TestJobSetRunsThroughTheQueue(t *testing.T) {
	env := testenv.New(t)
	pool := env.Name("pool")
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})

	first := trainer(env, "first", "main", "10m")
	env.Create(t, first)
	if !jobsets.Suspended(first) {
		t.Fatal("the webhook did not create the queued JobSet suspended")
	}
	wl := waitAdmitted(t, env, env.Namespace, jobsets.WorkloadName(first))
	if ps := wl.Spec.PodSets; len(ps) != 2 || ps[0].Name != "driver" || ps[0].Count != 1 || ps[1].Name != "workers" || ps[1].Count != 2 {
		t.Fatalf("pod sets %+v; want driver of 1 and workers of 2", ps)
	}
	if n := len(wl.Status.Admission.PodSetAssignments); n != 2 {
		t.Fatalf("%d pod set assignments, want 2", n)
	}
	waitJobSetRunning(t, env, "first", pool)

	// The second does not fit beside the first: it waits, suspended, its
	// Jobs made suspended by the JobSet controller, no pod of it created.
	second := trainer(env, "second", "main", "1s")
	env.Create(t, second)
	waitPending(t, env, env.Namespace, jobsets.WorkloadName(second), "")
	testenv.Eventually(t, wait, func() error {
		var children batchv1.JobList
		if err := env.Client.List(ctx, &children, client.InNamespace(env.Namespace), client.MatchingLabels{jobsetv1.JobSetNameKey: "second"}); err != nil {
			return err
		}
		if len(children.Items) != 3 {
			return fmt.Errorf("%d Jobs of the waiting JobSet, want 3 (a driver and 2 workers, suspended)", len(children.Items))
		}
		for _, j := range children.Items {
			if !jobs.Suspended(&j) {
				return fmt.Errorf("Job %s of the waiting JobSet is not suspended", j.Name)
			}
		}
		return nil
	})
	if pods, err := jobSetPods(env, "second"); err != nil || len(pods) != 0 {
		t.Fatalf("the waiting JobSet has %d pods (%v)", len(pods), err)
	}
	// berth why takes the JobSet by its name.
	berth := berthCLI(t, env)
	if out, err := berth("why", "jobset", "second", "-n", env.Namespace); err != nil ||
		!strings.Contains(out, "Workload "+env.Namespace+"/"+jobsets.WorkloadName(second)) {
		t.Errorf("berth why jobset second: %v\n%s; want its Workload explained", err, out)
	}
	// And berth stop and resume do too.
	if out, err := berth("stop", "jobset", "second", "-n", env.Namespace); err != nil || !strings.Contains(out, "stopped: it waits out of its queue") {
		t.Fatalf("berth stop jobset second: %v\n%s", err, out)
	}
	waitPending(t, env, env.Namespace, jobsets.WorkloadName(second), "deactivated (spec.active is false)")
	if out, err := berth("resume", "jobset", "second", "-n", env.Namespace); err != nil || !strings.Contains(out, "resumed: it queues again") {
		t.Fatalf("berth resume jobset second: %v\n%s", err, out)
	}

	// Deleting the first gives its quota to the second, which runs and
	// completes.
	if err := env.Client.Delete(ctx, first, client.PropagationPolicy("Foreground")); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, jobsets.WorkloadName(second))
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, jobsets.WorkloadName(second))
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			js, _ := getJobSet(env, "second")
			return fmt.Errorf("the second JobSet's Workload is not finished: %s; JobSet conditions %v", describe(wl), js.Status.Conditions)
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

// A running JobSet preempted by a higher priority is suspended, its quota
// given back only once its pods are gone, and it runs again, with its
// flavor's node selector, once the quota is free.
func TestJobSetIsPreemptedAndResumed(t *testing.T) {
	env := testenv.New(t)
	pool := env.Name("pool")
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "3").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	high := preemptLowerPriority(t, env, cq)

	low := trainer(env, "low", "main", "10m")
	env.Create(t, low)
	waitAdmitted(t, env, env.Namespace, jobsets.WorkloadName(low))
	waitJobSetRunning(t, env, "low", pool)

	urgent := MakeJob("urgent", env.Namespace).Queue("main").Label(berthv1.PriorityClassLabel, high).Request("cpu", "2").
		PodAnnotation("berth.dev/sim-duration", "3s").Toleration(env.Toleration()).Obj()
	env.Create(t, urgent)
	urgentWl := jobWorkload(t, env, urgent)
	waitAdmitted(t, env, env.Namespace, urgentWl.Name)
	// Admitted only once the JobSet's pods were gone: never both at once.
	js, err := getJobSet(env, "low")
	if err != nil {
		t.Fatal(err)
	}
	if !jobsets.Suspended(js) || jobsets.Injected(js) {
		t.Errorf("the preempted JobSet: suspended %v, templates still carry the flavor's settings %v", jobsets.Suspended(js), jobsets.Injected(js))
	}
	if pods, err := jobSetPods(env, "low"); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				t.Errorf("pod %s of the preempted JobSet still runs (%s, created %s) though its quota went to another", p.Name, p.Status.Phase, p.CreationTimestamp)
			}
		}
	}
	// The urgent Job ends; the JobSet runs again.
	waitAdmitted(t, env, env.Namespace, jobsets.WorkloadName(low))
	waitJobSetRunning(t, env, "low", pool)
}

// What berth cannot queue as asked is refused at creation, naming the
// field: a queue asked for on a replicated Job's pods (they would run
// unqueued), and a wrong topology request.
func TestJobSetsBerthCannotQueueAreRefused(t *testing.T) {
	env := testenv.New(t)
	onPods := MakeJobSet("on-pods", env.Namespace).ReplicatedJob("w", 1, 1).PodLabel(berthv1.QueueNameLabel, "main").Obj()
	err := env.Client.Create(ctx, onPods)
	if err == nil || !strings.Contains(err.Error(), "template.spec.template.metadata.labels asks for LocalQueue main") {
		t.Errorf("a JobSet asking for a queue on its pods: %v", err)
	}
	topo := MakeJobSet("topo", env.Namespace).Queue("main").ReplicatedJob("w", 1, 1).
		PodAnnotation(integration.RequiredTopologyAnnotation, "").Obj()
	err = env.Client.Create(ctx, topo)
	if err == nil || !strings.Contains(err.Error(), "spec.replicatedJobs[0] (w).template.spec.template.metadata.annotations: annotation berth.dev/podset-required-topology is empty") {
		t.Errorf("a JobSet asking for topology wrongly: %v", err)
	}
	var list jobsetv1.JobSetList
	if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil || len(list.Items) != 0 {
		t.Errorf("%d JobSets exist after the refusals (%v)", len(list.Items), err)
	}
}

// `berth status` says which kinds the controller queues: with the JobSet
// controller's CRD installed, JobSets too.
func TestStatusListsTheIntegrationsOn(t *testing.T) {
	env := testenv.New(t)
	if env.Instance == nil {
		t.Skip("BERTH_TEST_KUBECONFIG names the cluster: no instance to ask berth status about")
	}
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "status", "--data-dir", env.Instance.Layout().Dir, "--name", "testenv").CombinedOutput()
	if err != nil {
		t.Fatalf("berth status: %v\n%s", err, out)
	}
	if want := "integrations on: batch/job, pod, deployment, statefulset, jobset.x-k8s.io/jobset, leaderworkerset.x-k8s.io/leaderworkerset\n"; !strings.Contains(string(out), want) {
		t.Errorf("berth status lacks %q:\n%s", want, out)
	}
}

// Each replicated Job is placed as it asks: on 2 racks of 3 hosts of 8
// cpu, a JobSet's 2 worker Jobs of 2 pods of 4 cpu (16 cpu) that require a
// rack all run in one rack, and its driver, which prefers a host, on one;
// the Workload's admission places each pod set.
func TestJobSetReplicatedJobPlacedInOneRack(t *testing.T) {
	env := testenv.New(t)
	rackOf, _ := topologyQueue(t, env, 1, 2, 3)
	js := MakeJobSet("train", env.Namespace).Queue("main").
		ReplicatedJob("driver", 1, 1).Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", "1h").
		PodAnnotation(integration.PreferredTopologyAnnotation, hostLabel).
		ReplicatedJob("workers", 2, 2).Request("cpu", "4").PodAnnotation("berth.dev/sim-duration", "1h").
		PodAnnotation(integration.RequiredTopologyAnnotation, rackLabel).Obj()
	env.Create(t, js)
	wl := waitAdmitted(t, env, env.Namespace, jobsets.WorkloadName(js))
	if psa := wl.Status.Admission.PodSetAssignments; len(psa) != 2 || psa[0].TopologyAssignment == nil || psa[1].TopologyAssignment == nil {
		t.Fatalf("pod set assignments %+v: want both placed", psa)
	}
	testenv.Eventually(t, wait, func() error {
		pods, err := jobSetPods(env, "train")
		if err != nil {
			return err
		}
		var workers, states []string
		running := 0
		for _, p := range pods {
			states = append(states, fmt.Sprintf("%s gated=%v host=%q node=%q %s", p.Name, placement.Gated(&p),
				p.Spec.NodeSelector[hostLabel], p.Spec.NodeName, p.Status.Phase))
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			running++
			if p.Labels[jobsetv1.ReplicatedJobNameKey] == "workers" {
				workers = append(workers, p.Spec.NodeName)
			}
		}
		if running != 5 || len(workers) != 4 {
			return fmt.Errorf("%d of 5 pods running, %d of 4 workers: %v", running, len(workers), states)
		}
		if racks := distinct(workers, rackOf); len(racks) != 1 {
			return fmt.Errorf("the workers run in racks %v, want one", racks)
		}
		return nil
	})
}
