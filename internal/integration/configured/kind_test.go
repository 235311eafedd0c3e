package configured

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// example is examples/configured/mpijob.yaml, with a UID.
func example(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("../../../examples/configured/mpijob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetUID("uid-1")
	return u
}

func TestPodSetsAreReadFromTheConfiguredPaths(t *testing.T) {
	c := mpiJob(t)
	k := Kind{C: &c}
	u := example(t)
	ps := k.PodSets(u)
	if len(ps) != 2 || ps[0].Name != "launcher" || ps[0].Count != 1 || ps[1].Name != "worker" || ps[1].Count != 2 {
		t.Fatalf("pod sets %+v", ps)
	}
	if got := ps[1].Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("worker cpu %s, want 1", got.String())
	}
	if k.QueueName(u) != "jobs" || k.Refuse(u) != "" {
		t.Fatalf("queue %q, refused %q", k.QueueName(u), k.Refuse(u))
	}
	// No count: one pod. No template: no pod set. Zero: none either.
	unstructured.RemoveNestedField(u.Object, "spec", "mpiReplicaSpecs", "Launcher", "replicas")
	unstructured.RemoveNestedField(u.Object, "spec", "mpiReplicaSpecs", "Worker")
	if ps := k.PodSets(u); len(ps) != 1 || ps[0].Name != "launcher" || ps[0].Count != 1 {
		t.Fatalf("pod sets %+v", ps)
	}
	_ = unstructured.SetNestedField(u.Object, int64(0), "spec", "mpiReplicaSpecs", "Launcher", "replicas")
	if why := k.Refuse(u); !strings.Contains(why, "MPIJob pi: it has no pods: none of spec.mpiReplicaSpecs.Launcher.template, spec.mpiReplicaSpecs.Worker.template is set") {
		t.Errorf("no pods: %q", why)
	}
}

func TestRefuseNamesTheField(t *testing.T) {
	c := mpiJob(t)
	k := Kind{C: &c}
	for _, tc := range []struct {
		edit func(u *unstructured.Unstructured)
		want string
	}{
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "two", "spec", "mpiReplicaSpecs", "Worker", "replicas")
		}, "MPIJob pi: spec.mpiReplicaSpecs.Worker.replicas: two is not a number"},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "other", "spec", "mpiReplicaSpecs", "Worker", "template", "metadata", "labels", berthv1.QueueNameLabel)
		}, "MPIJob pi: spec.mpiReplicaSpecs.Worker.template.metadata.labels asks for LocalQueue other; a MPIJob is queued whole"},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "rack", "spec", "mpiReplicaSpecs", "Worker", "template", "metadata", "annotations", "kueue.x-k8s.io/podset-slice-size")
		}, "MPIJob pi: spec.mpiReplicaSpecs.Worker.template.metadata.annotations: annotation kueue.x-k8s.io/podset-slice-size needs a required, preferred or unconstrained topology annotation too"},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "x", "spec", "mpiReplicaSpecs", "Worker", "template", "metadata", "labels", berthv1.OwnerUIDLabel)
		}, "berth sets this label itself"},
		{func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{berthv1.QueueNameLabel: "jobs", berthv1.PrebuiltWorkloadLabel: "w"})
		}, "prebuilt Workloads (dispatch to worker clusters) of a kind queued from configuration are not supported yet"},
		{func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{berthv1.JobMinParallelismAnnotation: "1"})
		}, `metadata.annotations[berth.dev/job-min-parallelism]: a Job's annotation; a MPIJob allows partial admission with berth.dev/partial-admission: "true"`},
		{func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{berthv1.PartialAdmissionAnnotation: "true"})
		}, "MPIJob pi: metadata.annotations[berth.dev/partial-admission]: berth's configuration of MPIJob gives no pod set a least count (minCount)"},
	} {
		u := example(t)
		tc.edit(u)
		if why := k.Refuse(u); !strings.Contains(why, tc.want) {
			t.Errorf("got %q, want %q", why, tc.want)
		}
	}
	// Started once (its Workload since deleted, say), it carries its own
	// UID, which is no reason to refuse it when it queues again.
	u := example(t)
	_ = unstructured.SetNestedField(u.Object, "uid-1", "spec", "mpiReplicaSpecs", "Worker", "template", "metadata", "labels", berthv1.OwnerUIDLabel)
	if why := k.Refuse(u); why != "" {
		t.Errorf("its own UID: refused %q", why)
	}
	// Not queued: only a template's queue label matters.
	u = example(t)
	u.SetLabels(nil)
	_ = unstructured.SetNestedField(u.Object, "rack", "spec", "mpiReplicaSpecs", "Worker", "template", "metadata", "annotations", "kueue.x-k8s.io/podset-required-topology")
	if why := k.Refuse(u); why != "" {
		t.Errorf("not queued: refused %q", why)
	}
}

