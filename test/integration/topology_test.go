package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/placement"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

const (
	blockLabel = "topology.berth.dev/block"
	rackLabel  = "topology.berth.dev/rack"
	hostLabel  = "kubernetes.io/hostname"
)

// topologyQueue makes blocks x racks x hosts simulated nodes of 8 cpu,
// labelled with their block and rack, a Topology over them, a flavor of
// them with that topology, and a ClusterQueue of plenty of cpu on it
// (LocalQueue main). It returns the rack and block of each node.
func topologyQueue(t *testing.T, env *testenv.Env, blocks, racks, hosts int) (rackOf, blockOf map[string]string) {
	t.Helper()
	pool := env.Name("pool")
	rackOf, blockOf = map[string]string{}, map[string]string{}
	for b := range blocks {
		for r := range racks {
			for h := range hosts {
				name := env.Name(fmt.Sprintf("b%d-r%d-h%d", b, r, h))
				block, rack := fmt.Sprintf("b%d", b), fmt.Sprintf("b%d-r%d", b, r)
				env.CreateSimNode(t, name, map[string]string{"example.com/pool": pool, blockLabel: block, rackLabel: rack})
				rackOf[name], blockOf[name] = rack, block
			}
		}
	}
	topo := &berthv1.Topology{Spec: berthv1.TopologySpec{Levels: []berthv1.TopologyLevel{
		{NodeLabel: blockLabel}, {NodeLabel: rackLabel}, {NodeLabel: hostLabel}}}}
	topo.Name = env.Name("dc")
	env.Create(t, topo)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Topology(topo.Name).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1000").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	return rackOf, blockOf
}

// gangJob is a Job of n pods of 4 cpu that run an hour, with one topology
// annotation.
func gangJob(env *testenv.Env, name string, n int32, annotation, level string) *batchv1.Job {
	return MakeJob(name, env.Namespace).Queue("main").Parallelism(n).Request("cpu", "4").
		PodAnnotation("berth.dev/sim-duration", "1h").PodAnnotation(annotation, level).Obj()
}

// runningPods waits until n pods of the Job run and are not going, none on
// the nodes in avoid, and returns their nodes. A Job makes the pods of a
// failed node again only after its pod failure backoff: the deadline allows
// for it.
func runningPods(t *testing.T, env *testenv.Env, job string, n int, avoid ...string) []string {
	t.Helper()
	var nodes []string
	testenv.Eventually(t, 2*time.Minute, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
			return err
		}
		nodes = nodes[:0]
		var states []string
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && !slices.Contains(avoid, p.Spec.NodeName) {
				nodes = append(nodes, p.Spec.NodeName)
			}
			why := ""
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
					why = c.Message
				}
			}
			states = append(states, fmt.Sprintf("%s gated=%v host=%q node=%q %s deleting=%v %s", p.Name, placement.Gated(&p),
				p.Spec.NodeSelector[hostLabel], p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, why))
		}
		if len(nodes) != n {
			return fmt.Errorf("Job %s: %d of %d pods running off %v: %v", job, len(nodes), n, avoid, states)
		}
		return nil
	})
	return nodes
}

