package guard_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	uns "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/guard"
	"github.com/berth-dev/berth/internal/integration/configured"
	. "github.com/berth-dev/berth/test/fixtures"
)

const berth = "system:serviceaccount:berth-system:berth-controller"

const jobSetController = "system:serviceaccount:jobset-system:jobset-controller-manager"

var opts = guard.Options{Identity: berth, Namespace: "berth-system", Controllers: map[string][]string{"JobSet": {jobSetController}}}

// admit runs kind's policy on an update of old to obj by user, as the API
// server would (match conditions, then variables, then each validation in
// turn), with cel-go's standard environment: what it says is the refusal's
// message, "" when the update is let through.
func admit(t *testing.T, name string, old, obj client.Object, user, subResource string) string {
	t.Helper()
	return evaluate(t, func(k guard.Kind) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return guard.Policy(opts, k)
	}, kindNamed(name), old, obj, user, subResource)
}

func kindNamed(name string) guard.Kind {
	for _, k := range guard.Kinds {
		if k.Name == name {
			return k
		}
	}
	return guard.Kind{}
}

// admitChild is admit for the policy that guards the children of kind name.
func admitChild(t *testing.T, name string, old, obj client.Object, user string) string {
	t.Helper()
	return evaluate(t, func(k guard.Kind) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return guard.ChildPolicy(opts, k, k.Children[0])
	}, kindNamed(name), old, obj, user, "")
}

