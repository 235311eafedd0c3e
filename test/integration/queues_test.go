package integration

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/version"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// A ClusterQueue borrows its cohort's idle quota, and its status says how much.
func TestBorrowingAcrossACohort(t *testing.T) {
	env := testenv.New(t)
	rf, a, b, co := env.Name("rf"), env.Name("a"), env.Name("b"), env.Name("co")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(a).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeClusterQueue(b).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "6", "", "3").Obj()).Obj())
	env.Create(t, MakeLocalQueue("a", env.Namespace, a).Obj())
	env.Create(t, MakeLocalQueue("b", env.Namespace, b).Obj())

	// a has 2 of its own and may borrow b's lendable 3.
	env.Create(t, MakeWorkload("big", env.Namespace).Queue("a").Request("cpu", "5").Obj())
	waitAdmitted(t, env, env.Namespace, "big")
	testenv.Eventually(t, wait, func() error {
		cq, err := clusterQueue(env, a)
		if err != nil {
			return err
		}
		if total, borrowed := usageOf(cq, rf, "cpu"); total != "5" || borrowed != "3" {
			return fmt.Errorf("usage %q borrowed %q; want 5 and 3", total, borrowed)
		}
		return nil
	})
	// What b lent is gone; what it kept is still its own.
	env.Create(t, MakeWorkload("more", env.Namespace).Queue("a").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "more", "needs 1 cpu in flavor "+rf+", 0 free")
	env.Create(t, MakeWorkload("owner", env.Namespace).Queue("b").Request("cpu", "3").Obj())
	waitAdmitted(t, env, env.Namespace, "owner")
}

// Lesson 3: a workload that arrives before its LocalQueue, ClusterQueue or
// ResourceFlavor waits with a reason and is admitted as soon as the missing
// object appears, with no other event.
func TestObjectsArrivingOutOfOrder(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeWorkload("early", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "early", "LocalQueue "+env.Namespace+"/main does not exist")

	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	waitPending(t, env, env.Namespace, "early", "ClusterQueue "+cq+" does not exist")

	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	waitPending(t, env, env.Namespace, "early", "ResourceFlavor "+rf+" not found")
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		for _, c := range q.Status.Conditions {
			if c.Type == "Active" && c.Status == metav1.ConditionFalse && c.Reason == "FlavorNotFound" {
				return nil
			}
		}
		return fmt.Errorf("ClusterQueue conditions %+v lack Active=False FlavorNotFound", q.Status.Conditions)
	})

	env.Create(t, MakeResourceFlavor(rf).Obj())
	waitAdmitted(t, env, env.Namespace, "early")
}

