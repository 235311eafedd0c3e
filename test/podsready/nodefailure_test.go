package podsready

import (
	"fmt"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

const (
	rackLabel = "topology.berth.dev/rack"
	hostLabel = "kubernetes.io/hostname"
)

// A gang of 6 pods of 4 cpu that requires a rack starts whole on 3 of the
// 4 hosts of a rack (8 cpu each). One of its hosts goes down (the
// simulator's node-down stage makes it not Ready): past
// --node-failure-delay berth gives its 2 pods the rack's fourth host,
// deletes them from the failed one, and their replacements run there. The
// workload keeps its admission and its PodsReady condition throughout: a
// gang that started whole is not taken for one that cannot start.
func TestAGangOnAFailedNodeRunsWholeAgain(t *testing.T) {
	env := testenv.New(t)
	hosts := racks(t, env, 1)["r0"]
	env.Create(t, gangJob(env, 6))
	key := jobWorkload(t, env, "gang")
	waitFor(t, env, key, "PodsReady", workload.PodsReady)
	used := gangNodes(t, env, 6, "")
	lost := used[0]
	takeDown(t, env, lost)
	after := gangNodes(t, env, 6, lost)
	if !slices.Contains(after, hosts[slices.IndexFunc(hosts, func(h string) bool { return !slices.Contains(used, h) })]) {
		t.Errorf("after %s failed the gang runs on %v; want the host it did not use", lost, after)
	}
	w, err := get(env, key)
	if err != nil {
		t.Fatal(err)
	}
	if !workload.IsAdmitted(w) || !workload.PodsReady(w) || w.Status.RequeueState != nil ||
		meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted) != nil {
		t.Errorf("the workload did not keep its admission: %s", describe(w))
	}
}

// gangNodes waits until Job gang has n Ready pods that are not going, none
// on node avoid, and returns their nodes.
func gangNodes(t *testing.T, env *testenv.Env, n int, avoid string) []string {
	t.Helper()
	var nodes []string
	testenv.Eventually(t, wait, func() error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{"job-name": "gang"}); err != nil {
			return err
		}
		nodes = nodes[:0]
		var states []string
		for _, p := range pods.Items {
			if isReady(&p) && p.DeletionTimestamp == nil && p.Spec.NodeName != avoid {
				nodes = append(nodes, p.Spec.NodeName)
			}
			states = append(states, fmt.Sprintf("%s on %q (host %q) %s deleting=%v", p.Name, p.Spec.NodeName,
				p.Spec.NodeSelector[hostLabel], p.Status.Phase, p.DeletionTimestamp != nil))
		}
		if len(nodes) != n {
			return fmt.Errorf("%d of %d pods Ready off %q: %v", len(nodes), n, avoid, states)
		}
		return nil
	})
	return nodes
}

// A gang of 8 fills its rack: when one of its hosts goes down there is no
// room for its 2 pods in the rack, and berth evicts it, saying why; its pods
// gone, it is admitted again in the other rack and runs whole there.
func TestAGangWithoutRoomIsQueuedAgainWhenItsNodeFails(t *testing.T) {
	env := testenv.New(t)
	hosts := racks(t, env, 2)
	env.Create(t, gangJob(env, 8))
	key := jobWorkload(t, env, "gang")
	waitFor(t, env, key, "PodsReady", workload.PodsReady)
	used := gangNodes(t, env, 8, "")
	lost := used[0]
	rack, other := "r0", "r1"
	if slices.Contains(hosts["r1"], lost) {
		rack, other = "r1", "r0"
	}
	takeDown(t, env, lost)
	waitFor(t, env, key, "evicted for the failed node", func(w *berthv1.Workload) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted)
		return c != nil && c.Reason == "NodeFailed" && c.Message == "its pods lost kubernetes.io/hostname "+lost+
			", which failed: 2 pods of 4 cpu lost with kubernetes.io/hostname "+lost+" have no room in "+rackLabel+" "+rack
	})
	for _, n := range gangNodes(t, env, 8, lost) {
		if !slices.Contains(hosts[other], n) {
			t.Errorf("queued again, a pod runs on %s; want the hosts of rack %s %v", n, other, hosts[other])
		}
	}
}

// racks makes n racks (r0, r1, ...) of 4 simulated hosts of 8 cpu, a
// Topology of rack and host over them, a flavor with it and a ClusterQueue
// of plenty of cpu (LocalQueue main). It returns each rack's hosts.
func racks(t *testing.T, env *testenv.Env, n int) map[string][]string {
	t.Helper()
	pool := env.Name("pool")
	hosts := map[string][]string{}
	for r := range n {
		rack := fmt.Sprintf("r%d", r)
		for h := range 4 {
			name := env.Name(fmt.Sprintf("%s-h%d", rack, h))
			env.CreateSimNode(t, name, map[string]string{"example.com/pool": pool, rackLabel: rack})
			hosts[rack] = append(hosts[rack], name)
		}
	}
	topo := &berthv1.Topology{Spec: berthv1.TopologySpec{Levels: []berthv1.TopologyLevel{{NodeLabel: rackLabel}, {NodeLabel: hostLabel}}}}
	topo.Name = env.Name("dc")
	env.Create(t, topo)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Topology(topo.Name).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "100").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	return hosts
}

// gangJob is Job gang: n pods of 4 cpu that run an hour and require a rack.
func gangJob(env *testenv.Env, n int32) *batchv1.Job {
	return MakeJob("gang", env.Namespace).Queue("main").Parallelism(n).Request("cpu", "4").
		PodAnnotation("berth.dev/sim-duration", "1h").PodAnnotation(integration.RequiredTopologyAnnotation, rackLabel).Obj()
}

// takeDown has the simulator's node-down stage make a node not Ready, as
// when its kubelet stops.
func takeDown(t *testing.T, env *testenv.Env, node string) {
	t.Helper()
	down := []byte(`{"metadata":{"annotations":{"berth.dev/sim-node-down":"true"}}}`)
	if _, err := env.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, down, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
