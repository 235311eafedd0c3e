package trainjobs_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/placement"
	"github.com/berth-dev/berth/internal/integration/trainjobs"
)

func trainJob() *trainerv1.TrainJob {
	return &trainerv1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", UID: "tj-uid",
		Labels: map[string]string{berthv1.QueueNameLabel: "main"}}}
}

// jobSet is what Trainer makes for tj: a node replicated Job of nodes pods
// and an initializer of one, the node pods tolerating what the runtime
// says.
func jobSet(tj *trainerv1.TrainJob, nodes int32, own ...corev1.Toleration) *jobsetv1.JobSet {
	rj := func(name string, pods int32, tol []corev1.Toleration) jobsetv1.ReplicatedJob {
		return jobsetv1.ReplicatedJob{Name: name, Replicas: 1, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: ptr.To(pods), Completions: ptr.To(pods),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Tolerations: tol, Containers: []corev1.Container{{Name: name,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}},
		}}}
	}
	return &jobsetv1.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace, UID: "js-uid", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: tj.Name, UID: tj.UID, Controller: ptr.To(true)}}},
		Spec: jobsetv1.JobSetSpec{Suspend: ptr.To(true),
			ReplicatedJobs: []jobsetv1.ReplicatedJob{rj("dataset-initializer", 1, nil), rj("node", nodes, own)}},
	}
}

