package integration

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/runtimelimit"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// A Job labelled with a maximum run time runs that long and no longer: its
// Workload is then stopped and deactivated (reason
// MaximumExecutionTimeExceeded, with an event), the Job suspended, its
// quota given back once its pods are gone, and it is not queued again; the
// Workload keeps what it ran. A Job waiting behind it then runs.
func TestJobStopsAtItsMaximumRunTime(t *testing.T) {
	env := testenv.New(t)
	pool := env.Name("pool")
	env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	job := func(name string, limit string) *berthv1.Workload {
		j := MakeJob(name, env.Namespace).Queue("main").Parallelism(2).Request("cpu", "1").
			Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "1h").Obj()
		if limit != "" {
			j.Labels[berthv1.MaxExecTimeLabel] = limit
		}
		env.Create(t, j)
		return jobWorkload(t, env, j)
	}
	first := job("first", "3")
	if got := first.Spec.MaximumExecutionTimeSeconds; got == nil || *got != 3 {
		t.Fatalf("Workload maximumExecutionTimeSeconds %v, want 3 from the Job's label", got)
	}
	waitAdmitted(t, env, env.Namespace, first.Name)
	second := job("second", "") // waits: the first holds the whole quota
	waitPending(t, env, env.Namespace, second.Name, "")

	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, first.Name)
		if err != nil {
			return err
		}
		ev := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadEvicted)
		if workload.IsActive(wl) || workload.HasQuota(wl) || ev == nil || ev.Reason != runtimelimit.Exceeded {
			return fmt.Errorf("first: active %v, holds quota %v, evicted %+v; want it deactivated and released for %s",
				workload.IsActive(wl), workload.HasQuota(wl), ev, runtimelimit.Exceeded)
		}
		if ran := wl.Status.AccumulatedPastExecutionTimeSeconds; ran == nil || *ran < 3 {
			return fmt.Errorf("first: ran %v s, want at least 3", ran)
		}
		if j, err := getJob(env, env.Namespace, "first"); err != nil || j.Spec.Suspend == nil || !*j.Spec.Suspend {
			return fmt.Errorf("Job first not suspended (%v)", err)
		}
		return nil
	})
	var events corev1.EventList
	testenv.Eventually(t, wait, func() error {
		if err := env.Client.List(ctx, &events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == runtimelimit.Exceeded && e.InvolvedObject.Name == first.Name && strings.Contains(e.Message, "maximum 3s") {
				return nil
			}
		}
		return fmt.Errorf("no %s event on Workload %s", runtimelimit.Exceeded, first.Name)
	})
	// Its quota is the second's now; the first stays out of the queue.
	waitAdmitted(t, env, env.Namespace, second.Name)
	wl, err := getWorkload(env, env.Namespace, first.Name)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved); c == nil || !strings.Contains(c.Message, "maximumExecutionTimeSeconds") {
		t.Errorf("first, pending: %+v; want its message to say its run time is spent", c)
	}
	waitForMetrics(t, `berth_run_time_exceeded_workloads_total{cluster_queue="`+cq+`"} 1`)
}

// A ClusterQueue's run-time policy: a Job that asks for no limit runs its
// default, one that asks for more than its maximum runs the maximum; each
// is then stopped and deactivated, its Workload saying the limit it was
// held to.
func TestClusterQueueBoundsRunTime(t *testing.T) {
	env := testenv.New(t)
	pool := env.Name("pool")
	env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Obj())
	q := MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj()
	q.Spec.RunTime = &berthv1.RunTimePolicy{DefaultSeconds: ptr(int32(2)), MaximumSeconds: ptr(int32(4))}
	env.Create(t, q)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	job := func(name string, labels ...string) *berthv1.Workload {
		j := MakeJob(name, env.Namespace).Queue("main").Request("cpu", "1").
			Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "1h").Obj()
		for i := 0; i+1 < len(labels); i += 2 {
			j.Labels[labels[i]] = labels[i+1]
		}
		env.Create(t, j)
		return jobWorkload(t, env, j)
	}
	unbounded := job("unbounded", berthv1.MaxExecTimeLabel, "3600")
	for _, tc := range []struct {
		wl   *berthv1.Workload
		want int32
	}{
		{job("by-default"), 2},
		{unbounded, 4},
	} {
		testenv.Eventually(t, wait, func() error {
			wl, err := getWorkload(env, env.Namespace, tc.wl.Name)
			if err != nil {
				return err
			}
			ev := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadEvicted)
			if workload.IsActive(wl) || workload.HasQuota(wl) || ev == nil || ev.Reason != runtimelimit.Exceeded {
				return fmt.Errorf("%s: active %v, holds quota %v, evicted %+v; want it deactivated and released for %s",
					wl.Name, workload.IsActive(wl), workload.HasQuota(wl), ev, runtimelimit.Exceeded)
			}
			if got := wl.Spec.MaximumExecutionTimeSeconds; got == nil || *got != tc.want {
				return fmt.Errorf("%s: maximumExecutionTimeSeconds %v, want %d (the ClusterQueue's)", wl.Name, got, tc.want)
			}
			if ran := wl.Status.AccumulatedPastExecutionTimeSeconds; ran == nil || *ran < tc.want {
				return fmt.Errorf("%s: ran %v s, want at least %d", wl.Name, ran, tc.want)
			}
			return nil
		})
	}

	// A maximum set while a workload runs reaches it: it runs what is left,
	// here nothing. (Without a policy first, so that it runs unbounded.)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
		t.Fatal(err)
	}
	// A patch, not an update: the controller writes the ClusterQueue's
	// status meanwhile, and an update would conflict with it.
	patch := client.MergeFrom(q.DeepCopy())
	q.Spec.RunTime = nil
	if err := env.Client.Patch(ctx, q, patch); err != nil {
		t.Fatal(err)
	}
	late := job("late")
	waitAdmitted(t, env, env.Namespace, late.Name)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(q.DeepCopy())
	q.Spec.RunTime = &berthv1.RunTimePolicy{MaximumSeconds: ptr(int32(1))}
	if err := env.Client.Patch(ctx, q, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, late.Name)
		if err != nil {
			return err
		}
		if workload.IsActive(wl) || wl.Spec.MaximumExecutionTimeSeconds == nil || *wl.Spec.MaximumExecutionTimeSeconds != 1 {
			return fmt.Errorf("%s: active %v, limit %v; want it deactivated at the new maximum of 1 s", wl.Name, workload.IsActive(wl), wl.Spec.MaximumExecutionTimeSeconds)
		}
		return nil
	})
}
