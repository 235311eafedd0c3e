package jobsets_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	. "github.com/berth-dev/berth/test/fixtures"
)

func TestPodSetPerReplicatedJob(t *testing.T) {
	js := MakeJobSet("train", "ns").Queue("q").
		ReplicatedJob("driver", 1, 1).Request("cpu", "1").
		ReplicatedJob("workers", 3, 4).Request("cpu", "2").Obj()
	// A Job running fewer completions than its parallelism runs that many.
	five := int32(2)
	js.Spec.ReplicatedJobs[1].Template.Spec.Completions = &five
	ps := jobsets.PodSets(js)
	if len(ps) != 2 || ps[0].Name != "driver" || ps[0].Count != 1 || ps[1].Name != "workers" || ps[1].Count != 6 {
		t.Fatalf("pod sets %+v; want driver of 1 and workers of 3 x 2", ps)
	}
	if got := ps[1].Requests[corev1.ResourceCPU]; !got.Equal(resource.MustParse("2")) {
		t.Errorf("workers request %s cpu, want 2", got.String())
	}
	wl := jobsets.NewWorkload(js, "q", nil, "")
	if !jobsets.InSync(wl, js, "q", nil) {
		t.Error("a new Workload is not in sync with its JobSet")
	}
	if ref := metav1.GetControllerOf(wl); ref == nil || ref.Kind != "JobSet" || ref.APIVersion != "jobset.x-k8s.io/v1alpha2" {
		t.Errorf("owner %+v", ref)
	}
}

func TestStartInjectsEachPodSetsFlavorsAndRestorePutsThemBack(t *testing.T) {
	js := MakeJobSet("train", "ns").Queue("q").
		ReplicatedJob("driver", 1, 1).Toleration(corev1.Toleration{Key: "own", Operator: corev1.TolerationOpExists}).
		ReplicatedJob("workers", 2, 2).Obj()
	if !(jobsets.Kind{}).Hold(js) || !jobsets.Suspended(js) {
		t.Fatal("Hold did not suspend the JobSet")
	}
	want := js.DeepCopy()
	cpu := &berthv1.ResourceFlavor{Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "cpu"}}}
	gpu := &berthv1.ResourceFlavor{Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "gpu"},
		Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}}}
	if err := jobsets.Start(js, map[string][]*berthv1.ResourceFlavor{"driver": {cpu}, "workers": {gpu}}); err != nil {
		t.Fatal(err)
	}
	if jobsets.Suspended(js) || !jobsets.Injected(js) {
		t.Fatal("a started JobSet is still suspended, or keeps no record of its own templates")
	}
	driver, workers := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec, js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec
	if driver.NodeSelector["pool"] != "cpu" || len(driver.Tolerations) != 1 {
		t.Errorf("driver: node selector %v, tolerations %v", driver.NodeSelector, driver.Tolerations)
	}
	if workers.NodeSelector["pool"] != "gpu" || len(workers.Tolerations) != 1 || workers.Tolerations[0].Key != "gpu" {
		t.Errorf("workers: node selector %v, tolerations %v", workers.NodeSelector, workers.Tolerations)
	}
	yes := true
	js.Spec.Suspend = &yes
	if changed, err := jobsets.Restore(js); err != nil || !changed {
		t.Fatalf("restore: %v, %v", changed, err)
	}
	if !equality.Semantic.DeepEqual(js.Spec, want.Spec) || jobsets.Injected(js) {
		t.Errorf("restored spec differs from the JobSet's own:\n%+v\nwant\n%+v", js.Spec, want.Spec)
	}
	js.Annotations = map[string]string{jobsets.OriginalSchedulingAnnotation: "{not json"}
	if _, err := jobsets.Restore(js); err == nil || !strings.Contains(err.Error(), jobsets.OriginalSchedulingAnnotation) {
		t.Errorf("a damaged annotation: %v, want an error naming it", err)
	}
}

func TestRefuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		js   *jobsetv1.JobSet
		want string
	}{
		{name: "queued", js: MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 1, 1).Obj()},
		{name: "not queued", js: MakeJobSet("a", "ns").ReplicatedJob("w", 1, 1).
			PodAnnotation(integration.RequiredTopologyAnnotation, "rack").Obj()},
		{name: "queue on the pods", js: MakeJobSet("a", "ns").ReplicatedJob("w", 1, 1).PodLabel(berthv1.KueueQueueNameLabel, "q").Obj(),
			want: "spec.replicatedJobs[0] (w).template.spec.template.metadata.labels asks for LocalQueue q"},
		{name: "topology", js: MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 1, 1).
			PodAnnotation(integration.RequiredTopologyAnnotation, "rack").Obj()},
		{name: "wrong topology", js: MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 1, 1).
			PodAnnotation(integration.RequiredTopologyAnnotation, "").Obj(),
			want: "spec.replicatedJobs[0] (w).template.spec.template.metadata.annotations: annotation berth.dev/podset-required-topology is empty"},
		{name: "its own queue on the pods, as Hold puts it", js: MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 1, 1).
			PodLabel(berthv1.QueueNameLabel, "q").Obj()},
		{name: "another queue on the pods", js: MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 1, 1).
			PodLabel(berthv1.QueueNameLabel, "other").Obj(), want: "asks for LocalQueue other"},
		{name: "too many", js: func() *jobsetv1.JobSet {
			w := MakeJobSet("a", "ns").Queue("q")
			for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
				w.ReplicatedJob(n, 1, 1)
			}
			return w.Obj()
		}(), want: "spec.replicatedJobs has 9 entries; berth queues at most 8"},
	} {
		got := jobsets.Refuse(tc.js)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFinished(t *testing.T) {
	js := MakeJobSet("a", "ns").Obj()
	if f, _ := jobsets.Finished(js); f {
		t.Error("a new JobSet finished")
	}
	js.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1.JobSetFailed), Status: metav1.ConditionTrue}}
	if f, failed := jobsets.Finished(js); !f || !failed {
		t.Errorf("failed JobSet: finished %v failed %v", f, failed)
	}
	js.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1.JobSetCompleted), Status: metav1.ConditionTrue}}
	if f, failed := jobsets.Finished(js); !f || failed {
		t.Errorf("completed JobSet: finished %v failed %v", f, failed)
	}
}

// A suspended JobSet's quota may go back only once every Job it made has
// no pods left: finished, or suspended with none active or terminating.
func TestStoppedWaitsForEveryJobsPods(t *testing.T) {
	js := MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 2, 1).Obj()
	suspended := func(active int32) batchv1.Job {
		j := MakeJob("a-w-0", "ns").Obj()
		yes := true
		j.Spec.Suspend = &yes
		j.Status.Active = active
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}
		return *j
	}
	done := *MakeJob("a-w-1", "ns").Obj()
	done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	if jobsets.Stopped(js, nil) {
		t.Error("a running JobSet counts as stopped")
	}
	(jobsets.Kind{}).Hold(js)
	if jobsets.Stopped(js, []batchv1.Job{suspended(1), done}) {
		t.Error("stopped while a Job still has an active pod")
	}
	if !jobsets.Stopped(js, []batchv1.Job{suspended(0), done}) {
		t.Error("not stopped though every Job's pods are gone")
	}
}

func TestJobsMadeByAJobSetAreNotQueuedAlone(t *testing.T) {
	job := MakeJob("a-w-0", "ns").Queue("q").Obj()
	yes := true
	job.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "a", UID: "u", Controller: &yes}}
	if q := jobs.QueueName(job, true); q != "" {
		t.Errorf("a JobSet's Job is queued on its own in %q", q)
	}
}

// A replicated Job asking for topology gets a pod set with that request,
// and its pods labelled at creation so that they are gated until placed;
// the others are left as they are.
func TestTopologyPerReplicatedJob(t *testing.T) {
	js := MakeJobSet("train", "ns").Queue("q").
		ReplicatedJob("driver", 1, 1).
		ReplicatedJob("workers", 2, 4).PodAnnotation(integration.RequiredTopologyAnnotation, "example.com/rack").Obj()
	ps := jobsets.PodSets(js)
	if ps[0].TopologyRequest != nil || ps[1].TopologyRequest == nil || *ps[1].TopologyRequest.Required != "example.com/rack" {
		t.Errorf("topology requests %+v, %+v; want none for the driver, a rack for the workers", ps[0].TopologyRequest, ps[1].TopologyRequest)
	}
	(jobsets.Kind{}).Hold(js)
	driver, workers := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels, js.Spec.ReplicatedJobs[1].Template.Spec.Template.Labels
	if len(driver) != 0 || workers[berthv1.TopologyPlacedLabel] != "true" || workers[berthv1.QueueNameLabel] != "q" {
		t.Errorf("pod labels: driver %v, workers %v", driver, workers)
	}
	if why := jobsets.Refuse(js); why != "" {
		t.Errorf("a held JobSet is refused: %s", why)
	}
}

