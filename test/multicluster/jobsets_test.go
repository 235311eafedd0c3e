package multicluster

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// submitJobSet creates on the manager a JobSet of a driver and two
// workers of 1 cpu each that run for duration on a simulated node of the
// test.
func submitJobSet(t *testing.T, m *testenv.Env, name, duration string) *jobsetv1.JobSet {
	t.Helper()
	js := MakeJobSet(name, m.Namespace).Queue("lq").
		ReplicatedJob("driver", 1, 1).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", duration).Toleration(m.Toleration()).
		ReplicatedJob("workers", 2, 1).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", duration).Toleration(m.Toleration()).Obj()
	if err := m.Client.Create(ctx, js); err != nil {
		t.Fatalf("creating JobSet %s: %v", name, err)
	}
	return js
}

func jobSetWorkload(m *testenv.Env, js *jobsetv1.JobSet) (*berthv1.Workload, error) {
	var wl berthv1.Workload
	if err := m.Client.Get(ctx, types.NamespacedName{Namespace: js.Namespace, Name: jobsets.WorkloadName(js)}, &wl); err != nil {
		return nil, fmt.Errorf("the JobSet's Workload: %w", err)
	}
	return &wl, nil
}

// setQuota sets the cpu of a worker's ClusterQueue of the test.
func setQuota(t *testing.T, env *testenv.Env, cpu string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var cq berthv1.ClusterQueue
		if err := env.Client.Get(ctx, types.NamespacedName{Name: env.Name("cq")}, &cq); err != nil {
			return err
		}
		cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota = resource.MustParse(cpu)
		return env.Client.Update(ctx, &cq)
	})
}

// A JobSet submitted to the manager is dispatched like a Job: it waits
// while the one worker serving JobSets has no room (the other is named as
// not serving them), runs there once it has, completes, and the manager's
// JobSet shows it; the manager's JobSet controller never made a Job of it,
// and no copy is left.
func TestJobSetRunsOnAWorkerThatServesJobSets(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "0", worker2: "4"})
	m, w1 := envs[manager], envs[worker1]
	js := submitJobSet(t, m, "train", "1s")

	var created jobsetv1.JobSet
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(js), &created); err != nil {
		t.Fatal(err)
	}
	if created.Spec.ManagedBy == nil || *created.Spec.ManagedBy != jobsets.ManagedBy {
		t.Fatalf("the manager's JobSet has spec.managedBy %v; want %s, so the manager's JobSet controller leaves it alone",
			created.Spec.ManagedBy, jobsets.ManagedBy)
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := jobSetWorkload(m, &created)
		if err != nil {
			return err
		}
		want := "dispatched to worker1; waiting for one of them to admit it; not copied to worker2: it does not serve JobSets"
		if len(wl.Status.AdmissionChecks) != 1 || !strings.HasPrefix(wl.Status.AdmissionChecks[0].Message, want) {
			return fmt.Errorf("checks %+v; want the message to start %q", wl.Status.AdmissionChecks, want)
		}
		return nil
	})

	setQuota(t, w1, "4")
	testenv.Eventually(t, wait, func() error {
		wl, err := jobSetWorkload(m, &created)
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(wl) || wl.Status.ClusterName != worker1 {
			return fmt.Errorf("workload admitted %v on %q, want on worker1; checks %+v", workload.IsAdmitted(wl),
				wl.Status.ClusterName, wl.Status.AdmissionChecks)
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		var j jobsetv1.JobSet
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(js), &j); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(j.Status.Conditions, string(jobsetv1.JobSetCompleted)) {
			return fmt.Errorf("the manager's JobSet is not Completed: %+v", j.Status)
		}
		if wl, err := jobSetWorkload(m, &j); err != nil || !workload.IsFinished(wl) {
			return fmt.Errorf("the manager's workload is not Finished: %+v %v", wl, err)
		}
		return nil
	})
	waitNoJobSetCopy(t, w1, js.Name)
	jobsOnManager, err := m.Kube.BatchV1().Jobs(m.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(jobsOnManager.Items) != 0 {
		t.Errorf("%d Jobs on the manager (%v); its JobSet controller must make none", len(jobsOnManager.Items), err)
	}
}

// A JobSet stopped on the manager while it runs on a worker is taken back:
// its copy there goes, its quota on the manager is given back, and the
// manager's JobSet is suspended.
func TestStoppedJobSetComesBackFromItsWorker(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "4"})
	m, w1 := envs[manager], envs[worker1]
	js := submitJobSet(t, m, "serve", "10m")
	testenv.Eventually(t, wait, func() error {
		var c jobsetv1.JobSet
		if err := w1.Client.Get(ctx, client.ObjectKeyFromObject(js), &c); err != nil {
			return err
		}
		if jobsets.Suspended(&c) {
			return fmt.Errorf("the copy on worker1 is suspended")
		}
		return nil
	})
	var created jobsetv1.JobSet
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(js), &created); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := jobSetWorkload(m, &created)
		if err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(wl.DeepCopy(), client.MergeFromWithOptimisticLock{})
		wl.Spec.Active = new(false)
		return m.Client.Patch(ctx, wl, patch)
	})
	waitNoJobSetCopy(t, w1, js.Name)
	testenv.Eventually(t, wait, func() error {
		wl, err := jobSetWorkload(m, &created)
		if err != nil {
			return err
		}
		if workload.HasQuota(wl) || wl.Status.ClusterName != "" {
			return fmt.Errorf("the manager's workload holds quota %v, runs on %q; want neither", workload.HasQuota(wl), wl.Status.ClusterName)
		}
		var j jobsetv1.JobSet
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(js), &j); err != nil {
			return err
		}
		if !jobsets.Suspended(&j) {
			return fmt.Errorf("the manager's JobSet is not suspended")
		}
		return nil
	})
}

// waitNoJobSetCopy waits until a worker holds no copy of the JobSet, nor of
// any Workload of the test.
func waitNoJobSetCopy(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var js jobsetv1.JobSet
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: name}, &js)
		if err == nil {
			return fmt.Errorf("a copy of JobSet %s is still on the worker (deleting: %v)", name, js.DeletionTimestamp != nil)
		}
		return client.IgnoreNotFound(err)
	})
	waitNoCopy(t, env, name)
}