func flavor(name, zone string, taint string) *berthv1.ResourceFlavor {
	return &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: berthv1.ResourceFlavorSpec{
		NodeLabels:  map[string]string{"zone": zone},
		Tolerations: []corev1.Toleration{{Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
}

// Trainer builds a JobSet from the TrainJob's overrides as a strategic
// merge of each onto its target's pod template; for what berth's carry,
// node selector keys merge and tolerations replace the list.
func trainerBuilds(tj *trainerv1.TrainJob, js *jobsetv1.JobSet) *jobsetv1.JobSet {
	out := js.DeepCopy()
	for _, o := range tj.Spec.PodTemplateOverrides {
		for i := range out.Spec.ReplicatedJobs {
			rj := &out.Spec.ReplicatedJobs[i]
			if o.TargetJobs[0].Name != rj.Name {
				continue
			}
			t := &rj.Template.Spec.Template
			if t.Annotations == nil {
				t.Annotations = map[string]string{}
			}
			for k, v := range o.Metadata.Annotations {
				t.Annotations[k] = v
			}
			for k, v := range o.Metadata.Labels {
				if t.Labels == nil {
					t.Labels = map[string]string{}
				}
				t.Labels[k] = v
			}
			if o.Spec == nil {
				continue
			}
			for k, v := range o.Spec.NodeSelector {
				if t.Spec.NodeSelector == nil {
					t.Spec.NodeSelector = map[string]string{}
				}
				t.Spec.NodeSelector[k] = v
			}
			if o.Spec.Tolerations != nil {
				t.Spec.Tolerations = o.Spec.Tolerations
			}
		}
	}
	return out
}

// A started TrainJob's pods reach its flavors' nodes through one override
// per replicated Job, which keeps the runtime's own tolerations; the
// JobSet Trainer makes from it carries them, still asks for the pods
// admitted, and the overrides come off whole.
func TestInjectCarriesAndRestore(t *testing.T) {
	tj := trainJob()
	runtimeOwn := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}
	js := jobSet(tj, 2, runtimeOwn)
	user := trainerv1.PodTemplateOverride{TargetJobs: []trainerv1.PodTemplateOverrideTargetJob{{Name: "node"}},
		Metadata: &metav1.ObjectMeta{Annotations: map[string]string{"berth.dev/sim-duration": "1s"}}}
	tj.Spec.PodTemplateOverrides = []trainerv1.PodTemplateOverride{user}
	if trainjobs.Injected(tj) || trainjobs.Carries(js, tj) {
		t.Fatal("a TrainJob berth never started reads as injected")
	}
	admitted := trainjobs.PodSets(js)
	trainjobs.Inject(tj, js, "main", map[string][]*berthv1.ResourceFlavor{
		"dataset-initializer": {flavor("cpu", "a", "cpu-only")}, "node": {flavor("gpu", "b", "gpu-nodes")}})
	if !trainjobs.Injected(tj) || len(tj.Spec.PodTemplateOverrides) != 3 {
		t.Fatalf("overrides %+v; want the user's and one per replicated Job", tj.Spec.PodTemplateOverrides)
	}
	if trainjobs.Carries(js, tj) {
		t.Error("the JobSet made before the overrides reads as carrying them")
	}
	built := trainerBuilds(tj, js)
	if !trainjobs.Carries(built, tj) {
		t.Fatal("the JobSet Trainer makes from the overrides does not read as carrying them")
	}
	node := built.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec
	if node.NodeSelector["zone"] != "b" || len(node.Tolerations) != 2 || node.Tolerations[0] != runtimeOwn || node.Tolerations[1].Key != "gpu-nodes" {
		t.Errorf("node pods: selector %v, tolerations %v; want zone b, the runtime's toleration and the flavor's", node.NodeSelector, node.Tolerations)
	}
	if !trainjobs.SameShape(admitted, trainjobs.PodSets(built)) {
		t.Errorf("the flavors changed the pods' shape: %+v, was %+v", trainjobs.PodSets(built), admitted)
	}
	if trainjobs.SameShape(admitted, trainjobs.PodSets(jobSet(tj, 3))) {
		t.Error("a JobSet with a node more reads as the same shape")
	}
	if !trainjobs.Restore(tj) || trainjobs.Injected(tj) || len(tj.Spec.PodTemplateOverrides) != 1 || tj.Spec.PodTemplateOverrides[0].Metadata.Annotations["berth.dev/sim-duration"] != "1s" {
		t.Errorf("after Restore: %+v; want the user's override alone", tj.Spec.PodTemplateOverrides)
	}
	if trainjobs.Restore(tj) {
		t.Error("Restore of a TrainJob without berth's overrides reports a change")
	}
}

// A TrainJob whose runtime asks for topology-aware placement of its nodes
// is admitted for it, and started so that the pods of its nodes are gated
// until placed (berth.dev/topology-placed), in the controller's cache (its
// queue) and found to be the TrainJob's, not its JobSet's, as all its pods
// are; a JobSet whose
// request changed after admission is not the shape admitted.
func TestTopology(t *testing.T) {
	tj := trainJob()
	js := jobSet(tj, 4)
	js.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations = map[string]string{integration.RequiredTopologyAnnotation: "rack"}
	admitted := trainjobs.PodSets(js)
	if admitted[0].TopologyRequest != nil || admitted[1].TopologyRequest == nil || *admitted[1].TopologyRequest.Required != "rack" {
		t.Fatalf("pod sets %+v; want a rack for the nodes alone", admitted)
	}
	if why := trainjobs.RefuseJobSet(tj, js, "main"); why != "" {
		t.Fatalf("refused: %s", why)
	}
	trainjobs.Inject(tj, js, "main", map[string][]*berthv1.ResourceFlavor{
		"dataset-initializer": {flavor("cpu", "a", "cpu-only")}, "node": {flavor("cpu", "a", "cpu-only")}})
	built := trainerBuilds(tj, js)
	if l := built.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels; len(l) != 1 || l[berthv1.PrebuiltWorkloadLabel] != trainjobs.WorkloadName(tj) {
		t.Errorf("initializer pods labelled %v; want only with their Workload (they ask for no topology)", l)
	}
	node := built.Spec.ReplicatedJobs[1].Template.Spec.Template
	if node.Labels[berthv1.TopologyPlacedLabel] != "true" || node.Labels[berthv1.QueueNameLabel] != "main" {
		t.Errorf("node pods labelled %v; want placed, in queue main", node.Labels)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "t-node-0-0", Namespace: "ns", Labels: map[string]string{
		jobsetv1.JobSetNameKey: js.Name, jobsetv1.JobSetUIDKey: string(js.UID), jobsetv1.ReplicatedJobNameKey: "node"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "t-node-0", UID: "job-uid", Controller: ptr.To(true)}}}}
	for k, v := range node.Labels {
		pod.Labels[k] = v
	}
	if key, ok := placement.WorkloadOf(pod); !ok || key.Name != trainjobs.WorkloadName(tj) || key.Namespace != "ns" {
		t.Errorf("a node pod's Workload: %v %v; want %s", key, ok, trainjobs.WorkloadName(tj))
	}
	// An initializer's pod is found to be the TrainJob's too (the
	// dashboard lists a Workload's pods so), though it is not placed.
	initPod := pod.DeepCopy()
	initPod.Labels = map[string]string{jobsetv1.JobSetNameKey: js.Name, jobsetv1.JobSetUIDKey: string(js.UID)}
	for k, v := range built.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels {
		initPod.Labels[k] = v
	}
	if _, ok := placement.WorkloadOf(initPod); ok {
		t.Error("an initializer's pod reads as placed")
	}
	if key, ok := placement.PodWorkload(initPod); !ok || key.Name != trainjobs.WorkloadName(tj) {
		t.Errorf("an initializer pod's Workload: %v %v; want %s", key, ok, trainjobs.WorkloadName(tj))
	}
	if !trainjobs.SameShape(admitted, trainjobs.PodSets(built)) {
		t.Error("the overrides changed the pods' shape")
	}
	built.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations[integration.RequiredTopologyAnnotation] = "block"
	if trainjobs.SameShape(admitted, trainjobs.PodSets(built)) {
		t.Error("a JobSet asking for a block reads as the shape admitted for a rack")
	}
}

