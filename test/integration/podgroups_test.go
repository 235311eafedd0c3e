package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/podgroups"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
)

// groupPod is a queued Pod (LocalQueue main) of pod group group, which has
// total Pods.
func groupPod(name, ns, group string, total int, cpu, duration string) *corev1.Pod {
	p := plainPod(name, ns, cpu, duration, map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.PodGroupNameLabel: group})
	p.Annotations[berthv1.PodGroupTotalCountAnnotation] = fmt.Sprint(total)
	return p
}

// waitEvent waits for an event about the named object of the test's
// namespace with reason and a note containing want.
func waitEvent(t *testing.T, env *testenv.Env, name, reason, want string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		evs, err := env.Kube.EventsV1().Events(env.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + name})
		if err != nil {
			return err
		}
		var notes []string
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Note, want) {
				return nil
			}
			notes = append(notes, e.Reason+": "+e.Note)
		}
		return fmt.Errorf("no %s event %q about %s; have %q", reason, want, name, notes)
	})
}

// allGated checks that every one of names is there and still gated.
func allGated(env *testenv.Env, names ...string) error {
	for _, n := range names {
		p, err := getPod(env, n)
		if err != nil {
			return err
		}
		if !pods.Gated(p) {
			return fmt.Errorf("pod %s was let go (node %q)", n, p.Spec.NodeName)
		}
	}
	return nil
}

// A group of 8 waits, without a Workload, for its last Pod, saying how many
// are missing; then its one Workload is admitted and all 8 run on the
// flavor's node; when they have all succeeded it is finished, its quota
// released and every finalizer gone.
func TestPodGroupWaitsForItsLastPodThenRunsWhole(t *testing.T) {
	env := testenv.New(t)
	rf, cq, node := podQueue(t, env, "8")
	var names []string
	for i := range 7 {
		p := groupPod(fmt.Sprintf("worker-%d", i), env.Namespace, "train", 8, "1", "2s")
		env.Create(t, p)
		names = append(names, p.Name)
	}
	waitEvent(t, env, "worker-6", "PodGroupWaiting", "pod group train has 7 of its 8 Pods; waiting for 1 more")
	testenv.Consistently(t, time.Second, func() error {
		if _, err := getWorkload(env, env.Namespace, podgroups.WorkloadName("train")); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the incomplete group has a Workload (%v)", err)
		}
		return allGated(env, names...)
	})

	env.Create(t, groupPod("worker-7", env.Namespace, "train", 8, "1", "2s"))
	names = append(names, "worker-7")
	wl := waitAdmitted(t, env, env.Namespace, podgroups.WorkloadName("train"))
	if ps := wl.Spec.PodSets; len(ps) != 1 || ps[0].Count != 8 || len(wl.OwnerReferences) != 8 {
		t.Errorf("workload pod sets %+v, %d owners; want one pod set of 8, owned by the 8 pods", ps, len(wl.OwnerReferences))
	}
	testenv.Eventually(t, wait, func() error {
		for _, n := range names {
			p, err := getPod(env, n)
			if err != nil {
				return err
			}
			if p.Spec.NodeName != node.Name {
				return fmt.Errorf("pod %s gated=%v on node %q, want %s", n, pods.Gated(p), p.Spec.NodeName, node.Name)
			}
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, podgroups.WorkloadName("train"))
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) || !strings.Contains(describe(wl), "PodsSucceeded") {
			return fmt.Errorf("group workload not finished as succeeded: %s", describe(wl))
		}
		for _, n := range names {
			p, err := getPod(env, n)
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodSucceeded || len(p.Finalizers) != 0 {
				return fmt.Errorf("pod %s phase %s finalizers %v; want Succeeded, none", n, p.Status.Phase, p.Finalizers)
			}
		}
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(q, rf, "cpu"); total != "0" && total != "" {
			return fmt.Errorf("ClusterQueue cpu usage %q after the group finished", total)
		}
		return nil
	})
}

// A group that does not fit its quota is not partly admitted: all its Pods
// wait, and its Workload says what it needs.
func TestPodGroupThatDoesNotFitWaitsWhole(t *testing.T) {
	env := testenv.New(t)
	rf, _, _ := podQueue(t, env, "4")
	var names []string
	for i := range 8 {
		p := groupPod(fmt.Sprintf("w%d", i), env.Namespace, "big", 8, "1", "1s")
		env.Create(t, p)
		names = append(names, p.Name)
	}
	waitPending(t, env, env.Namespace, podgroups.WorkloadName("big"), "cpu in flavor "+rf)
	testenv.Consistently(t, 2*time.Second, func() error { return allGated(env, names...) })
}