// Deleting a ClusterQueue, LocalQueue or ResourceFlavor that admitted work
// uses leaves it Terminating, saying what holds it, while that work runs on
// undisturbed; it goes once the work finishes. Meanwhile nothing new is
// admitted through it.
func TestQueueObjectsInUseStayUntilTheirWorkFinishes(t *testing.T) {
	env := testenv.New(t)
	rfName, cqName := env.Name("rf"), env.Name("cq")
	rf := MakeResourceFlavor(rfName).Obj()
	cq := MakeClusterQueue(cqName).ResourceGroup(MakeFlavorQuotas(rfName).Resource("cpu", "4").Obj()).Obj()
	lq := MakeLocalQueue("main", env.Namespace, cqName).Obj()
	for _, obj := range []client.Object{rf, cq, lq} {
		env.Create(t, obj)
	}
	env.Create(t, MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitAdmitted(t, env, env.Namespace, "w")
	objs := []client.Object{&berthv1.ResourceFlavor{}, &berthv1.ClusterQueue{}, &berthv1.LocalQueue{}}
	keys := []client.ObjectKey{{Name: rfName}, {Name: cqName}, {Namespace: env.Namespace, Name: "main"}}
	// The queues were guarded before they admitted anything: deleted the
	// moment their work started, they still hold.
	for i, obj := range objs[1:] {
		if err := env.Client.Get(ctx, keys[i+1], obj); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(obj.GetFinalizers(), berthv1.ResourceInUseFinalizer) {
			t.Errorf("%T %s admitted work before it had its in-use finalizer: %v", obj, obj.GetName(), obj.GetFinalizers())
		}
	}
	testenv.Eventually(t, wait, func() error {
		for i, obj := range objs {
			if err := env.Client.Get(ctx, keys[i], obj); err != nil {
				return err
			}
			if !slices.Contains(obj.GetFinalizers(), "berth.dev/resource-in-use") {
				return fmt.Errorf("%T %s has no in-use finalizer: %v", obj, obj.GetName(), obj.GetFinalizers())
			}
		}
		return nil
	})
	for _, obj := range []client.Object{rf, cq, lq} {
		if err := env.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	held := "held by 1 admitted workload until they finish: " + env.Namespace + "/w"
	testenv.Eventually(t, wait, func() error {
		for i, obj := range objs {
			if err := env.Client.Get(ctx, keys[i], obj); err != nil {
				return err
			}
			var conds []metav1.Condition
			switch o := obj.(type) {
			case *berthv1.ResourceFlavor:
				conds = o.Status.Conditions
			case *berthv1.ClusterQueue:
				conds = o.Status.Conditions
			case *berthv1.LocalQueue:
				conds = o.Status.Conditions
			}
			c := meta.FindStatusCondition(conds, "Terminating")
			if obj.GetDeletionTimestamp() == nil || c == nil || !strings.Contains(c.Message, held) {
				return fmt.Errorf("%T %s: deleting %v, Terminating condition %+v; want one saying %q",
					obj, obj.GetName(), obj.GetDeletionTimestamp() != nil, c, held)
			}
		}
		return nil
	})
	// The running work keeps its quota; new work waits.
	env.Create(t, MakeWorkload("late", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "late", "being deleted")
	if wl, err := getWorkload(env, env.Namespace, "w"); err != nil || !workload.IsAdmitted(wl) {
		t.Fatalf("the running workload lost its admission (%v): %s", err, describe(wl))
	}

	wl, err := getWorkload(env, env.Namespace, "w")
	if err != nil {
		t.Fatal(err)
	}
	orig := wl.DeepCopy()
	workload.SetFinished(wl, "Done", "finished by the test", time.Now())
	if err := env.Client.Status().Patch(ctx, wl, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		for i, obj := range objs {
			if err := env.Client.Get(ctx, keys[i], obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still there (%v) after its work finished", obj, keys[i].Name, err)
			}
		}
		return nil
	})
}

// A ClusterQueue that goes while work still holds quota in it (its finalizer
// removed by hand) sends that work back to pending, saying why; it is
// admitted again when the queue comes back.
func TestForcedClusterQueueDeletionSendsWorkloadsBack(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	q := MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj()
	env.Create(t, q)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitAdmitted(t, env, env.Namespace, "w")
	testenv.Eventually(t, wait, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, q); err != nil {
			return err
		}
		if len(q.Finalizers) == 0 {
			return fmt.Errorf("no in-use finalizer yet")
		}
		return nil
	})

	if err := env.Client.Delete(ctx, q); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		var cur berthv1.ClusterQueue
		if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &cur); err != nil {
			return err
		}
		if cur.DeletionTimestamp == nil || len(cur.Finalizers) == 0 {
			return fmt.Errorf("ClusterQueue not held: finalizers %v", cur.Finalizers)
		}
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cur.Finalizers = nil
		return env.Client.Patch(ctx, &cur, patch)
	})
	wl := waitPending(t, env, env.Namespace, "w", "ClusterQueue "+cq)
	if wl.Status.Admission != nil {
		t.Errorf("evicted workload still has an admission: %+v", wl.Status.Admission)
	}
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	waitAdmitted(t, env, env.Namespace, "w")
}

// namespaceSelector: a namespace outside it is refused with a reason; labelling
// the namespace admits its workloads.
func TestNamespaceSelector(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).
		NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": cq}}).
		ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "w", "does not match the namespaceSelector of ClusterQueue "+cq)

	var ns corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: env.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels["team"] = cq
	if err := env.Client.Patch(ctx, &ns, patch); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, "w")
}

