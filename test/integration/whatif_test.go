package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/whatif"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// Two Jobs run to their end on a queue of 1 cpu, one after the other;
// berth trace record writes them into a trace as they ran (the second
// arriving after the first, each running its simulated duration or more),
// and berth whatif replays that history against a queue of 2 cpu, where
// neither waits.
func TestTraceRecordReplaysWhatRan(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
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
}
