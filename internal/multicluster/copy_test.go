package multicluster_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/multicluster"
	"github.com/berth-dev/berth/test/fixtures"
)

func TestRemoteJobIsALocalJobOfTheWorker(t *testing.T) {
	job := fixtures.MakeJob("j", "ns").Queue("lq").ManagedBy(multicluster.ManagedBy).Parallelism(2).Obj()
	job.UID = "manager-uid"
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "manager-uid"}}
	job.Spec.Template.Labels = map[string]string{batchv1.ControllerUidLabel: "manager-uid", batchv1.JobNameLabel: "j", "app": "x"}
	if err := jobs.StartTemplate(job, []*berthv1.ResourceFlavor{fixtures.MakeResourceFlavor("f").NodeLabel("pool", "p").Obj()}); err != nil {
		t.Fatal(err)
	}

	c := multicluster.RemoteJob(job, "mgr", "job-j-abcde")
	switch {
	case c.Spec.ManagedBy != nil:
		t.Errorf("managedBy %q: the worker's Job controller must run the copy", *c.Spec.ManagedBy)
	case !jobs.Suspended(c):
		t.Error("the copy is not suspended: it would run before the worker admits it")
	case c.Spec.Selector != nil || c.Spec.Template.Labels[batchv1.ControllerUidLabel] != "" || c.Spec.Template.Labels["app"] != "x":
		t.Errorf("selector %v, template labels %v: want the manager's controller labels gone, the rest kept", c.Spec.Selector, c.Spec.Template.Labels)
	case c.Spec.Template.Spec.NodeSelector["pool"] != "" || jobs.Injected(c):
		t.Errorf("node selector %v: the manager's flavors must not go to the worker", c.Spec.Template.Spec.NodeSelector)
	case c.Labels[berthv1.QueueNameLabel] != "lq" || !multicluster.IsCopy(c, "mgr", "job-j-abcde") || multicluster.IsCopy(c, "other", "job-j-abcde"):
		t.Errorf("labels %v annotations %v", c.Labels, c.Annotations)
	case job.Spec.ManagedBy == nil || !jobs.Injected(job):
		t.Error("the manager's Job was changed")
	}

	if c.Labels[berthv1.PrebuiltWorkloadLabel] != "job-j-abcde" || c.Spec.Template.Labels[berthv1.PrebuiltWorkloadLabel] != "job-j-abcde" {
		t.Errorf("labels %v, template labels %v: the Job and its pods must name the copied Workload", c.Labels, c.Spec.Template.Labels)
	}
	// The worker's Job integration uses the copy, and adopts it.
	c.UID = types.UID("worker-uid")
	wl := fixtures.MakeWorkload("job-j-abcde", "ns").Queue("lq").Priority(7).Count(2).Obj()
	rw := multicluster.RemoteWorkload(wl, "mgr")
	if jobs.WorkloadName(c) != rw.Name || !multicluster.IsCopy(rw, "mgr", wl.Name) || len(rw.OwnerReferences) != 0 {
		t.Errorf("copy %s (the Job looks for %s), labels %v, owners %v", rw.Name, jobs.WorkloadName(c), rw.Labels, rw.OwnerReferences)
	}
	if *rw.Spec.Priority != 7 || rw.Spec.PodSets[0].Count != 2 || rw.Spec.QueueName != "lq" {
		t.Errorf("copy spec %+v: want the manager's", rw.Spec)
	}
	if !integration.Adopt(rw, c, gvkJob) || integration.Adopt(rw, c, gvkJob) || len(rw.OwnerReferences) != 1 || rw.OwnerReferences[0].UID != "worker-uid" {
		t.Errorf("adopted copy's owners %+v: want the worker's Job, once", rw.OwnerReferences)
	}
}

var gvkJob = batchv1.SchemeGroupVersion.WithKind("Job")

