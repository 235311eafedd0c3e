package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/realnode"
	"github.com/berth-dev/berth/internal/testenv"
)

// queuedJobsRun: on berth up --real-node, queued Jobs run real containers
// on the real node in turn, and berth down leaves nothing on the machine.
func queuedJobsRun(t *testing.T, tools realnode.Tools, archive string) {
	inst := newInstance(t, "realnode")
	kubeconfig := inst.up(t, "--nodes", "0", "--real-node")
	node := realnode.LayoutOf(controlplane.Layout{Dir: inst.dir})
	downChecked := false
	t.Cleanup(func() {
		if !downChecked {
			_, _ = inst.run(t, "down")
		}
	})
	if out, code := inst.run(t, "image", "load", archive); code != 0 {
		t.Fatalf("berth image load: exit %d\n%s", code, out)
	}

	c := clientOf(t, kubeconfig)
	ctx := context.Background()
	testenv.Eventually(t, time.Minute, func() error {
		var n corev1.Node
		if err := c.Get(ctx, types.NamespacedName{Name: realnode.NodeName}, &n); err != nil {
			return err
		}
		if n.Labels[realnode.Label] != "true" {
			return fmt.Errorf("node %s has labels %v", n.Name, n.Labels)
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				// The kubelet says which Kubernetes it is, as the API server
				// does: the k8s.io/kubernetes module's version.
				if v := n.Status.NodeInfo.KubeletVersion; !strings.HasPrefix(v, "v1.") {
					t.Errorf("the real node's kubelet says it is Kubernetes %s", v)
				}
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready: %v", n.Name, n.Status.Conditions)
	})
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig(t, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := dc.ServerVersion(); err != nil || !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Errorf("the API server says it is Kubernetes %v (%v)", v, err)
	}

	ns := "team"
	realQueue(t, c, ns)
	first, second := helloJob("first", ns, "6"), helloJob("second", ns, "0")
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error { return running(ctx, c, ns, "first") })
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	// The quota (1 cpu) is the first's until it ends: the second waits.
	testenv.Eventually(t, 30*time.Second, func() error {
		wl, err := workloadOf(ctx, c, second)
		if err != nil {
			return err
		}
		if wl.Status.Admission != nil {
			return fmt.Errorf("the second Job was admitted while the first held the quota")
		}
		return nil
	})
	for _, job := range []*batchv1.Job{first, second} {
		testenv.Eventually(t, 2*time.Minute, func() error {
			var j batchv1.Job
			if err := c.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
				return err
			}
			if j.Status.Succeeded != 1 {
				return fmt.Errorf("Job %s: %d succeeded, %d failed, %d active", j.Name, j.Status.Succeeded, j.Status.Failed, j.Status.Active)
			}
			wl, err := workloadOf(ctx, c, &j)
			if err != nil {
				return err
			}
			if !hasCondition(wl, berthv1.WorkloadFinished) {
				return fmt.Errorf("Workload %s not Finished: %v", wl.Name, wl.Status.Conditions)
			}
			return nil
		})
		out, err := exec.Command(inst.bin, "kubectl", "--kubeconfig", kubeconfig, "-n", ns, "logs", "job/"+job.Name).CombinedOutput()
		if want := "hello from a real container: " + job.Name; err != nil || !strings.Contains(string(out), want) {
			t.Errorf("kubectl logs job/%s: %v, %q; want %q", job.Name, err, out, want)
		}
	}
	// A pod on the pod network reaches the API server through the
	// kubernetes Service, with its service account's token.
	api := helloJob("api", ns, "0")
	if err := c.Create(ctx, api); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() error {
		var j batchv1.Job
		if err := c.Get(ctx, client.ObjectKeyFromObject(api), &j); err != nil {
			return err
		}
		if j.Status.Succeeded != 1 {
			return fmt.Errorf("Job api: %d succeeded, %d failed, %d active", j.Status.Succeeded, j.Status.Failed, j.Status.Active)
		}
		return nil
	})
	if out, err := exec.Command(inst.bin, "kubectl", "--kubeconfig", kubeconfig, "-n", ns, "logs", "job/api").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "the API server answered 200 OK") {
		t.Errorf("kubectl logs job/api: %v, %q; want the API server's answer, 200 OK", err, out)
	}

	var cq berthv1.ClusterQueue
	if err := c.Get(ctx, types.NamespacedName{Name: "real"}, &cq); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if err := c.Get(ctx, types.NamespacedName{Name: "real"}, &cq); err != nil {
			return err
		}
		if cq.Status.ReservingWorkloads != 0 {
			return fmt.Errorf("ClusterQueue real still has %d workloads holding quota", cq.Status.ReservingWorkloads)
		}
		return nil
	})

	inst.down(t)
	downChecked = true
	if left := realnode.Leftovers(node, tools); len(left) > 0 {
		t.Errorf("berth down left on the machine: %v", left)
	}
}
