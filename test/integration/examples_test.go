package integration

import (
	"fmt"
	"os/exec"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
)

// The README's examples work as written: the queues apply, and a Job created
// from examples/job.yaml is admitted in team-a's ClusterQueue.
func TestExamplesWork(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"kubectl", "--kubeconfig", env.Kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	kubectl("apply", "-f", "../../examples/queues.yaml")
	t.Cleanup(func() {
		_ = exec.Command(bin, "kubectl", "--kubeconfig", env.Kubeconfig, "delete", "-f", "../../examples/queues.yaml", "--wait=false").Run()
	})
	kubectl("create", "-f", "../../examples/job.yaml")
	testenv.Eventually(t, wait, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace("team-a")); err != nil {
			return err
		}
		for i := range list.Items {
			wl := &list.Items[i]
			if workload.IsAdmitted(wl) && wl.Status.Admission.ClusterQueue == "team-a" {
				return nil
			}
		}
		return fmt.Errorf("no admitted workload in team-a yet (%d workloads)", len(list.Items))
	})
}
