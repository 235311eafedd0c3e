package hostile

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// podsLeft counts the pods of Job j that have not ended, deleted or not.
func podsLeft(env *testenv.Env, j *batchv1.Job) (left, terminating int, err error) {
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels(jobs.Pods(j))); err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		left++
		if p.DeletionTimestamp != nil {
			terminating++
		}
	}
	return left, terminating, nil
}

// workloadOf reads Job j's Workload.
func workloadOf(env *testenv.Env, j *batchv1.Job) (*berthv1.Workload, error) {
	var wl berthv1.Workload
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: j.Namespace, Name: jobs.WorkloadName(j)}, &wl)
	return &wl, err
}

// neverBothUntilAdmitted waits until Job next's Workload is admitted, and
// fails t if it ever was while a pod of Job gone had not stopped. The
// Workload is read before the pods, and a deleted Job's pods never come
// back: pods seen after an admission ran at that admission too. It returns
// how many reads saw gone's pods terminating, which a test needs above zero
// to prove anything.
func neverBothUntilAdmitted(t *testing.T, env *testenv.Env, gone, next *batchv1.Job) int {
	t.Helper()
	sawTerminating := 0
	testenv.Eventually(t, time.Minute, func() error {
		wl, err := workloadOf(env, next)
		if err != nil {
			return err
		}
		admitted := workload.IsAdmitted(wl)
		left, terminating, err := podsLeft(env, gone)
		if err != nil {
			return err
		}
		if terminating > 0 {
			sawTerminating++
		}
		if admitted && left > 0 {
			t.Fatalf("Job %s was admitted while %d pods of the deleted Job %s still ran (%d of them terminating): past the quota",
				next.Name, left, gone.Name, terminating)
		}
		if !admitted {
			return fmt.Errorf("Job %s not admitted yet; %d pods of %s left", next.Name, left, gone.Name)
		}
		return nil
	})
	return sawTerminating
}

// A user deletes their running Job to make room for the next: its pods take
// their time to stop (here 6 s, berth.dev/sim-stop-duration; a real
// container's grace period is 30 s by default), and until they have, the
// quota they use is not given to another. (Before, the Workload went with
// the Job at once, and the next Job's pods ran beside the terminating ones,
// past the quota.)
func TestDeletedJobKeepsItsQuotaWhileItsPodsStop(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	flavor, cqs := queues(t, env, "main")
	first := MakeJob("first", env.Namespace).Queue("main").Parallelism(4).Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "1h").PodAnnotation("berth.dev/sim-stop-duration", "6s").Obj()
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	running(t, env, first, 4)
	second := job(t, c, env, "second", "main", 4)
	testenv.Eventually(t, wait, func() error {
		_, err := workloadOf(env, second)
		return err
	})

	if err := c.Delete(ctx, first, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	if n := neverBothUntilAdmitted(t, env, first, second); n == 0 {
		t.Fatal("the first Job's pods were never seen terminating: this test proved nothing")
	}
	running(t, env, second, 4)
	holds(t, env, cqs[0], flavor, 1, "4")
}

// kubectl delete --cascade=orphan: the Job goes, its pods run on without
// it, and its Workload is left without an owner. Their quota stays held as
// long as they run (nothing else is admitted into it), and is given back,
// the Workload finished, once they are gone.
func TestOrphanedJobKeepsItsQuotaWhileItsPodsRun(t *testing.T) {
	env := testenv.New(t)
	c := env.AsEditor(t, mallory)
	flavor, cqs := queues(t, env, "main")
	first := job(t, c, env, "first", "main", 4)
	running(t, env, first, 4)
	second := job(t, c, env, "second", "main", 4)

	if err := c.Delete(ctx, first, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	// The garbage collector takes the owner references away.
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, first)
		if err != nil {
			return err
		}
		if len(wl.OwnerReferences) != 0 {
			return fmt.Errorf("Workload %s still has owners %v", wl.Name, wl.OwnerReferences)
		}
		return nil
	})
	if left, _, err := podsLeft(env, first); err != nil || left != 4 {
		t.Fatalf("the orphaned pods: %d running, %v; want 4 running on", left, err)
	}
	// Nothing is admitted in their place while they run.
	testenv.Consistently(t, 3*time.Second, func() error {
		wl, err := workloadOf(env, second)
		if err != nil {
			return err
		}
		if workload.IsAdmitted(wl) {
			return fmt.Errorf("Job %s admitted while the orphaned pods of %s run", second.Name, first.Name)
		}
		return nil
	})
	holds(t, env, cqs[0], flavor, 1, "4")

	// Their user deletes them: the quota comes back, and the Workload says why.
	if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(env.Namespace), client.MatchingLabels(jobs.Pods(first))); err != nil {
		t.Fatal(err)
	}
	neverBothUntilAdmitted(t, env, first, second)
	wl, err := workloadOf(env, first)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadFinished); c == nil || c.Reason != "OwnerDeleted" {
		t.Errorf("the orphaned Workload's Finished condition: %+v, want reason OwnerDeleted", c)
	}
	running(t, env, second, 4)
}