func evaluate(t *testing.T, policyOf func(guard.Kind) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding),
	kind guard.Kind, old, obj client.Object, user, subResource string) string {
	t.Helper()
	policy, binding := policyOf(kind)
	if binding.Spec.PolicyName != policy.Name || len(binding.Spec.ValidationActions) != 1 ||
		binding.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
		t.Fatalf("binding %+v does not deny by policy %s", binding.Spec, policy.Name)
	}
	if *policy.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Fatal("the policy does not fail closed")
	}
	env, err := cel.NewEnv(
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	run := func(expr string, in map[string]any) any {
		t.Helper()
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("compiling %s: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(in)
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return out.Value()
	}
	// As the API server fills it in: no subResource for the object itself.
	request := map[string]any{"userInfo": map[string]any{"username": user}}
	if subResource != "" {
		request["subResource"] = subResource
	}
	in := map[string]any{"object": unstructured(t, obj), "oldObject": unstructured(t, old), "request": request}
	for _, c := range policy.Spec.MatchConditions {
		if run(c.Expression, in) != true {
			return ""
		}
	}
	vars := map[string]any{}
	in["variables"] = vars
	for _, v := range policy.Spec.Variables {
		vars[v.Name] = run(v.Expression, in)
	}
	for _, v := range policy.Spec.Validations {
		if run(v.Expression, in) != true {
			return run(v.MessageExpression, in).(string)
		}
	}
	return ""
}

func unstructured(t *testing.T, obj client.Object) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestJobEditsAfterQueueing(t *testing.T) {
	job := func() *JobWrapper { return MakeJob("train", "team-a").Queue("team-a").Parallelism(4) }
	running := func() *JobWrapper { return job().Suspend(false) }
	waiting := func() *JobWrapper { return job().Suspend(true) }
	for _, c := range []struct {
		name     string
		old, obj *JobWrapper
		user     string
		want     string // in the refusal; "" lets it through
	}{
		{"queue label removed from a running Job", running(), running().Label(berthv1.QueueNameLabel, ""), "alice",
			`metadata.labels[berth.dev/queue-name]: the queue of a queued Job may change only in an update that leaves it suspended (spec.suspend: true) (from "team-a" to "")`},
		{"and parallelism raised with it", running(), func() *JobWrapper {
			w := running()
			delete(w.Labels, berthv1.QueueNameLabel)
			n := int32(12)
			w.Spec.Parallelism = &n
			return w
		}(), "alice", "metadata.labels[berth.dev/queue-name]"},
		{"Kueue's label removed from a running Job", running().Label(berthv1.KueueQueueNameLabel, "team-a").Label(berthv1.QueueNameLabel, ""),
			running().Label(berthv1.QueueNameLabel, ""), "alice", "may change only in an update that leaves it suspended"},
		{"queue changed while suspended", waiting(), waiting().Queue("team-b"), "alice", ""},
		{"queue changed in the write that suspends it", running(), waiting().Queue("team-b"), "alice", ""},
		{"queue changed in the write that starts it", waiting(), running().Queue("team-b"), "alice", "may change only in an update that leaves it suspended"},
		{"priority class changed while running", running(), running().Label(berthv1.PriorityClassLabel, "high"), "alice",
			`metadata.labels[berth.dev/priority-class]: the priority class of a queued Job may change only in an update that leaves it suspended`},
		{"unsuspended by its user", waiting(), running(), "alice",
			"Job train: spec.suspend: a queued Job is started by berth once its Workload is admitted; nobody else may set spec.suspend to false"},
		{"suspend dropped by its user", waiting(), func() *JobWrapper { w := job(); w.Spec.Suspend = nil; return w }(), "alice", "spec.suspend"},
		{"unsuspended by berth", waiting(), running(), berth, ""},
		{"berth may change anything", running(), running().Queue("other").Label(berthv1.PrebuiltWorkloadLabel, "x"), berth, ""},
		{"suspended by its user", running(), waiting(), "alice", ""},
		{"parallelism raised and held in the same write (berth's webhook)", running(), waiting().Parallelism(8), "alice", ""},
		{"parallelism raised without being held", running(), running().Parallelism(8), "alice",
			`Job train: a queued Job may not run more pods at once (from 4 to 8) unless it is suspended in the same update`},
		{"completions raised past parallelism", running().Completions(2), running().Completions(3), "alice", "(from 2 to 3)"},
		{"parallelism lowered", running(), running().Parallelism(2), "alice", ""},
		{"prebuilt Workload named", waiting(), waiting().Label(berthv1.PrebuiltWorkloadLabel, "someone-elses"), "alice",
			"metadata.labels[berth.dev/prebuilt-workload-name]: may not change on a queued Job"},
		{"another label changed", running(), running().Label("app", "x"), "alice", ""},
		{"run-time limit raised", running().Label(berthv1.MaxExecTimeLabel, "60"), running().Label(berthv1.MaxExecTimeLabel, "6000"), "alice",
			"Job train: metadata.labels[berth.dev/max-exec-time-seconds]: may not change on a queued Job"},
		{"run-time limit added while waiting", waiting(), waiting().Label(berthv1.KueueMaxExecTimeLabel, "60"), "alice",
			"metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: may not change"},
		{"queue label added to a running Job", MakeJob("train", "team-a").Suspend(false), running(), "alice", "may change only in an update that leaves it suspended"},
		{"unqueued Job", MakeJob("train", "team-a").Suspend(true), MakeJob("train", "team-a").Suspend(false).Parallelism(50), "alice", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := admit(t, "Job", c.old.Obj(), c.obj.Obj(), c.user, "")
			switch {
			case c.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("got %q, want a refusal with %q", got, c.want)
			}
		})
	}
}

