package jobs

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

func TestPodSetsCountRequestsAsTheSchedulerDoes(t *testing.T) {
	job := MakeJob("j", "ns").Parallelism(4).Request("cpu", "1").Obj()
	job.Spec.Completions = ptr.To(int32(3)) // fewer completions than parallelism: 3 pods at most
	always := corev1.ContainerRestartPolicyAlways
	spec := &job.Spec.Template.Spec
	spec.InitContainers = []corev1.Container{
		// A sidecar keeps running beside whatever starts after it.
		{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("500m")}}},
		// A plain init container runs before the main ones: it counts only where it is the peak.
		{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}}},
	}
	spec.Overhead = corev1.ResourceList{"cpu": resource.MustParse("100m")}
	ps := PodSets(job)
	if len(ps) != 1 || ps[0].Count != 3 {
		t.Fatalf("pod sets %+v, want one of 3 pods", ps)
	}
	// max(init 2 + sidecar .5, main 1 + sidecar .5) + overhead .1: the peak is during init.
	if got := ps[0].Requests.Cpu().String(); got != "2600m" {
		t.Errorf("per-pod cpu %s, want 2600m", got)
	}
}

func TestQueueName(t *testing.T) {
	for _, tc := range []struct {
		labels    map[string]string
		manageAll bool
		want      string
	}{
		{map[string]string{berthv1.QueueNameLabel: "a", berthv1.KueueQueueNameLabel: "b"}, false, "a"},
		{map[string]string{berthv1.KueueQueueNameLabel: "b"}, false, "b"},
		{nil, false, ""},
		{nil, true, DefaultLocalQueue},
	} {
		job := &batchv1.Job{}
		job.Labels = tc.labels
		if got := QueueName(job, tc.manageAll); got != tc.want {
			t.Errorf("QueueName(%v, manageAll=%v) = %q, want %q", tc.labels, tc.manageAll, got, tc.want)
		}
	}
}

// Starting a Job adds its flavors' settings; restoring gives back exactly what
// the user had, whatever the flavors added.
func TestStartAndRestoreTemplate(t *testing.T) {
	job := MakeJob("j", "ns").NodeSelector("team", "a").Obj()
	job.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "own", Operator: corev1.TolerationOpExists}}
	before := job.Spec.Template.Spec.DeepCopy()
	spot := MakeResourceFlavor("spot").NodeLabel("capacity", "spot").
		Toleration(corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}).Obj()
	gpu := MakeResourceFlavor("gpu").NodeLabel("gpu", "a100").Obj()

	if err := StartTemplate(job, []*berthv1.ResourceFlavor{spot, gpu}); err != nil {
		t.Fatal(err)
	}
	spec := job.Spec.Template.Spec
	want := map[string]string{"team": "a", "capacity": "spot", "gpu": "a100"}
	if !equality.Semantic.DeepEqual(spec.NodeSelector, want) || len(spec.Tolerations) != 2 || !Injected(job) {
		t.Fatalf("started template: nodeSelector %v tolerations %v injected %v", spec.NodeSelector, spec.Tolerations, Injected(job))
	}
	// Starting again (a retried reconcile) keeps the first record of the original.
	if err := StartTemplate(job, []*berthv1.ResourceFlavor{spot}); err != nil {
		t.Fatal(err)
	}
	changed, err := RestoreTemplate(job)
	if err != nil || !changed {
		t.Fatalf("RestoreTemplate = %v, %v", changed, err)
	}
	if !equality.Semantic.DeepEqual(&job.Spec.Template.Spec, before) || Injected(job) {
		t.Errorf("restored template differs from the original:\n got %+v\nwant %+v", job.Spec.Template.Spec, before)
	}
	if changed, _ := RestoreTemplate(job); changed {
		t.Error("restoring twice changed the Job again")
	}
}

