package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// berth stop and resume set a queue's stopPolicy, which the controller acts
// on: a stopped ClusterQueue admits nothing new, a resumed one admits again.
func TestStopAndResumeQueues(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	berth := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(args, "--kubeconfig", env.Kubeconfig)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	out, err := berth("stop", "clusterqueue", cq)
	if err != nil || !strings.Contains(out, "ClusterQueue "+cq+" stopped: it admits nothing new") {
		t.Fatalf("berth stop clusterqueue: %v\n%s", err, out)
	}
	env.Create(t, MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "w", "stopped")

	out, err = berth("stop", "lq", "main", "-n", env.Namespace, "--drain")
	if err != nil || !strings.Contains(out, "LocalQueue "+env.Namespace+"/main stopped and draining") {
		t.Fatalf("berth stop lq --drain: %v\n%s", err, out)
	}
	var lq berthv1.LocalQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "main"}, &lq); err != nil || lq.Spec.StopPolicy != berthv1.HoldAndDrain {
		t.Fatalf("LocalQueue stopPolicy %q (%v), want HoldAndDrain", lq.Spec.StopPolicy, err)
	}
	for _, args := range [][]string{{"resume", "localqueue", "main", "-n", env.Namespace}, {"resume", "cq", cq}} {
		if out, err := berth(args...); err != nil || !strings.Contains(out, "resumed: it admits again") {
			t.Fatalf("berth %v: %v\n%s", args, err, out)
		}
	}
	waitAdmitted(t, env, env.Namespace, "w")

	// Mistakes are named, and change nothing.
	for args, want := range map[string]string{
		"stop cq " + env.Name("missing"):        fmt.Sprintf("ClusterQueue %s not found", env.Name("missing")),
		"stop workload " + env.Name("whatever"): "stop and resume take clusterqueue (cq) or localqueue (lq)",
	} {
		out, err := berth(strings.Fields(args)...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("berth %s: %v\n%s\nwant an error saying %q", args, err, out, want)
		}
	}
}
