package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/manifests"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/whatif"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// Two Jobs run to their end on a queue of 1 cpu, one after the other;
// berth trace record writes them into a trace as they ran (the second
// arriving after the first, each running its simulated duration or more),
// and berth whatif replays that history against a queue of 2 cpu, where
// neither waits. The cluster has a Topology, so the trace holds its nodes.
func TestTraceRecordReplaysWhatRan(t *testing.T) {
	env := testenv.New(t)
	node := env.CreateSimNode(t, env.Name("n1"), map[string]string{rackLabel: "r1"})
	topo := &berthv1.Topology{Spec: berthv1.TopologySpec{Levels: []berthv1.TopologyLevel{{NodeLabel: rackLabel}}}}
	topo.Name = env.Name("dc")
	env.Create(t, topo)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	for _, name := range []string{"first", "second"} {
		env.Create(t, MakeJob(name, env.Namespace).Queue("main").Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", "2s").Obj())
	}
	testenv.Eventually(t, wait, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		done := 0
		for i := range list.Items {
			if workload.IsFinished(&list.Items[i]) {
				done++
			}
		}
		if done != 2 {
			return fmt.Errorf("%d of 2 Workloads finished", done)
		}
		return nil
	})

	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	record := exec.Command(bin, "trace", "record", "--names", "--kubeconfig", env.Kubeconfig)
	record.Stdout, record.Stderr = &stdout, &stderr
	if err := record.Run(); err != nil {
		t.Fatalf("berth trace record: %v\n%s", err, stderr.String())
	}
	h, trace, err := whatif.ReadTrace(bytes.NewReader(stdout.Bytes()))
	if err != nil {
		t.Fatalf("the recorded trace does not read back: %v\n%s", err, stdout.String())
	}
	var mine []whatif.Workload
	for _, w := range trace {
		if w.Namespace == env.Namespace {
			mine = append(mine, w)
		}
	}
	i := slices.IndexFunc(h.Nodes, func(n whatif.Node) bool { return n.Name == node.Name })
	if i < 0 || h.Nodes[i].Labels[rackLabel] != "r1" || h.Nodes[i].Allocatable["cpu"] != "8" || len(h.Nodes[i].Taints) != 1 {
		t.Errorf("the trace's nodes %+v: want %s, in rack r1, of 8 cpu, tainted", h.Nodes, node.Name)
	}
	if len(mine) != 2 || h.Source != "berth trace record" {
		t.Fatalf("recorded %+v of this namespace (header %+v); want its 2 Workloads", mine, h)
	}
	for _, w := range mine {
		if w.LocalQueue != "main" || w.Run < 2 || w.Run > wait.Seconds() || w.PodSets[0].Count != 1 || w.PodSets[0].Requests["cpu"] != "1" {
			t.Errorf("recorded %+v; want LocalQueue main, a run of 2 s or more, one pod of 1 cpu", w)
		}
	}

	dir := t.TempDir()
	tracePath, plan := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(tracePath, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: bigger}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 2}]
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: %s}
spec: {clusterQueue: bigger}
`, env.Namespace)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "whatif", "--trace", tracePath, "--config", plan).Output()
	if err != nil {
		t.Fatalf("berth whatif: %v", err)
	}
	var row string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "LocalQueue" && f[1] == env.Namespace+"/main" {
			row = strings.Join(f, " ")
		}
	}
	// Both admitted, neither waiting: BY NAME WORKLOADS ADMITTED NOT-ADMITTED MEAN P50 P95 MAX PREEMPTED.
	if row != "LocalQueue "+env.Namespace+"/main 2 2 0 0.0s 0.0s 0.0s 0.0s 0" {
		t.Errorf("the replay of this namespace's history on 2 cpu: %q\n%s", row, out)
	}

	// Against the cluster's own queues as they are (1 cpu: the second waits
	// for the first), read from the API server, and the plan. Only this
	// namespace's history: other tests' queues are not this test's to know.
	var own bytes.Buffer
	if err := whatif.WriteTrace(&own, h, mine); err != nil {
		t.Fatal(err)
	}
	ownPath := filepath.Join(dir, "own.jsonl")
	if err := os.WriteFile(ownPath, own.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "whatif", "--trace", ownPath, "--this-cluster", "--kubeconfig", env.Kubeconfig, "--config", plan)
	stderr.Reset()
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("berth whatif --this-cluster: %v\n%s", err, stderr.String())
	}
	row = ""
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[0] == "LocalQueue" && f[1] == env.Namespace+"/main" {
			row = strings.Join(f, " ")
			// BY NAME ADMITTED-A ADMITTED-B MEAN-A MEAN-B ...: waits under
			// this cluster's 1 cpu, none with 2.
			if f[2] != "2/2" || f[3] != "2/2" || f[4] == "0.0s" || f[5] != "0.0s" {
				t.Errorf("this cluster against the plan: %q; want both admitted in both, a wait only in this cluster\n%s", row, out)
			}
		}
	}
	if strings.Contains(stderr.String(), "has no LocalQueue") {
		t.Errorf("berth whatif --this-cluster says a LocalQueue of the trace is missing: %s", stderr.String())
	}
	if row == "" || !strings.Contains(string(out), "A = this cluster") {
		t.Errorf("no comparison of this cluster with the plan for %s/main:\n%s", env.Namespace, out)
	}
}

// kueueWorkloadCRD stands in for Kueue's Workload CRD: its group, kind and
// version, a status subresource, and no schema beyond that (berth only
// reads what Kueue writes there).
const kueueWorkloadCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: workloads.kueue.x-k8s.io}
spec:
  group: kueue.x-k8s.io
  names: {kind: Workload, listKind: WorkloadList, plural: workloads, singular: workload}
  scope: Namespaced
  versions:
  - name: v1beta2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// kueueTopologyCRD stands in for Kueue's Topology CRD at v1alpha1 only, as
// older Kueue releases served it: berth looks for Topologies at versions
// older than its Workloads' too.
const kueueTopologyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: topologies.kueue.x-k8s.io}
spec:
  group: kueue.x-k8s.io
  names: {kind: Topology, listKind: TopologyList, plural: topologies, singular: topology}
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// berth trace record --kueue reads a Kueue cluster's history: a Kueue
// Workload that ran to its end is recorded with its pods' requests from
// its template, its topology request, and its run from admission to end;
// one still running is left out, and said so. Kueue has a Topology, so
// the trace holds the nodes.
func TestTraceRecordReadsKueueWorkloads(t *testing.T) {
	env := testenv.New(t)
	objs, err := manifests.Decode([]byte(kueueWorkloadCRD + "---\n" + kueueTopologyCRD))
	if err != nil {
		t.Fatal(err)
	}
	if err := manifests.ApplyEstablished(ctx, env.Config, objs...); err != nil {
		t.Fatal(err)
	}
	node := env.CreateSimNode(t, env.Name("n1"), nil)
	topo := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Topology",
		"metadata": map[string]any{"name": env.Name("dc")},
		"spec":     map[string]any{"levels": []any{map[string]any{"nodeLabel": "kubernetes.io/hostname"}}}}}
	if err := env.Client.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, topo) })
	made := func(name string, conditions ...map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
			"metadata": map[string]any{"name": name, "namespace": env.Namespace},
			"spec": map[string]any{"queueName": "kueue-main", "podSets": []any{map[string]any{"name": "main", "count": int64(2),
				"topologyRequest": map[string]any{"preferred": "kubernetes.io/hostname", "podIndexLabel": "idx"},
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox",
					"resources": map[string]any{"requests": map[string]any{"cpu": "750m"}}}}}}}}},
		}}
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		var conds []any
		for _, c := range conditions {
			conds = append(conds, c)
		}
		u.Object["status"] = map[string]any{"conditions": conds}
		if err := env.Client.Status().Update(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	cond := func(typ, at string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": typ, "message": "", "lastTransitionTime": at}
	}
	made("ran", cond("Admitted", "2026-11-01T10:00:00Z"), cond("Finished", "2026-11-01T10:02:30Z"))
	made("running", cond("Admitted", "2026-11-01T10:00:00Z"))

	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	record := exec.Command(bin, "trace", "record", "--kueue", "--names", "--kubeconfig", env.Kubeconfig)
	record.Stdout, record.Stderr = &stdout, &stderr
	if err := record.Run(); err != nil {
		t.Fatalf("berth trace record --kueue: %v\n%s", err, stderr.String())
	}
	h, trace, err := whatif.ReadTrace(bytes.NewReader(stdout.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	var got []whatif.Workload
	for _, w := range trace {
		if w.Namespace == env.Namespace {
			got = append(got, w)
		}
	}
	if len(got) != 1 || !strings.Contains(h.Source, "kueue.x-k8s.io/v1beta2") {
		t.Fatalf("recorded %+v (header %+v); want the one that ran\n%s", got, h, stderr.String())
	}
	if w := got[0]; w.Name != "ran" || w.LocalQueue != "kueue-main" || w.Run != 150 || w.PodSets[0].Count != 2 || w.PodSets[0].Requests["cpu"] != "750m" {
		t.Errorf("recorded %+v", w)
	}
	if tr := got[0].PodSets[0].Topology; tr == nil || tr.Preferred == nil || *tr.Preferred != "kubernetes.io/hostname" {
		t.Errorf("recorded topology request %+v; want Kueue's preferred hostname", tr)
	}
	if !slices.ContainsFunc(h.Nodes, func(n whatif.Node) bool { return n.Name == node.Name }) {
		t.Errorf("the trace's %d nodes leave out %s, though Kueue has a Topology", len(h.Nodes), node.Name)
	}
	if !strings.Contains(stderr.String(), "left out") || !strings.Contains(stderr.String(), whatif.SkipNotFinished) {
		t.Errorf("stderr does not say the running one was left out:\n%s", stderr.String())
	}
}
