package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/audit"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/localcluster"
	"github.com/berth-dev/berth/internal/testenv"
)

// Two replicas of berth's controller elect a leader. The leader is paused
// (SIGSTOP) past its lease while work waits: the other takes over and
// admits it; the old one, resumed, finds it lost the lease and exits (its
// fence refuses any write it had in hand meanwhile), and the supervisor
// starts it again as a follower. The auditor, watching throughout, sees no
// quota exceeded and no workload admitted twice.
func TestPausedLeaderHandsOver(t *testing.T) {
	t.Parallel()
	inst := newInstance(t, "leaders")
	kubeconfig := inst.up(t, "--nodes", "2", "--controller-flag=--leader-elect")
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	kube := clientFor(t, kubeconfig)
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("berth-system").Get(ctx, "berth-controller", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var first string
	testenv.Eventually(t, time.Minute, func() error {
		if first = holder(); first == "" {
			return fmt.Errorf("no leader yet")
		}
		return nil
	})

	// The second replica, as a Deployment's second Pod would run.
	l := controlplane.Layout{Dir: inst.dir}
	ports, err := controlplane.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	health, metrics, webhook := ports[0], ports[1], ports[2]
	logf, err := os.Create(filepath.Join(t.TempDir(), "replica2.log"))
	if err != nil {
		t.Fatal(err)
	}
	second := exec.Command(inst.bin, append(localcluster.ControllerArgs(l, health, metrics, webhook, "webhook-certs-test"), "--leader-elect")...)
	second.Stdout, second.Stderr = logf, logf
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = second.Process.Kill()
		_ = second.Wait()
	})
	testenv.Eventually(t, time.Minute, func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", health))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("second replica: %s", resp.Status)
		}
		return nil
	})

	auditor, err := audit.Start(ctx, cfg, 200*time.Millisecond, audit.Scope{NamespacePrefix: "team-", ClusterQueuePrefix: "team-"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"queues.yaml", "demo-jobs.yaml"} {
		if out, err := exec.Command(inst.bin, "kubectl", "--kubeconfig", kubeconfig, "create", "-f", "../../examples/"+f).CombinedOutput(); err != nil {
			t.Fatalf("kubectl create -f examples/%s: %v\n%s", f, err, out)
		}
	}
	admitted := func() int {
		var wls berthv1.WorkloadList
		if err := c.List(ctx, &wls); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, w := range wls.Items {
			if w.Status.Admission != nil {
				n++
			}
		}
		return n
	}
	testenv.Eventually(t, time.Minute, func() error {
		if n := admitted(); n == 0 {
			return fmt.Errorf("nothing admitted yet")
		}
		return nil
	})

	leader := controllerProcess(t, inst)
	if err := syscall.Kill(leader.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(leader.PID, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	before := admitted()
	testenv.Eventually(t, time.Minute, func() error {
		if h := holder(); h == first || h == "" {
			return fmt.Errorf("lease still held by %q", h)
		}
		return nil
	})
	// The new leader admits what waits.
	testenv.Eventually(t, time.Minute, func() error {
		if n := admitted(); n <= before {
			return fmt.Errorf("%d workloads admitted, as many as when the leader was paused", n)
		}
		return nil
	})
	resume()

	// The old leader exits on finding its lease gone, and is started again.
	testenv.Eventually(t, time.Minute, func() error {
		for _, comp := range inst.state(t).Components {
			if comp.Name == "berth-controller" && comp.Restarts > 0 && comp.Process.PID != leader.PID {
				return nil
			}
		}
		return fmt.Errorf("the paused leader (pid %d) has not exited and been restarted", leader.PID)
	})
	log, err := os.ReadFile(l.LogFile("berth-controller"))
	if err != nil || !strings.Contains(string(log), "leader election lost") {
		t.Errorf("the old leader's log does not say it lost the election (%v)", err)
	}
	// It resumed with admissions in hand (the demo's Jobs were waiting);
	// the fence refused them, since the new leader was writing by then.
	if !strings.Contains(string(log), "not the leader any more") {
		t.Errorf("the resumed leader's log shows no write refused by its fence")
	}
	if h := holder(); h == first {
		t.Errorf("the resumed replica took the lease back")
	}

	testenv.Eventually(t, 2*time.Minute, func() error {
		var jobs batchv1.JobList
		if err := c.List(ctx, &jobs); err != nil {
			return err
		}
		done := 0
		for _, j := range jobs.Items {
			for _, cond := range j.Status.Conditions {
				if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
					done++
				}
			}
		}
		if done < 8 {
			return fmt.Errorf("%d of 8 demo Jobs complete", done)
		}
		return nil
	})
	if vs := auditor.Violations(); len(vs) > 0 {
		t.Errorf("the auditor saw broken promises across the hand-over: %v", vs)
	}
	// The end state: queue status trails the workloads by about a second.
	testenv.Eventually(t, 30*time.Second, func() error {
		vs, err := auditor.Settle(ctx, false)
		if err != nil {
			return err
		}
		if len(vs) > 0 {
			return fmt.Errorf("not settled after the hand-over: %v", vs)
		}
		return nil
	})
}

// controllerProcess is berth's controller component of the instance.
func controllerProcess(t *testing.T, inst *instance) controlplane.ProcessRef {
	t.Helper()
	for _, comp := range inst.state(t).Components {
		if comp.Name == "berth-controller" {
			return comp.Process
		}
	}
	t.Fatal("no berth-controller component")
	return controlplane.ProcessRef{}
}
