package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

func cronJob(name, ns, queue string) *batchv1.CronJob {
	job := MakeJob("", ns).Queue(queue).Request("cpu", "100m").Obj()
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: job.Labels},
				Spec:       job.Spec,
			},
		},
	}
}

// Jobs a CronJob makes from a labelled jobTemplate are queued like any other:
// created suspended, given a Workload, admitted and started.
func TestCronJobJobsAreQueued(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, cronJob("every-minute", env.Namespace, "main"))

	// The CronJob controller makes its first Job at the next minute boundary.
	var job batchv1.Job
	testenv.Eventually(t, 75*time.Second, func() error {
		var list batchv1.JobList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("the CronJob has made no Job yet")
		}
		job = list.Items[0]
		return nil
	})
	wl := jobWorkload(t, env, &job)
	waitAdmitted(t, env, env.Namespace, wl.Name)
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, job.Name)
		if err != nil || jobs.Suspended(j) {
			return fmt.Errorf("CronJob's Job not started (%v)", err)
		}
		return nil
	})
}

// Lesson 2: deleting a CronJob, its queues and its namespace while its Jobs
// keep arriving leaves no Workload, no stuck finalizer and no quota usage.
func TestTeardownWhileJobsKeepArriving(t *testing.T) {
	env := testenv.New(t)
	rf, cqName := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	cq := MakeClusterQueue(cqName).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj()
	env.Create(t, cq)
	lq := MakeLocalQueue("main", env.Namespace, cqName).Obj()
	env.Create(t, lq)
	cj := cronJob("storm", env.Namespace, "main")
	env.Create(t, cj)

	// Jobs arrive as fast as a client can make them, owned by the CronJob as
	// the CronJob controller would make them, until the namespace refuses.
	arrivals, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	var made int
	var stormErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		yes := true
		// Bounded: it stops at the namespace's refusal, at the test's end,
		// after 5 minutes, or at 10 unexpected errors in a row (then failing
		// the test) rather than spinning on a broken API server.
		deadline := time.Now().Add(5 * time.Minute)
		failures := 0
		for i := 0; arrivals.Err() == nil; i++ {
			if time.Now().After(deadline) {
				stormErr = fmt.Errorf("the namespace still took Jobs after 5 minutes")
				return
			}
			job := MakeJob(fmt.Sprintf("storm-%d", i), env.Namespace).Queue("main").Request("cpu", "100m").Obj()
			job.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name,
				UID: cj.UID, Controller: &yes}}
			err := env.Client.Create(arrivals, job)
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
				return // the namespace is terminating or gone
			case err == nil:
				made++
				failures = 0
			case arrivals.Err() != nil:
				return
			default:
				if failures++; failures >= 10 {
					stormErr = fmt.Errorf("creating Jobs failed %d times in a row: %w", failures, err)
					return
				}
			}
		}
	}()
	// Some are admitted and hold quota before the teardown starts.
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cqName)
		if err != nil {
			return err
		}
		if q.Status.ReservingWorkloads < 5 || q.Status.PendingWorkloads < 5 {
			return fmt.Errorf("reserving %d, pending %d; waiting for both to reach 5", q.Status.ReservingWorkloads, q.Status.PendingWorkloads)
		}
		return nil
	})

	background := client.PropagationPolicy(metav1.DeletePropagationBackground)
	for _, obj := range []client.Object{cj, lq} {
		if err := env.Client.Delete(ctx, obj, background); err != nil {
			t.Fatalf("deleting %s: %v", obj.GetName(), err)
		}
	}
	var ns corev1.Namespace
	ns.Name = env.Namespace
	if err := env.Client.Delete(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if stormErr != nil {
		t.Fatal(stormErr)
	}
	t.Logf("%d Jobs made during the test", made)

	// The namespace goes away entirely: nothing in it is held by a finalizer.
	testenv.Eventually(t, 2*time.Minute, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: env.Namespace}, &ns)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		var wls berthv1.WorkloadList
		_ = env.Client.List(ctx, &wls, client.InNamespace(env.Namespace))
		var withFinalizers int
		for _, w := range wls.Items {
			if len(w.Finalizers) > 0 {
				withFinalizers++
			}
		}
		return fmt.Errorf("namespace still %s; %d workloads left, %d with finalizers", ns.Status.Phase, len(wls.Items), withFinalizers)
	})
	// No quota stays behind, even for a queue of the same name made afresh.
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cqName)
		if err != nil {
			return err
		}
		total, _ := usageOf(q, rf, "cpu")
		if total != "0" || q.Status.ReservingWorkloads != 0 || q.Status.PendingWorkloads != 0 {
			return fmt.Errorf("ClusterQueue after teardown: cpu usage %q, reserving %d, pending %d",
				total, q.Status.ReservingWorkloads, q.Status.PendingWorkloads)
		}
		return nil
	})
	if err := env.Client.Delete(ctx, cq); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: cqName}, &berthv1.ClusterQueue{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterQueue not deleted yet (%v)", err)
		}
		return nil
	})
	fresh := MakeClusterQueue(cqName).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj()
	env.Create(t, fresh)
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cqName)
		if err != nil {
			return err
		}
		total, _ := usageOf(q, rf, "cpu")
		if total != "0" || q.Status.ReservingWorkloads != 0 {
			return fmt.Errorf("a fresh ClusterQueue of the same name reports usage %q, reserving %d", total, q.Status.ReservingWorkloads)
		}
		return nil
	})
}
