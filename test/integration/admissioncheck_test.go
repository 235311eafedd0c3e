package integration

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// makeCheck creates an AdmissionCheck decided by the test itself, Active
// or not.
func makeCheck(t *testing.T, env *testenv.Env, name string, active bool) *berthv1.AdmissionCheck {
	t.Helper()
	ac := &berthv1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: berthv1.AdmissionCheckSpec{ControllerName: "example.com/test"}}
	env.Create(t, ac)
	setCheckActive(t, env, ac, active)
	return ac
}

func setCheckActive(t *testing.T, env *testenv.Env, ac *berthv1.AdmissionCheck, active bool) {
	t.Helper()
	status, reason := metav1.ConditionFalse, "Starting"
	if active {
		status, reason = metav1.ConditionTrue, "Ready"
	}
	meta.SetStatusCondition(&ac.Status.Conditions, metav1.Condition{Type: berthv1.AdmissionCheckActive,
		Status: status, Reason: reason, Message: "set by the test"})
	if err := env.Client.Status().Update(ctx, ac); err != nil {
		t.Fatalf("setting AdmissionCheck %s Active=%v: %v", ac.Name, active, err)
	}
}

// setCheck plays the check's controller: it sets the check's state on the
// workload.
func setCheck(t *testing.T, env *testenv.Env, name, check string, state berthv1.CheckState, message string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, name)
		if err != nil {
			return err
		}
		orig := wl.DeepCopy()
		for i := range wl.Status.AdmissionChecks {
			if c := &wl.Status.AdmissionChecks[i]; c.Name == check {
				c.State, c.Message, c.LastTransitionTime = state, message, metav1.Now()
			}
		}
		return env.Client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
}

// waitReserved waits until the workload holds quota and waits for check,
// Pending; its Job is then still suspended.
func waitReserved(t *testing.T, env *testenv.Env, name, check string) *berthv1.Workload {
	t.Helper()
	var wl *berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		var err error
		if wl, err = getWorkload(env, env.Namespace, name); err != nil {
			return err
		}
		if !workload.HasQuota(wl) || workload.IsAdmitted(wl) || len(wl.Status.AdmissionChecks) != 1 ||
			wl.Status.AdmissionChecks[0].Name != check || wl.Status.AdmissionChecks[0].State != berthv1.CheckPending {
			return fmt.Errorf("workload %s: want quota reserved and check %s Pending, have %s", name, check, describe(wl))
		}
		return nil
	})
	return wl
}

func jobSuspended(env *testenv.Env, name string) (bool, error) {
	j, err := getJob(env, env.Namespace, name)
	if err != nil {
		return false, err
	}
	return j.Spec.Suspend != nil && *j.Spec.Suspend, nil
}