// What berth cannot queue in a TrainJob's JobSet is refused, naming the
// runtime's field: a queue label of another queue on its pods, a wrong
// topology request, partial admission; the TrainJob's own queue on its pods
// (as berth puts there to place them) is not.
func TestRefuseJobSet(t *testing.T) {
	tj := trainJob()
	for _, tc := range []struct {
		name   string
		change func(*jobsetv1.JobSet)
		want   string
	}{
		{"plain", func(*jobsetv1.JobSet) {}, ""},
		{"its own queue on the pods", func(js *jobsetv1.JobSet) {
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Labels = map[string]string{berthv1.QueueNameLabel: "main"}
		}, ""},
		{"another queue on the pods", func(js *jobsetv1.JobSet) {
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Labels = map[string]string{berthv1.QueueNameLabel: "other"}
		}, "replicated Job node labels its Jobs or pods with LocalQueue other"},
		{"empty topology request", func(js *jobsetv1.JobSet) {
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations = map[string]string{integration.RequiredTopologyAnnotation: ""}
		}, "spec.replicatedJobs[1] (node).template.spec.template.metadata.annotations: annotation berth.dev/podset-required-topology is empty"},
		{"partial admission", func(js *jobsetv1.JobSet) {
			js.Spec.ReplicatedJobs[1].Template.Annotations = map[string]string{berthv1.JobMinParallelismAnnotation: "1"}
		}, "partial admission"},
	} {
		js := jobSet(tj, 2)
		tc.change(js)
		why := trainjobs.RefuseJobSet(tj, js, "main")
		if (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, why, tc.want)
		}
	}
}

// A TrainJob that claims berth's overrides, or is another controller's to
// run, is refused at creation, with the field named.
func TestRefuse(t *testing.T) {
	tj := trainJob()
	if why := trainjobs.Refuse(tj); why != "" {
		t.Fatalf("a plain TrainJob refused: %s", why)
	}
	forged := trainJob()
	forged.Spec.PodTemplateOverrides = []trainerv1.PodTemplateOverride{{TargetJobs: []trainerv1.PodTemplateOverrideTargetJob{{Name: "node"}},
		Metadata: &metav1.ObjectMeta{Annotations: map[string]string{trainjobs.FlavorsAnnotation: "gpu"}}}}
	if why := trainjobs.Refuse(forged); !strings.Contains(why, "spec.podTemplateOverrides[0].metadata.annotations") {
		t.Errorf("forged overrides: %q", why)
	}
	other := trainJob()
	other.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
	if why := trainjobs.Refuse(other); !strings.Contains(why, "spec.managedBy") || !strings.Contains(why, "not supported yet") {
		t.Errorf("managedBy: %q", why)
	}
}

// A TrainJob's JobSet is queued with it, never on its own, whatever its
// labels say; a JobSet of another owner is not.
func TestATrainJobsJobSetIsQueuedWithIt(t *testing.T) {
	tj := trainJob()
	js := jobSet(tj, 1)
	js.Labels = map[string]string{berthv1.QueueNameLabel: "main"}
	if q := jobsets.QueueName(js); q != "" || jobsets.QueuingOwner(js) == nil {
		t.Errorf("a TrainJob's JobSet: queue %q, owner %v; want none, and its TrainJob", q, jobsets.QueuingOwner(js))
	}
	if !trainjobs.MadeFor(js, tj) {
		t.Error("the TrainJob's own JobSet not read as made for it")
	}
	other := trainJob()
	other.UID = "other"
	if trainjobs.MadeFor(js, other) {
		t.Error("a JobSet read as made for another TrainJob of the name")
	}
	js.OwnerReferences[0].APIVersion = "example.com/v1"
	if q := jobsets.QueueName(js); q != "main" {
		t.Errorf("a JobSet owned by another group's TrainJob: queue %q, want its own", q)
	}
}

func TestFinished(t *testing.T) {
	tj := trainJob()
	if f, _ := trainjobs.Finished(tj); f {
		t.Error("a TrainJob without conditions reads as finished")
	}
	tj.Status.Conditions = []metav1.Condition{{Type: trainerv1.TrainJobFailed, Status: metav1.ConditionTrue}}
	if f, failed := trainjobs.Finished(tj); !f || !failed {
		t.Errorf("Failed: finished %v, failed %v", f, failed)
	}
	tj.Status.Conditions = []metav1.Condition{{Type: trainerv1.TrainJobComplete, Status: metav1.ConditionTrue}}
	if f, failed := trainjobs.Finished(tj); !f || failed {
		t.Errorf("Complete: finished %v, failed %v", f, failed)
	}
}