func TestPodEditsAfterQueueing(t *testing.T) {
	gated := func() *PodWrapper {
		return MakePod("p", "team-a").Label(berthv1.QueueNameLabel, "team-a").Gate(berthv1.AdmissionGate).Gate(berthv1.TopologyGate)
	}
	for _, c := range []struct {
		name     string
		old, obj *PodWrapper
		user     string
		sub      string
		want     string
	}{
		{"admission gate lifted by its user", gated(), MakePod("p", "team-a").Label(berthv1.QueueNameLabel, "team-a").Gate(berthv1.TopologyGate), "alice", "",
			"Pod p: spec.schedulingGates: the gate berth.dev/admission of a queued Pod is lifted by berth once it is admitted; nobody else may remove it"},
		{"every gate lifted by its user", gated(), MakePod("p", "team-a").Label(berthv1.QueueNameLabel, "team-a"), "alice", "", "berth.dev/admission"},
		{"topology gate lifted by its user", gated(), MakePod("p", "team-a").Label(berthv1.QueueNameLabel, "team-a").Gate(berthv1.AdmissionGate), "alice", "",
			"the gate berth.dev/topology"},
		{"gates lifted by berth", gated(), MakePod("p", "team-a").Label(berthv1.QueueNameLabel, "team-a"), berth, "", ""},
		{"queue label removed", gated(), gated().Label(berthv1.QueueNameLabel, ""), "alice", "",
			`Pod p: metadata.labels[berth.dev/queue-name]: the queue of a queued Pod may not change (from "team-a" to ""); delete the Pod and create it again`},
		{"queue label removed, then gates (one write)", gated(), MakePod("p", "team-a"), "alice", "", "metadata.labels[berth.dev/queue-name]"},
		{"pod group changed", gated().Label(berthv1.PodGroupNameLabel, "a"), gated().Label(berthv1.PodGroupNameLabel, "b"), "alice", "",
			"metadata.labels[berth.dev/pod-group-name]: may not change on a queued Pod"},
		{"group size changed", gated().Annotation(berthv1.PodGroupTotalCountAnnotation, "2"), gated().Annotation(berthv1.PodGroupTotalCountAnnotation, "1"), "alice", "",
			"metadata.annotations[berth.dev/pod-group-total-count]"},
		{"resized in place", gated().Request("cpu", "1"), gated().Request("cpu", "8"), "alice", "resize",
			"Pod p: spec.containers[*].resources: a queued Pod may not be resized in place"},
		{"another label", gated(), gated().Label("app", "web"), "alice", "", ""},
		{"unqueued Pod's gate", MakePod("p", "team-a").Gate("other"), MakePod("p", "team-a"), "alice", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := admit(t, "Pod", c.old.Obj(), c.obj.Obj(), c.user, c.sub)
			switch {
			case c.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("got %q, want a refusal with %q", got, c.want)
			}
		})
	}
}

func TestDeploymentQueueIsForLife(t *testing.T) {
	d := func(queue string, replicas int32) *appsv1.Deployment {
		out := &appsv1.Deployment{}
		out.Name, out.Namespace = "web", "team-a"
		out.Labels = map[string]string{berthv1.QueueNameLabel: queue}
		out.Spec.Replicas = ptr.To(replicas)
		return out
	}
	if got := admit(t, "Deployment", d("team-a", 1), d("team-a", 5), "alice", ""); got != "" {
		t.Errorf("scaling refused: %s", got)
	}
	got := admit(t, "Deployment", d("team-a", 1), d("team-b", 1), "alice", "")
	if !strings.Contains(got, `Deployment web: metadata.labels[berth.dev/queue-name]: the queue of a queued Deployment may not change (from "team-a" to "team-b")`) {
		t.Errorf("got %q", got)
	}
}

// Every kind berth queues has a policy, and each policy is named for its
// resource so that the chart and `berth up` install one per kind.
func TestEveryKindHasAPolicy(t *testing.T) {
	objs := guard.Policies(opts, guard.Kinds)
	want := 0
	for _, k := range guard.Kinds {
		want += 2 * (1 + len(k.Children))
	}
	if len(objs) != want {
		t.Fatalf("%d objects for %d kinds, want %d", len(objs), len(guard.Kinds), want)
	}
	seen := map[string]bool{}
	for _, k := range guard.Kinds {
		seen[k.Resource] = true
	}
	for _, r := range []string{"jobs", "jobsets", "pods", "deployments", "statefulsets", "leaderworkersets"} {
		if !seen[r] {
			t.Errorf("no policy guards %s", r)
		}
	}
}