func distinct(nodes []string, of map[string]string) []string {
	var out []string
	for _, n := range nodes {
		if v := of[n]; !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// On 2 blocks x 4 racks x 4 hosts of 8 cpu: a Job of 8 pods of 4 cpu that
// requires a rack runs with every pod in one rack; a second one, which
// cannot share it, in another; a Job of 12 that prefers a rack (too big for
// one) over the fewest racks of one block; and a Job of 9 that requires a
// rack waits, saying why, though the quota has room.
func TestTopologyAwarePlacement(t *testing.T) {
	env := testenv.New(t)
	rackOf, blockOf := topologyQueue(t, env, 2, 4, 4)

	first := gangJob(env, "first", 8, integration.RequiredTopologyAnnotation, rackLabel)
	env.Create(t, first)
	firstRacks := distinct(runningPods(t, env, "first", 8), rackOf)
	if len(firstRacks) != 1 {
		t.Fatalf("Job requiring a rack runs in racks %v", firstRacks)
	}
	second := gangJob(env, "second", 8, "kueue.x-k8s.io/podset-required-topology", rackLabel)
	env.Create(t, second)
	secondRacks := distinct(runningPods(t, env, "second", 8), rackOf)
	if len(secondRacks) != 1 || secondRacks[0] == firstRacks[0] {
		t.Fatalf("second Job in racks %v, first in %v; want one rack each, different", secondRacks, firstRacks)
	}
	wl := jobWorkload(t, env, second)
	if ta := wl.Status.Admission.PodSetAssignments[0].TopologyAssignment; ta == nil || len(ta.Levels) != 3 {
		t.Errorf("admission %+v: want a topology assignment over 3 levels", wl.Status.Admission)
	}

	wide := gangJob(env, "wide", 12, integration.PreferredTopologyAnnotation, rackLabel)
	env.Create(t, wide)
	nodes := runningPods(t, env, "wide", 12)
	if racks, blocks := distinct(nodes, rackOf), distinct(nodes, blockOf); len(racks) != 2 || len(blocks) != 1 {
		t.Errorf("Job of 12 preferring a rack: racks %v, blocks %v; want 2 racks of 1 block", racks, blocks)
	}

	big := gangJob(env, "big", 9, integration.RequiredTopologyAnnotation, rackLabel)
	env.Create(t, big)
	waitPending(t, env, env.Namespace, jobWorkload(t, env, big).Name,
		"needs 9 pods of 4 cpu in one topology.berth.dev/rack; the best topology.berth.dev/rack")
}

// A Job whose topology annotations are wrong is refused, naming them.
func TestTopologyAnnotationsAreChecked(t *testing.T) {
	env := testenv.New(t)
	job := MakeJob("both", env.Namespace).Queue("main").Parallelism(2).Request("cpu", "1").
		PodAnnotation(integration.RequiredTopologyAnnotation, rackLabel).PodAnnotation(integration.PreferredTopologyAnnotation, rackLabel).Obj()
	err := env.Client.Create(ctx, job)
	if err == nil || !strings.Contains(err.Error(), "annotations berth.dev/podset-required-topology and berth.dev/podset-preferred-topology: set only one") {
		t.Errorf("two topology modes: %v", err)
	}
	pod := plainPod("p", env.Namespace, "1", "1s", map[string]string{berthv1.QueueNameLabel: "main"})
	pod.Annotations[integration.SliceSizeAnnotation] = "2"
	if err := env.Client.Create(ctx, pod); err == nil || !strings.Contains(err.Error(), "berth.dev/podset-slice-size needs a required, preferred or unconstrained") {
		t.Errorf("a plain Pod with a slice size alone: %v", err)
	}
}

// A pod group of 8 pods of 4 cpu that requires a rack runs whole in one
// rack, through the same annotations as a Job; so does a single Pod that
// requires a host.
func TestPodGroupTopology(t *testing.T) {
	env := testenv.New(t)
	rackOf, _ := topologyQueue(t, env, 1, 4, 4)
	var names []string
	for i := range 8 {
		p := groupPod(fmt.Sprintf("w%d", i), env.Namespace, "ring", 8, "4", "1h")
		p.Annotations[integration.RequiredTopologyAnnotation] = rackLabel
		env.Create(t, p)
		names = append(names, p.Name)
	}
	single := plainPod("single", env.Namespace, "2", "1h", map[string]string{berthv1.QueueNameLabel: "main"})
	single.Annotations["kueue.x-k8s.io/podset-required-topology"] = hostLabel
	env.Create(t, single)
	testenv.Eventually(t, wait, func() error {
		var nodes []string
		for _, n := range append(slices.Clone(names), "single") {
			p, err := getPod(env, n)
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s gated=%v topology-gated=%v node %q phase %s", n, pods.Gated(p), placement.Gated(p),
					p.Spec.NodeName, p.Status.Phase)
			}
			if n != "single" {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
		if racks := distinct(nodes, rackOf); len(racks) != 1 {
			return fmt.Errorf("the group runs in racks %v", racks)
		}
		return nil
	})
}

// Room on nodes is what every pod bound there leaves, berth's or not: a
// pod that is none of berth's business fills a host of rack 0, so a gang
// that needs a whole rack goes to rack 1, though rack 0 comes first.
func TestPlacementCountsOtherPods(t *testing.T) {
	env := testenv.New(t)
	rackOf, _ := topologyQueue(t, env, 1, 2, 2)
	busy := env.Name("b0-r0-h0")
	other := plainPod("other", env.Namespace, "8", "1h", nil)
	other.Spec.NodeName = busy
	other.Spec.Tolerations = []corev1.Toleration{env.Toleration()}
	env.Create(t, other)
	testenv.Eventually(t, wait, func() error {
		p, err := getPod(env, "other")
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("the other pod is %s", p.Status.Phase)
		}
		return nil
	})
	env.Create(t, gangJob(env, "gang", 4, integration.RequiredTopologyAnnotation, rackLabel))
	if racks := distinct(runningPods(t, env, "gang", 4), rackOf); len(racks) != 1 || racks[0] != "b0-r1" {
		t.Errorf("the gang runs in racks %v; want b0-r1, the one rack with room for it", racks)
	}
}

// A Job that asks for no topology, admitted in a flavor with one, is placed
// anyway: its pods are gated at creation and each given a host, so the room
// it takes is known from admission on, and a gang admitted after it does
// not count on the same hosts. Stopped, its template loses what berth added.
func TestJobWithoutTopologyRequestIsPlaced(t *testing.T) {
	env := testenv.New(t)
	topologyQueue(t, env, 1, 2, 2)
	plain := MakeJob("plain", env.Namespace).Queue("main").Parallelism(3).Request("cpu", "8").
		PodAnnotation("berth.dev/sim-duration", "1h").Obj()
	env.Create(t, plain)
	runningPods(t, env, "plain", 3)
	var list corev1.PodList
	if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace), client.MatchingLabels{batchv1.JobNameLabel: "plain"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Labels[berthv1.TopologyPlacedLabel] != "true" || p.Spec.NodeSelector[hostLabel] != p.Spec.NodeName {
			t.Errorf("pod %s on %s: placed label %q, host selector %q; want placed there by berth", p.Name, p.Spec.NodeName,
				p.Labels[berthv1.TopologyPlacedLabel], p.Spec.NodeSelector[hostLabel])
		}
	}
	wl := jobWorkload(t, env, plain)
	if ta := wl.Status.Admission.PodSetAssignments[0].TopologyAssignment; ta == nil {
		t.Errorf("admission %+v: want a topology assignment", wl.Status.Admission)
	}
	// Three of the four hosts are taken: no rack has two free.
	gang := MakeJob("gang", env.Namespace).Queue("main").Parallelism(2).Request("cpu", "8").
		PodAnnotation("berth.dev/sim-duration", "1h").PodAnnotation(integration.RequiredTopologyAnnotation, rackLabel).Obj()
	env.Create(t, gang)
	waitPending(t, env, env.Namespace, jobWorkload(t, env, gang).Name, "needs 2 pods of 8 cpu in one topology.berth.dev/rack")

	// Stopped (its queue drained), the Job's template is as it was submitted.
	var lq berthv1.LocalQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "main"}, &lq); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(lq.DeepCopy())
	lq.Spec.StopPolicy = berthv1.HoldAndDrain
	if err := env.Client.Patch(ctx, &lq, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, "plain")
		if err != nil {
			return err
		}
		if !jobs.Suspended(j) || jobs.Injected(j) {
			return fmt.Errorf("Job not stopped and restored yet: suspended %v, injected %v", jobs.Suspended(j), jobs.Injected(j))
		}
		if _, ok := j.Spec.Template.Labels[berthv1.TopologyPlacedLabel]; ok {
			return fmt.Errorf("the restored template keeps %s: %v", berthv1.TopologyPlacedLabel, j.Spec.Template.Labels)
		}
		return nil
	})
}