func TestRemoteJobSetIsALocalJobSetOfTheWorker(t *testing.T) {
	js := fixtures.MakeJobSet("train", "ns").Queue("lq").ReplicatedJob("driver", 1, 1).Request("cpu", "1").
		ReplicatedJob("workers", 2, 2).PodLabel("app", "x").Obj()
	(jobsets.Kind{Dispatched: func(string, string) bool { return true }}).Hold(js)
	js.UID = "manager-uid"
	pool := fixtures.MakeResourceFlavor("f").NodeLabel("pool", "p").Obj()
	if err := jobsets.Start(js, map[string][]*berthv1.ResourceFlavor{"driver": {pool}, "workers": {pool}}); err != nil {
		t.Fatal(err)
	}
	before := js.DeepCopy()

	c := multicluster.RemoteJobSet(js, "mgr", "jobset-train-abcde")
	switch {
	case c.Spec.ManagedBy != nil:
		t.Errorf("managedBy %q: the worker's JobSet controller must run the copy", *c.Spec.ManagedBy)
	case !jobsets.Suspended(c):
		t.Error("the copy is not suspended: it would run before the worker admits it")
	case jobsets.Injected(c) || c.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector["pool"] != "":
		t.Errorf("node selector %v: the manager's flavors must not go to the worker", c.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector)
	case c.Labels[berthv1.QueueNameLabel] != "lq" || !multicluster.IsCopy(c, "mgr", "jobset-train-abcde"):
		t.Errorf("labels %v annotations %v", c.Labels, c.Annotations)
	case len(c.Spec.ReplicatedJobs) != 2 || c.Spec.ReplicatedJobs[1].Replicas != 2:
		t.Errorf("replicated Jobs %+v: want the manager's", c.Spec.ReplicatedJobs)
	}
	if !equality.Semantic.DeepEqual(js, before) {
		t.Error("the manager's JobSet was changed")
	}
	// The worker's JobSet integration uses the copy, and so do the pods
	// (a topology-placed pod finds its Workload by it).
	if name, ok := jobsets.Prebuilt(c); !ok || name != "jobset-train-abcde" {
		t.Errorf("the copy uses Workload %q, want the copied one", name)
	}
	for _, rj := range c.Spec.ReplicatedJobs {
		if l := rj.Template.Spec.Template.Labels; l[berthv1.PrebuiltWorkloadLabel] != "jobset-train-abcde" || (rj.Name == "workers" && l["app"] != "x") {
			t.Errorf("%s's pod labels %v: want the Workload named, the rest kept", rj.Name, l)
		}
	}

	running := c.DeepCopy()
	running.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1.JobSetCompleted), Status: metav1.ConditionTrue}}
	status, changed := multicluster.JobSetStatus(js, running)
	if !changed || len(status.Conditions) != 1 {
		t.Errorf("status %+v changed %v: want the copy's", status, changed)
	}
	js.Status = status
	if _, changed := multicluster.JobSetStatus(js, running); changed {
		t.Error("the same status again is a change")
	}
}

func TestCheckActive(t *testing.T) {
	ac := &berthv1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "mc"}, Spec: berthv1.AdmissionCheckSpec{
		ControllerName: berthv1.MultiClusterControllerName,
		Parameters:     &berthv1.AdmissionCheckParametersReference{APIGroup: "berth.dev", Kind: "MultiClusterConfig", Name: "cfg"}}}
	cfg := &berthv1.MultiClusterConfig{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Spec: berthv1.MultiClusterConfigSpec{Clusters: []string{"a", "b"}}}
	wrong := ac.DeepCopy()
	wrong.Spec.Parameters.Kind = "ProvisioningRequestConfig"
	none := ac.DeepCopy()
	none.Spec.Parameters = nil
	for _, tc := range []struct {
		ac      *berthv1.AdmissionCheck
		cfg     *berthv1.MultiClusterConfig
		active  map[string]bool
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{ac, cfg, map[string]bool{"b": true}, metav1.ConditionTrue, multicluster.ReasonActive, "dispatches to b; not active: a"},
		{ac, cfg, nil, metav1.ConditionFalse, multicluster.ReasonNoActiveWorker, "no worker cluster of MultiClusterConfig cfg is active (a, b)"},
		{ac, nil, nil, metav1.ConditionFalse, multicluster.ReasonConfigNotFound, "MultiClusterConfig cfg not found"},
		{wrong, cfg, nil, metav1.ConditionFalse, multicluster.ReasonBadParameters, `apiGroup "berth.dev", kind ProvisioningRequestConfig; want apiGroup berth.dev, kind MultiClusterConfig`},
		{none, cfg, nil, metav1.ConditionFalse, multicluster.ReasonBadParameters, "spec.parameters must name a MultiClusterConfig"},
	} {
		c := multicluster.CheckActive(tc.ac, tc.cfg, tc.active)
		if c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
			t.Errorf("%s %s %q; want %s %s with %q", c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
		}
	}
}