// A Job's Pods stay its own: the escape is to relabel a running Pod, which
// the Job controller then lets go (it keeps running) and replaces, one more
// pod than was admitted each time. Whoever's Job it is, queued or not.
func TestJobsPodsStayFound(t *testing.T) {
	yes := true
	pod := func(uid string) *PodWrapper {
		p := MakePod("train-abc", "team-a").Label("batch.kubernetes.io/controller-uid", "u1").Label("job-name", "train")
		if uid != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: types.UID(uid), Controller: &yes}}
		}
		return p
	}
	const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
	for _, c := range []struct {
		name     string
		old, obj *PodWrapper
		user     string
		want     string
	}{
		{"selector label changed", pod("u1"), pod("u1").Label("batch.kubernetes.io/controller-uid", "other"), "alice",
			"Pod train-abc: metadata.labels[batch.kubernetes.io/controller-uid]: the Job finds its Pods by it; changed, the Job would make another in its place"},
		{"job-name label removed", pod("u1"), func() *PodWrapper { p := pod("u1"); delete(p.Labels, "job-name"); return p }(), "alice", "metadata.labels[job-name]"},
		{"controller taken away", pod("u1"), pod(""), "alice", "Pod train-abc: metadata.ownerReferences: the controller of a Job's Pod may not change"},
		{"controller moved", pod("u1"), pod("u2"), "alice", "metadata.ownerReferences"},
		{"controller taken away by the garbage collector", pod("u1"), pod(""), gc, ""},
		{"controller moved by the garbage collector", pod("u1"), pod("u2"), gc, "metadata.ownerReferences"},
		// berth holds a JobSet's quota until the pods with its UID are gone.
		{"JobSet label taken off", pod("u1").Label("jobset.sigs.k8s.io/jobset-uid", "js1"), pod("u1"), "alice",
			"metadata.labels[jobset.sigs.k8s.io/jobset-uid]"},
		{"another label", pod("u1"), pod("u1").Label("app", "x"), "alice", ""},
		{"a Pod of no Job", pod(""), pod("").Label("job-name", "x"), "alice", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := admitChild(t, "Job", c.old.Obj(), c.obj.Obj(), c.user)
			switch {
			case c.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("got %q, want a refusal with %q", got, c.want)
			}
		})
	}
}

// A JobSet's Jobs carry no queue label: they are held with their JobSet,
// and started by the JobSet's controller once berth starts the JobSet. Their
// user may not start one, nor make one run more pods at once (the reported
// gap: a waiting JobSet's Job unsuspended ran unadmitted).
func TestJobSetsJobsAreStartedByItsControllerAlone(t *testing.T) {
	yes := true
	job := func(suspend bool, parallelism int32) *JobWrapper {
		j := MakeJob("train-workers-0", "team-a").Suspend(suspend).Parallelism(parallelism).
			Label("jobset.sigs.k8s.io/jobset-uid", "js1").Label("jobset.sigs.k8s.io/jobset-name", "train").
			Label("jobset.sigs.k8s.io/replicatedjob-name", "workers").Label("jobset.sigs.k8s.io/job-index", "0")
		j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "js1", Controller: &yes}}
		return j
	}
	for _, c := range []struct {
		name     string
		old, obj *JobWrapper
		user     string
		want     string
	}{
		{"started by its user", job(true, 4), job(false, 4), "alice",
			"Job train-workers-0: spec.suspend: a JobSet's Job is started by the JobSet's controller, with its JobSet, once berth admits it"},
		{"started by the JobSet's controller", job(true, 4), job(false, 4), jobSetController, ""},
		{"grown while it runs", job(false, 4), job(false, 12), "alice",
			"Job train-workers-0: a JobSet's Job may not run more pods at once (from 4 to 12)"},
		// Its JobSet's controller would start it grown, past what berth
		// admitted for the JobSet.
		{"grown while suspended", job(true, 4), job(true, 12), "alice", "a JobSet's Job may not run more pods at once (from 4 to 12)"},
		{"grown by the JobSet's controller", job(true, 4), job(true, 12), jobSetController, ""},
		{"shrunk while it runs", job(false, 4), job(false, 2), "alice", ""},
		{"suspended by its user", job(false, 4), job(true, 4), "alice", ""},
		{"a Job of no JobSet, started", MakeJob("free", "team-a").Suspend(true), MakeJob("free", "team-a").Suspend(false), "alice", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := admitChild(t, "JobSet", c.old.Obj(), c.obj.Obj(), c.user)
			switch {
			case c.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("got %q, want a refusal with %q", got, c.want)
			}
		})
	}
}