// Hold suspends; Start injects the flavors and the owner label and
// unsuspends; Restore takes the flavors back out; an object suspended and
// resized by its user is Reshaped, one merely started is not.
func TestHoldStartRestore(t *testing.T) {
	c := mpiJob(t)
	k := Kind{C: &c}
	u := example(t)
	_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"disk": "ssd"}, "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "nodeSelector")
	_ = unstructured.SetNestedField(u.Object, "keep", "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "futureField")
	if !k.Hold(u) || !c.Suspended(u) || k.Hold(u) {
		t.Fatal("Hold did not suspend once")
	}
	if f := k.HeldFields(u); len(f) != 1 || f[0].Path != "/spec" {
		t.Fatalf("held fields %+v", f)
	}
	pods := k.PodSets(u)
	flavor := &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "gpu"},
			Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}}}
	if err := k.Start(u, map[string][]*berthv1.ResourceFlavor{"worker": {flavor}}); err != nil {
		t.Fatal(err)
	}
	if c.Suspended(u) || !Injected(u) {
		t.Fatal("Start did not unsuspend, or kept nothing to restore")
	}
	sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "nodeSelector")
	if sel["pool"] != "gpu" || sel["disk"] != "ssd" {
		t.Errorf("worker node selector %v", sel)
	}
	tol, _, _ := unstructured.NestedSlice(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "tolerations")
	if len(tol) != 1 {
		t.Errorf("worker tolerations %v", tol)
	}
	for _, set := range []string{"Launcher", "Worker"} {
		if uid, _, _ := unstructured.NestedString(u.Object, "spec", "mpiReplicaSpecs", set, "template", "metadata", "labels", berthv1.OwnerUIDLabel); uid != "uid-1" {
			t.Errorf("%s's template is labelled %q, want the UID", set, uid)
		}
	}
	if k.Reshaped(u, pods) {
		t.Error("a started object counts as reshaped")
	}
	_ = unstructured.SetNestedField(u.Object, true, "spec", "runPolicy", "suspend")
	changed, err := k.Restore(u)
	if err != nil || !changed || Injected(u) {
		t.Fatalf("Restore: %v, %v", changed, err)
	}
	sel, _, _ = unstructured.NestedStringMap(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "nodeSelector")
	if len(sel) != 1 || sel["disk"] != "ssd" {
		t.Errorf("restored node selector %v", sel)
	}
	if _, found, _ := unstructured.NestedSlice(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "tolerations"); found {
		t.Error("the flavor's toleration stayed")
	}
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "futureField"); v != "keep" {
		t.Error("a field berth does not know was lost")
	}
	_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "mpiReplicaSpecs", "Worker", "replicas")
	if !k.Reshaped(u, pods) {
		t.Error("more workers is not reshaped")
	}
	u.SetAnnotations(map[string]string{OriginalSchedulingAnnotation: "{"})
	if _, err := k.Restore(u); err == nil || !strings.Contains(err.Error(), "annotation berth.dev/original-scheduling of MPIJob team-a/pi is not valid") {
		t.Errorf("a damaged annotation: %v", err)
	}
}