// stopPolicy Hold admits nothing new but lets admitted work run; None resumes.
func TestHoldStopsAdmission(t *testing.T) {
	env := testenv.New(t)
	rf, cqName := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	cq := MakeClusterQueue(cqName).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj()
	env.Create(t, cq)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cqName).Obj())
	env.Create(t, MakeWorkload("running", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitAdmitted(t, env, env.Namespace, "running")

	patch := client.MergeFrom(cq.DeepCopy())
	cq.Spec.StopPolicy = berthv1.Hold
	if err := env.Client.Patch(ctx, cq, patch); err != nil {
		t.Fatal(err)
	}
	env.Create(t, MakeWorkload("held", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "held", "stopped by its stopPolicy")
	waitAdmitted(t, env, env.Namespace, "running") // still admitted

	patch = client.MergeFrom(cq.DeepCopy())
	cq.Spec.StopPolicy = berthv1.StopPolicyNone
	if err := env.Client.Patch(ctx, cq, patch); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, "held")
}

// StrictFIFO: a head that does not fit blocks later workloads that would;
// BestEffortFIFO lets them pass.
func TestQueueingStrategies(t *testing.T) {
	env := testenv.New(t)
	rf := env.Name("rf")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	for _, s := range []berthv1.QueueingStrategy{berthv1.StrictFIFO, berthv1.BestEffortFIFO} {
		cq := env.Name(strings.ToLower(string(s)))
		env.Create(t, MakeClusterQueue(cq).Strategy(s).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
		lq := strings.ToLower(string(s))
		env.Create(t, MakeLocalQueue(lq, env.Namespace, cq).Obj())
		env.Create(t, MakeWorkload(lq+"-big", env.Namespace).Queue(lq).Priority(10).Request("cpu", "3").Obj())
		waitPending(t, env, env.Namespace, lq+"-big", "needs 3 cpu")
		env.Create(t, MakeWorkload(lq+"-small", env.Namespace).Queue(lq).Priority(1).Request("cpu", "1").Obj())
	}
	waitAdmitted(t, env, env.Namespace, "besteffortfifo-small")
	// The StrictFIFO small one must still wait: once BestEffortFIFO's admission
	// is in, a cycle has certainly passed over it.
	wl, err := getWorkload(env, env.Namespace, "strictfifo-small")
	if err != nil {
		t.Fatal(err)
	}
	if wl.Status.Admission != nil {
		t.Fatalf("StrictFIFO admitted a workload behind a head that does not fit: %s", describe(wl))
	}
}

// Queue status and the controller's metrics report pending and admitted work.
func TestQueueStatusAndMetrics(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("in", env.Namespace).Queue("main").Request("cpu", "2").Obj())
	env.Create(t, MakeWorkload("out", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitAdmitted(t, env, env.Namespace, "in")
	waitPending(t, env, env.Namespace, "out", "needs 1 cpu")
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		var lq berthv1.LocalQueue
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "main"}, &lq); err != nil {
			return err
		}
		if q.Status.PendingWorkloads != 1 || q.Status.AdmittedWorkloads != 1 || lq.Status.PendingWorkloads != 1 || lq.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("ClusterQueue pending/admitted %d/%d, LocalQueue %d/%d; want 1/1 each",
				q.Status.PendingWorkloads, q.Status.AdmittedWorkloads, lq.Status.PendingWorkloads, lq.Status.AdmittedWorkloads)
		}
		return nil
	})

	if testenv.Instance() == nil {
		t.Skip("metrics are read from the controller berth up runs; this run targets an existing cluster")
	}
	// The controller says which build it is, as `berth version` does.
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("berth version: %v", err)
	}
	var v version.Info
	if err := json.Unmarshal(out, &v); err != nil || v.Version == "" || v.GoVersion == "" {
		t.Fatalf("berth version -o json: %v\n%s", err, out)
	}
	buildInfo := fmt.Sprintf(`berth_build_info{commit=%q,date=%q,go_version=%q,version=%q} 1`, v.Commit, v.Date, v.GoVersion, v.Version)
	waitForMetrics(t,
		`berth_pending_workloads{cluster_queue="`+cq+`",status="inadmissible"} 1`,
		`berth_reserving_workloads{cluster_queue="`+cq+`"} 1`,
		`berth_cluster_queue_resource_usage{cluster_queue="`+cq+`",flavor="`+rf+`",resource="cpu"} 2`,
		`berth_cluster_queue_nominal_quota{cluster_queue="`+cq+`",flavor="`+rf+`",resource="cpu"} 2`,
		`berth_admitted_workloads_total{cluster_queue="`+cq+`"} 1`,
		`berth_admission_wait_time_seconds_count{cluster_queue="`+cq+`"} 1`,
		`berth_admission_attempts_total{result="admitted"}`,
		`berth_admission_cycle_duration_seconds_count`,
		buildInfo,
	)
}