// A kind queued from configuration (an MPIJob here) is guarded from its
// description: its pod templates and counts may change only in an update
// that leaves it suspended, berth alone unsuspends it, and its pods keep the
// label berth finds them by.
func TestConfiguredKindsKeepTheirShapeWhileTheyRun(t *testing.T) {
	data, err := os.ReadFile("../../examples/configured/kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := configured.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	kind := kinds[0].Guard()
	mpiJob := func(suspend bool, workers int64, image string) client.Object {
		u := &uns.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
			"metadata": map[string]any{"name": "pi", "namespace": "team-a", "labels": map[string]any{berthv1.QueueNameLabel: "jobs"}},
			"spec": map[string]any{"runPolicy": map[string]any{"suspend": suspend}, "mpiReplicaSpecs": map[string]any{
				"Worker": map[string]any{"replicas": workers, "template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": "w", "image": image}}}}}}}}}
		return u
	}
	check := func(old, obj client.Object, user string) string {
		return evaluate(t, func(k guard.Kind) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			return guard.Policy(opts, k)
		}, kind, old, obj, user, "")
	}
	for _, c := range []struct {
		name     string
		old, obj client.Object
		user     string
		want     string
	}{
		{"more workers while it runs", mpiJob(false, 2, "a"), mpiJob(false, 8, "a"), "alice",
			"MPIJob pi: spec.mpiReplicaSpecs.Worker.replicas: may change on a queued MPIJob only in an update that leaves it suspended"},
		{"another template while it runs", mpiJob(false, 2, "a"), mpiJob(false, 2, "b"), "alice",
			"MPIJob pi: spec.mpiReplicaSpecs.Worker.template: may change"},
		{"more workers, suspending it", mpiJob(false, 2, "a"), mpiJob(true, 8, "a"), "alice", ""},
		{"more workers while held", mpiJob(true, 2, "a"), mpiJob(true, 8, "a"), "alice", ""},
		{"started by its user", mpiJob(true, 2, "a"), mpiJob(false, 2, "a"), "alice",
			"spec.runPolicy.suspend: a queued MPIJob is started by berth once its Workload is admitted"},
		{"started by berth", mpiJob(true, 2, "a"), mpiJob(false, 2, "a"), berth, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := check(c.old, c.obj, c.user)
			switch {
			case c.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("got %q, want a refusal with %q", got, c.want)
			}
		})
	}
}

// The RayCluster KubeRay makes for a RayJob keeps the queue label it was
// made with (it stays under the RayCluster's own policy), whoever edits it,
// and its controller reference; any other edit is the RayCluster policy's
// to judge.
func TestARayJobsClusterKeepsItsQueueLabel(t *testing.T) {
	data, err := os.ReadFile("../../config/addons/ray/kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := configured.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var rayJob guard.Kind
	for i := range kinds {
		if kinds[i].Kind == "RayJob" {
			rayJob = kinds[i].Guard()
		}
	}
	if len(rayJob.Children) != 2 || rayJob.Children[1].Name != "RayCluster" {
		t.Fatalf("the RayJob's children: %+v", rayJob.Children)
	}
	yes := true
	cluster := func(labels map[string]any, owner string) client.Object {
		md := map[string]any{"name": "job-abc", "namespace": "team-a", "labels": labels}
		if owner != "" {
			md["ownerReferences"] = []any{map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job", "uid": owner, "controller": yes}}
		}
		return &uns.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": md,
			"spec": map[string]any{"suspend": true}}}
	}
	queued := map[string]any{berthv1.QueueNameLabel: "jobs"}
	check := func(old, obj client.Object, user string) string {
		return evaluate(t, func(k guard.Kind) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			return guard.ChildPolicy(opts, k, k.Children[1])
		}, rayJob, old, obj, user, "")
	}
	for _, c := range []struct {
		name     string
		old, obj client.Object
		want     string
	}{
		{"its queue label taken off", cluster(queued, "u1"), cluster(map[string]any{}, "u1"),
			"RayCluster job-abc: metadata.labels[berth.dev/queue-name]: a RayJob's RayCluster keeps the label it was made with"},
		{"moved to another queue", cluster(queued, "u1"), cluster(map[string]any{berthv1.QueueNameLabel: "other"}, "u1"), "keeps the label it was made with"},
		{"freed from its RayJob", cluster(queued, "u1"), cluster(queued, ""), "the controller of a RayJob's RayCluster may not change"},
		{"another label", cluster(queued, "u1"), cluster(map[string]any{berthv1.QueueNameLabel: "jobs", "team": "a"}, "u1"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := check(c.old, c.obj, "alice")
			switch {
			case c.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("got %q, want a refusal with %q", got, c.want)
			}
		})
	}
}