// A preempted group stops whole: every one of its running Pods is deleted,
// its quota is given back only when they are gone, and the Pod that
// preempted it runs. Its Pods made again queue as a new group.
func TestPreemptedPodGroupStopsWhole(t *testing.T) {
	env := testenv.New(t)
	_, cqName, node := podQueue(t, env, "8")
	high := preemptLowerPriority(t, env, cqName)
	var names []string
	for i := range 4 {
		p := groupPod(fmt.Sprintf("w%d", i), env.Namespace, "low", 4, "2", "1h")
		env.Create(t, p)
		names = append(names, p.Name)
	}
	waitAdmitted(t, env, env.Namespace, podgroups.WorkloadName("low"))
	testenv.Eventually(t, wait, func() error {
		for _, n := range names {
			if p, err := getPod(env, n); err != nil || p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("group pod %s not running yet (%v)", n, err)
			}
		}
		return nil
	})

	urgent := plainPod("urgent", env.Namespace, "2", "1h", map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.PriorityClassLabel: high})
	env.Create(t, urgent)
	testenv.Eventually(t, wait, func() error {
		for _, n := range names {
			if _, err := getPod(env, n); !apierrors.IsNotFound(err) {
				return fmt.Errorf("group pod %s is still there (%v)", n, err)
			}
		}
		if _, err := getWorkload(env, env.Namespace, podgroups.WorkloadName("low")); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the stopped group's workload is still there (%v)", err)
		}
		return runsOn(env, urgent.Name, node.Name)
	})

	// Made again, the group waits for the 8 cpu it cannot have while the
	// urgent pod holds 2: its quota was not counted twice, nor lost.
	for _, n := range names {
		env.Create(t, groupPod(n, env.Namespace, "low", 4, "2", "1h"))
	}
	waitPending(t, env, env.Namespace, podgroups.WorkloadName("low"), "needs 8 cpu")
	// Queue status trails the workloads by about a second.
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cqName)
		if err != nil {
			return err
		}
		if q.Status.AdmittedWorkloads != 1 || q.Status.PendingWorkloads != 1 {
			return fmt.Errorf("ClusterQueue admitted %d pending %d; want the urgent pod admitted, the group pending",
				q.Status.AdmittedWorkloads, q.Status.PendingWorkloads)
		}
		return nil
	})
}

// A Pod that fails in a running group is replaced without queueing the group
// again: the replacement runs in the same admission. The group finishes when
// all its Pods have ended.
func TestFailedPodOfARunningGroupIsReplaced(t *testing.T) {
	env := testenv.New(t)
	rf, cq, node := podQueue(t, env, "2")
	steady := groupPod("steady", env.Namespace, "pair", 2, "1", "1h")
	env.Create(t, steady)
	flaky := groupPod("flaky", env.Namespace, "pair", 2, "1", "1s")
	flaky.Annotations["berth.dev/sim-exit-code"] = "3"
	env.Create(t, flaky)
	first := waitAdmitted(t, env, env.Namespace, podgroups.WorkloadName("pair"))
	testenv.Eventually(t, wait, func() error {
		p, err := getPod(env, flaky.Name)
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("flaky pod phase %s, want Failed", p.Status.Phase)
		}
		return nil
	})
	env.Create(t, groupPod("flaky-again", env.Namespace, "pair", 2, "1", "1s"))
	testenv.Eventually(t, wait, func() error {
		p, err := getPod(env, "flaky-again")
		if err != nil {
			return err
		}
		if p.Spec.NodeName != node.Name || p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("replacement gated=%v on %q phase %s; want it run to success", pods.Gated(p), p.Spec.NodeName, p.Status.Phase)
		}
		return nil
	})
	wl, err := getWorkload(env, env.Namespace, podgroups.WorkloadName("pair"))
	if err != nil {
		t.Fatal(err)
	}
	if wl.UID != first.UID || !workload.IsAdmitted(wl) || wl.Status.RequeueState != nil || workload.IsFinished(wl) {
		t.Fatalf("after the replacement: %s (uid %s, was %s); want the same admission, running", describe(wl), wl.UID, first.UID)
	}

	// The last running Pod is deleted: the group is over, one of its two
	// Pods having succeeded.
	if err := env.Client.Delete(ctx, steady); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, podgroups.WorkloadName("pair"))
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) || !strings.Contains(describe(wl), "1 of the 2 Pods of pod group pair succeeded") {
			return fmt.Errorf("group workload: %s; want finished, 1 of 2 succeeded", describe(wl))
		}
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(q, rf, "cpu"); total != "0" && total != "" {
			return fmt.Errorf("ClusterQueue cpu usage %q after the group finished", total)
		}
		return nil
	})
}

// A Pod of a group must say how many Pods the group has: without it, or with
// a count that is not a number, it is refused, naming the annotation.
func TestPodGroupWithoutACountIsRefused(t *testing.T) {
	env := testenv.New(t)
	p := groupPod("member", env.Namespace, "g", 2, "1", "1s")
	delete(p.Annotations, berthv1.PodGroupTotalCountAnnotation)
	err := env.Client.Create(ctx, p)
	if err == nil || !strings.Contains(err.Error(), "annotation berth.dev/pod-group-total-count is missing") {
		t.Fatalf("a group pod without a count: %v, want it refused", err)
	}
	p = groupPod("member", env.Namespace, "g", 2, "1", "1s")
	p.Annotations[berthv1.PodGroupTotalCountAnnotation] = "two"
	if err := env.Client.Create(ctx, p); err == nil || !strings.Contains(err.Error(), `pod-group-total-count="two"`) {
		t.Fatalf("a group pod with count \"two\": %v, want it refused", err)
	}
	// Without the queue label the group label is none of berth's business.
	free := plainPod("free", env.Namespace, "1", "1s", map[string]string{berthv1.PodGroupNameLabel: "g"})
	env.Create(t, free)
}