// Two-phase admission against the real control plane: a ClusterQueue is
// inactive while its check is missing or not Active; a Job reserves quota,
// stays suspended while the check is Pending, and runs once it is Ready; a
// Retry gives the quota back and queues the workload again after a
// backoff; a Rejected deactivates it, saying which check and why.
func TestAdmissionChecks(t *testing.T) {
	env := testenv.New(t)
	pool := env.Name("pool")
	env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	rf, cq, check := env.Name("rf"), env.Name("cq"), env.Name("budget")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).AdmissionChecks(check).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	job := func(name string) *berthv1.Workload {
		j := MakeJob(name, env.Namespace).Queue("main").Parallelism(1).Request("cpu", "1").
			Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "1h").Obj()
		env.Create(t, j)
		return jobWorkload(t, env, j)
	}
	queueActive := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		testenv.Eventually(t, wait, func() error {
			q, err := clusterQueue(env, cq)
			if err != nil {
				return err
			}
			c := meta.FindStatusCondition(q.Status.Conditions, "Active")
			if c == nil || c.Status != status || c.Reason != reason {
				return fmt.Errorf("ClusterQueue Active: %+v; want %s with reason %s", c, status, reason)
			}
			return nil
		})
	}

	// No such check yet: the queue admits nothing, and says why.
	queueActive(metav1.ConditionFalse, "AdmissionCheckNotFound")
	first := job("first")
	waitPending(t, env, env.Namespace, first.Name, "AdmissionCheck "+check+" not found")
	ac := makeCheck(t, env, check, false)
	queueActive(metav1.ConditionFalse, "AdmissionCheckInactive")
	setCheckActive(t, env, ac, true)
	queueActive(metav1.ConditionTrue, "Ready")

	// Reserved, the Job waits suspended for the check; Ready, it runs.
	waitReserved(t, env, first.Name, check)
	if suspended, err := jobSuspended(env, "first"); err != nil || !suspended {
		t.Fatalf("Job first runs while its check is Pending (suspended %v, %v)", suspended, err)
	}
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(q, rf, "cpu"); total != "1" || q.Status.ReservingWorkloads != 1 || q.Status.AdmittedWorkloads != 0 {
			return fmt.Errorf("ClusterQueue: %s cpu used, %d reserving, %d admitted; want the quota held, 1 reserving, 0 admitted",
				total, q.Status.ReservingWorkloads, q.Status.AdmittedWorkloads)
		}
		return nil
	})
	setCheck(t, env, first.Name, check, berthv1.CheckReady, "")
	waitAdmitted(t, env, env.Namespace, first.Name)
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, "first")
		if err != nil {
			return err
		}
		if j.Status.Active != 1 {
			return fmt.Errorf("Job first: suspend %v, %d pods active", *j.Spec.Suspend, j.Status.Active)
		}
		return nil
	})

	// Retry: the quota goes back, and after the backoff it is reserved again
	// with the check Pending once more.
	second := job("second")
	waitReserved(t, env, second.Name, check)
	setCheck(t, env, second.Name, check, berthv1.CheckRetry, "no capacity yet")
	// The backoff is a second: the eviction may be over before a poll sees
	// it, so its event and the requeue count are what tell.
	waitEvent(t, env, second.Name, "Evicted", "admission check "+check+" asked to retry later: no capacity yet")
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, second.Name)
		if err != nil {
			return err
		}
		if rs := wl.Status.RequeueState; rs == nil || rs.Count == nil || *rs.Count != 1 || rs.RequeueAt == nil {
			return fmt.Errorf("want requeued once with a backoff; have %+v: %s", rs, describe(wl))
		}
		return nil
	})
	waitReserved(t, env, second.Name, check)
	if suspended, err := jobSuspended(env, "second"); err != nil || !suspended {
		t.Fatalf("Job second runs while its check is Pending (suspended %v, %v)", suspended, err)
	}

	// Rejected: deactivated, evicted, the Job suspended, the check named.
	setCheck(t, env, second.Name, check, berthv1.CheckRejected, "over budget")
	wl := waitPending(t, env, env.Namespace, second.Name, "admission check "+check+" rejected the workload: over budget")
	if workload.IsActive(wl) {
		t.Errorf("a rejected workload is still active")
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadEvicted); c == nil || c.Reason != "AdmissionCheckRejected" {
		t.Errorf("Evicted: %+v; want reason AdmissionCheckRejected", c)
	}
	if suspended, err := jobSuspended(env, "second"); err != nil || !suspended {
		t.Errorf("Job second after its rejection: suspended %v, %v", suspended, err)
	}
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(q, rf, "cpu"); total != "1" || q.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("ClusterQueue uses %s cpu for %d workloads; want only the first's 1", total, q.Status.AdmittedWorkloads)
		}
		return nil
	})

	// A check may take back its Ready: the running Job gives its quota back,
	// is suspended, and queues again with its checks Pending.
	setCheck(t, env, first.Name, check, berthv1.CheckRetry, "budget revoked")
	waitEvent(t, env, first.Name, "Evicted", "admission check "+check+" asked to retry later: budget revoked")
	testenv.Eventually(t, wait, func() error {
		if suspended, err := jobSuspended(env, "first"); err != nil || !suspended {
			return fmt.Errorf("Job first after its check took back Ready: suspended %v, %v", suspended, err)
		}
		return nil
	})
	waitReserved(t, env, first.Name, check)
}

// The API refuses an AdmissionCheck without a controller, and a change of
// controller.
func TestAdmissionCheckValidation(t *testing.T) {
	env := testenv.New(t)
	err := env.Client.Create(ctx, &berthv1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: env.Name("none")}})
	if err == nil || !strings.Contains(err.Error(), "spec.controllerName") {
		t.Errorf("no controllerName: %v", err)
	}
	ac := makeCheck(t, env, env.Name("check"), true)
	ac.Spec.ControllerName = "example.com/other"
	if err := env.Client.Update(ctx, ac); err == nil || !strings.Contains(err.Error(), "spec.controllerName is immutable") {
		t.Errorf("changing controllerName: %v", err)
	}
}