// A Job placed though it asked for no topology gets the labels that have
// its pods gated and given domains, and loses exactly those when stopped:
// labels it had itself stay.
func TestSteerAndRestoreTemplate(t *testing.T) {
	job := MakeJob("j", "ns").Obj()
	job.Spec.Template.Labels = map[string]string{"app": "train", berthv1.QueueNameLabel: "main"}
	before := job.Spec.Template.DeepCopy()
	if err := StartTemplate(job, nil); err != nil {
		t.Fatal(err)
	}
	if err := SteerTemplate(job, "main"); err != nil {
		t.Fatal(err)
	}
	if l := job.Spec.Template.Labels; l[berthv1.TopologyPlacedLabel] != "true" || l[berthv1.QueueNameLabel] != "main" || l["app"] != "train" {
		t.Fatalf("steered template labels %v", l)
	}
	if _, err := RestoreTemplate(job); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&job.Spec.Template, before) {
		t.Errorf("restored template labels %v, want %v", job.Spec.Template.Labels, before.Labels)
	}
	if err := SteerTemplate(MakeJob("k", "ns").Obj(), "main"); err == nil {
		t.Error("steering a Job that was not started: no error")
	}
}

func TestRestoreRefusesADamagedAnnotation(t *testing.T) {
	job := MakeJob("j", "ns").Obj()
	job.Annotations = map[string]string{OriginalSchedulingAnnotation: "{not json"}
	_, err := RestoreTemplate(job)
	if err == nil || !contains(err.Error(), OriginalSchedulingAnnotation) || !contains(err.Error(), "ns/j") {
		t.Errorf("RestoreTemplate with a damaged annotation = %v, want an error naming the annotation and the Job", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestResized(t *testing.T) {
	job := MakeJob("j", "ns").Parallelism(2).Completions(10).Request("cpu", "1").Obj()
	wl := NewWorkload(job, "q", nil, "")
	wl.Status.Admission = &berthv1.Admission{ClusterQueue: "cq", PodSetAssignments: []berthv1.PodSetAssignment{{Name: "main", Count: 2}}}
	rf := &berthv1.ResourceFlavor{Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "a"}}}
	if err := StartTemplate(job, []*berthv1.ResourceFlavor{rf}); err != nil {
		t.Fatal(err)
	}
	if why := Resized(wl, job); why != "" {
		t.Errorf("a Job running as admitted, with its flavor's node selector, is %q", why)
	}
	for _, n := range []int32{4, 1} {
		j := job.DeepCopy()
		j.Spec.Parallelism = &n
		if why := Resized(wl, j); !strings.Contains(why, "admitted with 2") {
			t.Errorf("parallelism 2 -> %d: %q, want it to say the admitted count", n, why)
		}
	}
}

// A running Job whose parallelism is lowered shrinks in place; one raised,
// one admitted partially, or one placed by topology does not (Resized
// queues it again whole). Its admission then holds quota for the pods it
// keeps.
func TestShrunk(t *testing.T) {
	job := MakeJob("j", "ns").Parallelism(4).Completions(10).Request("cpu", "500m").Obj()
	wl := NewWorkload(job, "q", nil, "")
	wl.Status.Admission = &berthv1.Admission{ClusterQueue: "cq", PodSetAssignments: []berthv1.PodSetAssignment{{Name: "main", Count: 4,
		Flavors: map[corev1.ResourceName]string{"cpu": "rf"}, ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse("2")}}}}
	if err := StartTemplate(job, nil); err != nil {
		t.Fatal(err)
	}
	with := func(n int32, change func(*berthv1.Workload)) (int32, bool) {
		j, w := job.DeepCopy(), wl.DeepCopy()
		j.Spec.Parallelism = &n
		if change != nil {
			change(w)
		}
		return Shrunk(w, j)
	}
	if n, ok := with(3, nil); !ok || n != 3 {
		t.Fatalf("parallelism 4 -> 3: %d %v; want 3", n, ok)
	}
	for name, tc := range map[string]struct {
		n      int32
		change func(*berthv1.Workload)
	}{
		"raised":              {6, nil},
		"unchanged":           {4, nil},
		"partially admitted":  {2, func(w *berthv1.Workload) { w.Spec.PodSets[0].Count = 8 }},
		"on a worker cluster": {2, func(w *berthv1.Workload) { w.Status.ClusterName = "worker-1" }},
		"placed by topology": {2, func(w *berthv1.Workload) {
			w.Status.Admission.PodSetAssignments[0].TopologyAssignment = &berthv1.TopologyAssignment{Levels: []string{"host"}}
		}},
	} {
		if n, ok := with(tc.n, tc.change); ok {
			t.Errorf("%s: shrinks to %d", name, n)
		}
	}
	w := wl.DeepCopy()
	workload.ResizeAdmission(w, 3)
	psa := w.Status.Admission.PodSetAssignments[0]
	if cpu := psa.ResourceUsage["cpu"]; psa.Count != 3 || cpu.String() != "1500m" {
		t.Fatalf("shrunk to 3 pods of 500m: count %d, cpu %s", psa.Count, cpu.String())
	}
}