// A plain Pod and a pod group that ask for no topology, admitted in a flavor
// with one, are placed too: created gated, each pod is given a host.
func TestPodsWithoutTopologyRequestArePlaced(t *testing.T) {
	env := testenv.New(t)
	topologyQueue(t, env, 1, 2, 2)
	env.Create(t, plainPod("solo", env.Namespace, "8", "1h", map[string]string{berthv1.QueueNameLabel: "main"}))
	names := []string{"solo"}
	for i := range 2 {
		p := groupPod(fmt.Sprintf("g%d", i), env.Namespace, "pair", 2, "8", "1h")
		env.Create(t, p)
		names = append(names, p.Name)
	}
	testenv.Eventually(t, wait, func() error {
		for _, n := range names {
			p, err := getPod(env, n)
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s gated=%v topology-gated=%v node %q phase %s", n, pods.Gated(p), placement.Gated(p),
					p.Spec.NodeName, p.Status.Phase)
			}
			if p.Labels[berthv1.TopologyPlacedLabel] != "true" || p.Spec.NodeSelector[hostLabel] != p.Spec.NodeName {
				return fmt.Errorf("pod %s on %s: placed label %q, host selector %q; want placed there by berth", n, p.Spec.NodeName,
					p.Labels[berthv1.TopologyPlacedLabel], p.Spec.NodeSelector[hostLabel])
			}
		}
		return nil
	})
}
