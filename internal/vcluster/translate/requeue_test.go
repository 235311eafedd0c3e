package translate

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

func TestEvictedByHostOnlyOnBerthsDisruption(t *testing.T) {
	h := makePod("p", "ns").Obj()
	if _, ok := EvictedByHost(h); ok {
		t.Error("a host pod without conditions counts as evicted")
	}
	h.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"}}
	if _, ok := EvictedByHost(h); ok {
		t.Error("the kubelet's disruption counts as berth's eviction")
	}
	h.Status.Conditions[0].Reason, h.Status.Conditions[0].Message = berthv1.EvictedByBerth, "preempted by ns/big"
	if why, ok := EvictedByHost(h); !ok || why != "preempted by ns/big" {
		t.Errorf("EvictedByHost = %q, %v", why, ok)
	}
}

// A Job the host evicts is suspended, once, and resumed only when the
// syncer suspended it and none of its Pods is left.
func TestSuspendForHostThenResume(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns"}}
	job.Status.Active = 2
	if !SuspendForHost(job, "preempted") || !suspended(job) || job.Annotations[RequeuedAnnotation] != "preempted" {
		t.Fatalf("not suspended for the host: %+v", job)
	}
	if SuspendForHost(job, "again") {
		t.Error("suspended twice")
	}
	if ResumeAfterHost(job) {
		t.Error("resumed with 2 pods active")
	}
	job.Status.Active, job.Status.Terminating = 0, new(int32(1))
	if ResumeAfterHost(job) {
		t.Error("resumed with a pod terminating")
	}
	job.Status.Terminating = new(int32(0))
	if !ResumeAfterHost(job) || suspended(job) || job.Annotations[RequeuedAnnotation] != "" {
		t.Errorf("not resumed once its pods are gone: %+v", job)
	}

	tenants := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "ns"}, Spec: batchv1.JobSpec{Suspend: new(true)}}
	if SuspendForHost(tenants, "preempted") || ResumeAfterHost(tenants) {
		t.Error("the syncer took over a Job its tenant suspended")
	}
}