// A suspended Job has stopped once the Job controller has taken in the
// suspension and counts none of its pods active or terminating; one run on
// a worker cluster, once suspended.
func TestStoppedWhenItsPodsAreGone(t *testing.T) {
	yes, no := true, false
	taken := []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}
	job := func(suspend *bool, conds []batchv1.JobCondition, active int32, terminating *int32, managedBy string) *batchv1.Job {
		j := &batchv1.Job{Spec: batchv1.JobSpec{Suspend: suspend}, Status: batchv1.JobStatus{Conditions: conds, Active: active, Terminating: terminating}}
		if managedBy != "" {
			j.Spec.ManagedBy = &managedBy
		}
		return j
	}
	zero, one := int32(0), int32(1)
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		want bool
	}{
		{"running", job(&no, nil, 2, nil, ""), false},
		{"suspended, not yet taken in by the Job controller", job(&yes, nil, 0, nil, ""), false},
		{"pods active", job(&yes, taken, 2, nil, ""), false},
		{"pods terminating", job(&yes, taken, 0, &one, ""), false},
		{"none", job(&yes, taken, 0, &zero, ""), true},
		{"none, terminating not counted", job(&yes, taken, 0, nil, ""), true},
		{"the Job controller's, pods active", job(&yes, taken, 1, nil, batchv1.JobControllerName), false},
		{"run on a worker cluster, suspended", job(&yes, nil, 1, nil, ManagedBy), true},
		{"run on a worker cluster, running", job(&no, nil, 1, nil, ManagedBy), false},
	} {
		if got := Stopped(tc.job); got != tc.want {
			t.Errorf("%s: stopped %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHoldGrowthSuspendsARunningJobThatGrows(t *testing.T) {
	running := func(par int32) *batchv1.Job {
		j := MakeJob("j", "ns").Queue("q").Parallelism(par).Completions(10).Obj()
		no := false
		j.Spec.Suspend = &no
		return j
	}
	for _, c := range []struct {
		name     string
		old, new *batchv1.Job
		hold     bool
	}{
		{"grows", running(2), running(6), true},
		{"shrinks", running(6), running(2), false},
		{"same", running(2), running(2), false},
		{"suspended already", running(2), func() *batchv1.Job { j := running(6); yes := true; j.Spec.Suspend = &yes; return j }(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := (Kind{}).HoldGrowth(c.old, c.new); got != c.hold || Suspended(c.new) != (c.hold || c.name == "suspended already") {
				t.Errorf("HoldGrowth = %v, suspended %v; want %v", got, Suspended(c.new), c.hold)
			}
		})
	}
}

// A Job's pods are queued with the Job: a queue asked for in the pod
// template alone would be ignored, and the Job run unqueued, so it is
// refused, as is a template asking for another queue than the Job's.
func TestRefuseQueueLabelsOnlyInThePodTemplate(t *testing.T) {
	withTemplate := func(job *batchv1.Job, label, queue string) *batchv1.Job {
		job.Spec.Template.Labels = map[string]string{label: queue}
		return job
	}
	for _, c := range []struct {
		name string
		job  *batchv1.Job
		kind Kind
		want string
	}{
		{"template only", withTemplate(MakeJob("j", "ns").Obj(), berthv1.QueueNameLabel, "a"), Kind{}, "move the label there"},
		{"Kueue's, template only", withTemplate(MakeJob("j", "ns").Obj(), berthv1.KueueQueueNameLabel, "a"), Kind{}, "LocalQueue a"},
		{"another queue", withTemplate(MakeJob("j", "ns").Queue("b").Obj(), berthv1.QueueNameLabel, "a"), Kind{}, "the Job for b"},
		{"managed, another queue", withTemplate(MakeJob("j", "ns").Obj(), berthv1.QueueNameLabel, "a"), Kind{Default: true}, "the Job for default"},
		{"the same queue", withTemplate(MakeJob("j", "ns").Queue("a").Obj(), berthv1.QueueNameLabel, "a"), Kind{}, ""},
		{"no queue anywhere", MakeJob("j", "ns").Obj(), Kind{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if why := c.kind.Refuse(c.job); (why == "") != (c.want == "") || !strings.Contains(why, c.want) {
				t.Errorf("Refuse = %q, want %q", why, c.want)
			}
		})
	}
}

// A Job's min-parallelism annotation (berth's or Kueue's) becomes its pod
// set's minCount; a wrong one is refused at creation, naming it.
func TestMinParallelism(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        *int32
	}{
		{map[string]string{berthv1.JobMinParallelismAnnotation: "2"}, ptr.To(int32(2))},
		{map[string]string{berthv1.KueueJobMinParallelismAnnotation: "3"}, ptr.To(int32(3))},
		{map[string]string{berthv1.JobMinParallelismAnnotation: "6"}, nil}, // not fewer than it asks: all or nothing
		{nil, nil},
	} {
		job := MakeJob("j", "ns").Queue("q").Parallelism(6).Obj()
		job.Annotations = tc.annotations
		got := PodSets(job)[0].MinCount
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%v: minCount %v, want %v", tc.annotations, got, tc.want)
		}
		if why := (Kind{}).Refuse(job); why != "" {
			t.Errorf("%v refused: %s", tc.annotations, why)
		}
	}
	for value, want := range map[string]string{"0": "is not a positive number", "two": "is not a positive number"} {
		job := MakeJob("j", "ns").Queue("q").Parallelism(6).Obj()
		job.Annotations = map[string]string{berthv1.JobMinParallelismAnnotation: value}
		if why := (Kind{}).Refuse(job); !strings.Contains(why, want) || !strings.Contains(why, berthv1.JobMinParallelismAnnotation) {
			t.Errorf("%q: refused with %q", value, why)
		}
	}
	job := MakeJob("j", "ns").Queue("q").Parallelism(6).PodAnnotation(integration.RequiredTopologyAnnotation, "rack").Obj()
	job.Annotations = map[string]string{berthv1.JobMinParallelismAnnotation: "2"}
	if why := (Kind{}).Refuse(job); !strings.Contains(why, "not supported yet") {
		t.Errorf("partial admission with a topology request: %q", why)
	}
}

