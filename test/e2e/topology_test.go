package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/testenv"
)

// examples/topology.yaml works as its comment says: on `berth up` with 16
// nodes of 8 cpu in racks of 4, its Job of 8 pods of 4 cpu runs with every
// pod on the nodes of one rack.
func TestTopologyExample(t *testing.T) {
	t.Parallel()
	inst := newInstance(t, "topology")
	kubeconfig := inst.up(t, "--nodes", "16", "--nodes-per-rack", "4", "--racks-per-block", "2",
		"--node-capacity", "cpu=8,memory=32Gi,pods=110")
	out, err := exec.Command(inst.bin, "kubectl", "--kubeconfig", kubeconfig, "apply", "-f", "../../examples/topology.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -f examples/topology.yaml: %v\n%s", err, out)
	}
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, func() error {
		pods, err := kube.CoreV1().Pods("ml").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=allreduce"})
		if err != nil {
			return err
		}
		racks := map[string]bool{}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			running++
			node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			racks[node.Labels["topology.berth.dev/rack"]] = true
		}
		if running != 8 || len(racks) != 1 {
			return fmt.Errorf("%d of 8 pods running, in racks %v; want all 8 in one rack", running, racks)
		}
		return nil
	})
}