func TestFinishedByTheConfiguredConditions(t *testing.T) {
	c := mpiJob(t)
	k := Kind{C: &c}
	u := example(t)
	set := func(conds ...map[string]any) {
		var list []any
		for _, c := range conds {
			list = append(list, c)
		}
		_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
	}
	if f, _ := k.Finished(u); f {
		t.Fatal("finished without conditions")
	}
	set(map[string]any{"type": "Running", "status": "True"}, map[string]any{"type": "Succeeded", "status": "False"})
	if f, _ := k.Finished(u); f {
		t.Fatal("finished while running")
	}
	set(map[string]any{"type": "Succeeded", "status": "True"})
	if f, failed := k.Finished(u); !f || failed {
		t.Fatalf("succeeded: %v %v", f, failed)
	}
	set(map[string]any{"type": "Failed", "status": "True"})
	if f, failed := k.Finished(u); !f || !failed {
		t.Fatalf("failed: %v %v", f, failed)
	}
	_ = unstructured.SetNestedField(u.Object, "garbage", "status", "conditions")
	if f, _ := k.Finished(u); f {
		t.Fatal("finished on garbage")
	}
}

// A scale up through the scale subresource is refused while a queued
// object runs; down, while held, or of an object not queued, it is not.
func TestScaleRefusal(t *testing.T) {
	c := mpiJob(t)
	k := Kind{C: &c}
	u := example(t)
	if why := k.ScaleRefusal(u, 2, 4); !strings.Contains(why, "MPIJob pi: a queued MPIJob is scaled up (from 2 to 4) only while it is suspended (spec.runPolicy.suspend: true)") {
		t.Errorf("running: %q", why)
	}
	if why := k.ScaleRefusal(u, 4, 2); why != "" {
		t.Errorf("scaled down: %q", why)
	}
	k.Hold(u)
	if why := k.ScaleRefusal(u, 2, 4); why != "" {
		t.Errorf("held: %q", why)
	}
	free := example(t)
	free.SetLabels(nil)
	if why := k.ScaleRefusal(free, 2, 4); why != "" {
		t.Errorf("not queued: %q", why)
	}
}

// A pod berth started for an object of a configured kind names that
// object's Workload; a pod whose label is not its controller's UID names
// none.
func TestPodWorkload(t *testing.T) {
	c := mpiJob(t)
	k := Kind{C: &c}
	u := example(t)
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pi-worker-0", Namespace: "team-a",
		Labels:          map[string]string{berthv1.OwnerUIDLabel: "uid-1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubeflow.org/v2beta1", Kind: "MPIJob", Name: "pi", UID: "uid-1", Controller: &yes}}}}
	if name, ok := PodWorkload(pod); !ok || name != k.WorkloadName(u) {
		t.Errorf("PodWorkload %q %v, want %s", name, ok, k.WorkloadName(u))
	}
	pod.Labels[berthv1.OwnerUIDLabel] = "uid-2"
	if name, ok := PodWorkload(pod); ok {
		t.Errorf("a pod labelled with another UID names %s", name)
	}
}

// All of an admission's pods Ready or succeeded at once; a pod being
// deleted counts for nothing.
func TestPodsReady(t *testing.T) {
	pod := func(phase corev1.PodPhase, ready, deleting bool) corev1.Pod {
		p := corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	for _, tc := range []struct {
		pods []corev1.Pod
		want bool
		msg  string
	}{
		{[]corev1.Pod{pod(corev1.PodRunning, true, false), pod(corev1.PodSucceeded, false, false), pod(corev1.PodRunning, true, false)}, true, "3 of 3 pods Ready or succeeded"},
		{[]corev1.Pod{pod(corev1.PodRunning, true, false), pod(corev1.PodPending, false, false), pod(corev1.PodRunning, true, false)}, false, "2 of 3"},
		{[]corev1.Pod{pod(corev1.PodRunning, true, false), pod(corev1.PodRunning, true, true), pod(corev1.PodRunning, true, false)}, false, "2 of 3"},
		{nil, false, "0 of 3"},
	} {
		got, msg := PodsReady(tc.pods, 3)
		if got != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%v, %q; want %v, %q", got, msg, tc.want, tc.msg)
		}
	}
}
