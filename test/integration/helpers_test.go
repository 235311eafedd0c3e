package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
)

// The JobSet controller runs beside berth's, for the JobSet tests.
// afsSampling is how often the controller samples LocalQueues' usage for
// admission fair sharing: often, so a test sees it in status at once.
const afsSampling = "1s"

func TestMain(m *testing.M) {
	os.Exit(testenv.MainCluster(m, testenv.Cluster{Name: "testenv", With: []string{"jobset", "leaderworkerset"},
		ControllerArgs: []string{"--admission-fair-sharing-sampling-interval=" + afsSampling, "--admission-fair-sharing-half-life=10m",
			"--device-class-mappings=" + gpuResource + "=" + gpuClass}}))
}

const wait = 30 * time.Second

var ctx = context.Background()

func getWorkload(env *testenv.Env, ns, name string) (*berthv1.Workload, error) {
	var wl berthv1.Workload
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &wl)
	return &wl, err
}

// waitAdmitted waits until the workload holds quota and is admitted.
func waitAdmitted(t *testing.T, env *testenv.Env, ns, name string) *berthv1.Workload {
	t.Helper()
	var wl *berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		var err error
		if wl, err = getWorkload(env, ns, name); err != nil {
			return err
		}
		if !workload.IsAdmitted(wl) {
			return fmt.Errorf("workload %s/%s not admitted: %s", ns, name, describe(wl))
		}
		return nil
	})
	return wl
}

// waitPending waits until the workload's QuotaReserved condition is False with
// a message containing want.
func waitPending(t *testing.T, env *testenv.Env, ns, name, want string) *berthv1.Workload {
	t.Helper()
	var wl *berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		var err error
		if wl, err = getWorkload(env, ns, name); err != nil {
			return err
		}
		c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved)
		if c == nil || c.Status != "False" || !strings.Contains(c.Message, want) {
			return fmt.Errorf("workload %s/%s: want pending with %q, have %s", ns, name, want, describe(wl))
		}
		return nil
	})
	return wl
}

// jobWorkload waits for the Workload berth makes for a Job.
func jobWorkload(t *testing.T, env *testenv.Env, job *batchv1.Job) *berthv1.Workload {
	t.Helper()
	var wl *berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		var list berthv1.WorkloadList
		if err := env.Client.List(ctx, &list, client.InNamespace(job.Namespace),
			client.MatchingLabels{"berth.dev/job-uid": string(job.UID)}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d workloads for job %s, want 1", len(list.Items), job.Name)
		}
		wl = &list.Items[0]
		return nil
	})
	return wl
}

func getJob(env *testenv.Env, ns, name string) (*batchv1.Job, error) {
	var job batchv1.Job
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &job)
	return &job, err
}

func describe(wl *berthv1.Workload) string {
	var parts []string
	if wl.Status.Admission != nil {
		parts = append(parts, "admission in "+wl.Status.Admission.ClusterQueue)
	}
	for _, c := range wl.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	for _, c := range wl.Status.AdmissionChecks {
		parts = append(parts, fmt.Sprintf("check %s=%s", c.Name, c.State))
	}
	if len(parts) == 0 {
		return "no status"
	}
	return strings.Join(parts, "; ")
}

func clusterQueue(env *testenv.Env, name string) (*berthv1.ClusterQueue, error) {
	var cq berthv1.ClusterQueue
	err := env.Client.Get(ctx, types.NamespacedName{Name: name}, &cq)
	return &cq, err
}

// usageOf returns a ClusterQueue's reported usage of a resource in a flavor.
func usageOf(cq *berthv1.ClusterQueue, flavor, res string) (total, borrowed string) {
	for _, f := range cq.Status.FlavorsUsage {
		if f.Name != flavor {
			continue
		}
		for _, r := range f.Resources {
			if string(r.Name) == res {
				return r.Total.String(), r.Borrowed.String()
			}
		}
	}
	return "", ""
}

func ptr[T any](v T) *T { return &v }

// preemptLowerPriority lets ClusterQueue cq preempt lower priorities within
// it, and makes a WorkloadPriorityClass of 100 for this test, whose name it
// returns.
func preemptLowerPriority(t *testing.T, env *testenv.Env, cqName string) string {
	t.Helper()
	var cq berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cqName}, &cq); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cq.DeepCopy())
	cq.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: berthv1.PreemptionLowerPriority}
	if err := env.Client.Patch(ctx, &cq, patch); err != nil {
		t.Fatal(err)
	}
	high := env.Name("high")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: high}, Value: 100})
	return high
}

// waitForMetrics waits until the /metrics of the controller `berth up`
// runs (testenv's instance) has every line of want; ok is false when this
// run targets an existing cluster, whose controller it cannot reach.
func waitForMetrics(t *testing.T, want ...string) (ok bool) {
	t.Helper()
	inst := testenv.Instance()
	if inst == nil {
		return false
	}
	var port int
	for _, c := range inst.State().Components {
		if c.Name == "berth-controller" {
			port = c.Port
		}
	}
	testenv.Eventually(t, wait, func() error {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				return fmt.Errorf("metrics lack %s", w)
			}
		}
		return nil
	})
	return true
}