// Admitted with fewer pods, a Job runs that many at once; held again, it
// gets its own parallelism back, unless someone changed it meanwhile.
func TestShrinkAndRestore(t *testing.T) {
	job := MakeJob("j", "ns").Parallelism(8).Completions(20).Obj()
	job.Annotations = map[string]string{berthv1.JobMinParallelismAnnotation: "2"}
	var wl berthv1.Workload
	wl.Spec.PodSets = PodSets(job)
	wl.Status.Admission = &berthv1.Admission{PodSetAssignments: []berthv1.PodSetAssignment{{Name: "main", Count: 3}}}
	if why := Resized(&wl, job); why != "" {
		t.Fatalf("admitted with fewer pods, not started yet, it is resized: %s", why)
	}
	if err := StartTemplate(job, nil); err != nil {
		t.Fatal(err)
	}
	if err := ShrinkToAdmitted(job, 3); err != nil {
		t.Fatal(err)
	}
	if *job.Spec.Parallelism != 3 || *job.Spec.Completions != 20 {
		t.Fatalf("parallelism %d, completions %d; want 3 and 20", *job.Spec.Parallelism, *job.Spec.Completions)
	}
	if why := Resized(&wl, job); why != "" {
		t.Fatalf("running as admitted, it is resized: %s", why)
	}
	if _, err := RestoreTemplate(job); err != nil || *job.Spec.Parallelism != 8 {
		t.Fatalf("restored parallelism %d (%v), want 8", *job.Spec.Parallelism, err)
	}

	if err := StartTemplate(job, nil); err != nil {
		t.Fatal(err)
	}
	if err := ShrinkToAdmitted(job, 3); err != nil {
		t.Fatal(err)
	}
	job.Spec.Parallelism = ptr.To(int32(2)) // the user's
	if _, err := RestoreTemplate(job); err != nil || *job.Spec.Parallelism != 2 {
		t.Fatalf("restored parallelism %d (%v), want the user's 2", *job.Spec.Parallelism, err)
	}
	// All admitted: nothing changes.
	if err := StartTemplate(job, nil); err != nil {
		t.Fatal(err)
	}
	if err := ShrinkToAdmitted(job, 2); err != nil || *job.Spec.Parallelism != 2 {
		t.Fatalf("parallelism %d (%v) after a full admission", *job.Spec.Parallelism, err)
	}
}