// A JobSet created in a queue that dispatches to worker clusters is left
// to berth (spec.managedBy), as a Job is; one in another queue is not.
func TestHoldHandsDispatchedJobSetsToBerth(t *testing.T) {
	k := jobsets.Kind{Dispatched: func(ns, q string) bool { return ns == "ns" && q == "far" }}
	far := MakeJobSet("a", "ns").Queue("far").ReplicatedJob("w", 1, 1).Obj()
	if !k.Hold(far) || far.Spec.ManagedBy == nil || *far.Spec.ManagedBy != jobsets.ManagedBy {
		t.Errorf("managedBy %v, want %s", far.Spec.ManagedBy, jobsets.ManagedBy)
	}
	near := MakeJobSet("a", "ns").Queue("near").ReplicatedJob("w", 1, 1).Obj()
	if !k.Hold(near) || near.Spec.ManagedBy != nil {
		t.Errorf("managedBy %v of a JobSet in a queue that does not dispatch", near.Spec.ManagedBy)
	}
}

// A JobSet a manager cluster made on its worker uses the Workload copied
// there before it, and adopts it.
func TestPrebuiltWorkload(t *testing.T) {
	js := MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 1, 1).Obj()
	js.UID = "u"
	if _, ok := jobsets.Prebuilt(js); ok || !strings.HasPrefix(jobsets.WorkloadName(js), "jobset-a-") {
		t.Fatalf("a JobSet of its own uses Workload %s", jobsets.WorkloadName(js))
	}
	js.Labels[berthv1.PrebuiltWorkloadLabel] = "copy"
	if name, ok := jobsets.Prebuilt(js); !ok || name != "copy" || jobsets.WorkloadName(js) != "copy" {
		t.Errorf("prebuilt %q %v, Workload %s; want copy", name, ok, jobsets.WorkloadName(js))
	}
	wl := MakeWorkload("copy", "ns").Obj()
	if !integration.Adopt(wl, js, jobsets.GVK) || integration.Adopt(wl, js, jobsets.GVK) {
		t.Error("want adopted once")
	}
	if ref := metav1.GetControllerOf(wl); ref == nil || ref.UID != "u" || ref.Kind != "JobSet" {
		t.Errorf("owner %+v", ref)
	}
}

// A JobSet's pods are all Ready once every Job of every replicated Job is
// Ready or succeeded, as its status counts them.
func TestPodsReady(t *testing.T) {
	js := MakeJobSet("a", "ns").Queue("q").ReplicatedJob("driver", 1, 1).ReplicatedJob("workers", 3, 2).Obj()
	if ready, msg := jobsets.PodsReady(js); ready || msg != "0 of 4 Jobs with all their pods Ready or succeeded" {
		t.Errorf("without status: %v %q", ready, msg)
	}
	js.Status.ReplicatedJobsStatus = []jobsetv1.ReplicatedJobStatus{{Name: "driver", Ready: 1}, {Name: "workers", Ready: 1, Succeeded: 1}}
	if ready, msg := jobsets.PodsReady(js); ready || msg != "3 of 4 Jobs with all their pods Ready or succeeded" {
		t.Errorf("one worker Job not Ready: %v %q", ready, msg)
	}
	js.Status.ReplicatedJobsStatus[1].Ready = 2
	if ready, _ := jobsets.PodsReady(js); !ready {
		t.Error("every Job Ready or succeeded, but not all Ready")
	}
}

// A JobSet may use a prebuilt Workload only if it asks for the JobSet's own
// pod sets: a label naming a smaller admitted Workload must not let it run
// past its quota.
func TestPrebuiltWorkloadMustBeTheJobSets(t *testing.T) {
	js := MakeJobSet("a", "ns").Queue("q").ReplicatedJob("w", 2, 1).Request("cpu", "4").Obj()
	own := jobsets.NewWorkload(js, "q", nil, "")
	if why := jobsets.PrebuiltMismatch(own, js); why != "" {
		t.Errorf("its own pod sets refused: %s", why)
	}
	small := MakeWorkload("small", "ns").Queue("q").Obj()
	if why := jobsets.PrebuiltMismatch(small, js); !strings.Contains(why, "whose pod sets are not this JobSet's") {
		t.Errorf("another Workload's pod sets: %q; want refused", why)
	}
}
