package integrations

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/test/standin"
)

// trainingKinds is what berth up --with training-operator queues.
const trainingKinds = "../../config/addons/training-operator/kinds.yaml"

// A PyTorchJob, queued by berth with Kubeflow's training operator running
// (berth up --with training-operator): created suspended, a pod set per
// replica type; one that fits is started with its flavor on each template
// and the operator makes its master and workers, which run on simulated
// nodes and finish, and so does the PyTorchJob, giving its quota to one
// that waited suspended meanwhile. Running, its user cannot add workers
// (through the object or its scale subresource) nor hide a pod from the
// operator. Evicted, it is suspended with its own templates and its quota
// comes back only once the operator has taken its pods away; it runs
// again, whole, when there is room. Suspended and grown in one update by
// its user, it queues again with its new shape, which no longer fits.
func TestAPyTorchJobRunsUnderTheTrainingOperator(t *testing.T) {
	env := testenv.New(t)
	trainingEditors(t, env)
	// Installed by --with training-operator already: this waits for berth
	// to turn it on.
	standin.InstallCRD(t, env, "../../config/addons/training-operator/crd/kubeflow.org_pytorchjobs.yaml", "pytorchjobs.kubeflow.org.berth.dev")
	pool, cq := poolQueue(t, env, "3", "4Gi")
	env.CreateSimNode(t, env.Name("n"), map[string]string{"pool": pool})
	kind := kindIn(t, trainingKinds, "PyTorchJob")

	pytorchJob := func(name, runs string) *unstructured.Unstructured {
		job := readExample(t, "../../examples/configured/pytorchjob.yaml")
		job.SetName(name)
		job.SetNamespace(env.Namespace)
		job.SetLabels(map[string]string{berthv1.QueueNameLabel: "main"})
		for _, set := range []string{"Master", "Worker"} {
			_ = unstructured.SetNestedField(job.Object, runs, "spec", "pytorchReplicaSpecs", set, "template", "metadata", "annotations", "berth.dev/sim-duration")
		}
		return job
	}
	pods := func(job *unstructured.Unstructured) []corev1.Pod {
		t.Helper()
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace),
			client.MatchingLabels{"training.kubeflow.org/job-name": job.GetName()}); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	started := func(job *unstructured.Unstructured) error {
		wl, err := workloadOf(env, kind, job)
		if err != nil {
			return err
		}
		if ps := wl.Spec.PodSets; len(ps) != 2 || ps[0].Name != "master" || ps[0].Count != 1 || ps[1].Name != "worker" || ps[1].Count != 2 {
			return fmt.Errorf("pod sets %+v; want master 1 and worker 2", ps)
		}
		if !workload.IsAdmitted(wl) {
			return fmt.Errorf("%s is not admitted", job.GetName())
		}
		now := current(t, env, job)
		if kind.C.Suspended(now) {
			return fmt.Errorf("%s is not started", job.GetName())
		}
		for _, set := range []string{"Master", "Worker"} {
			sel, _, _ := unstructured.NestedStringMap(now.Object, "spec", "pytorchReplicaSpecs", set, "template", "spec", "nodeSelector")
			if sel["pool"] != pool {
				return fmt.Errorf("%s's %s template: node selector %v", job.GetName(), set, sel)
			}
		}
		return nil
	}

	first, second := pytorchJob("first", "5s"), pytorchJob("second", "10m")
	env.Create(t, first)
	if !kind.C.Suspended(first) {
		t.Fatal("a queued PyTorchJob was not created suspended")
	}
	testenv.Eventually(t, wait, func() error { return started(first) })
	env.Create(t, second)
	// The operator makes the first's pods, on the flavor's nodes, where
	// they run; the second waits, suspended.
	testenv.Eventually(t, wait, func() error {
		ps := pods(first)
		if len(ps) != 3 {
			return fmt.Errorf("the operator made %d pods; want a master and 2 workers", len(ps))
		}
		for _, p := range ps {
			if p.Spec.NodeSelector["pool"] != pool || p.Labels[berthv1.OwnerUIDLabel] != string(first.GetUID()) {
				return fmt.Errorf("pod %s: node selector %v, labels %v", p.Name, p.Spec.NodeSelector, p.Labels)
			}
		}
		if wl, err := workloadOf(env, kind, second); err != nil || workload.HasQuota(wl) || !kind.C.Suspended(current(t, env, second)) {
			return fmt.Errorf("the second: %v; want it waiting, suspended", err)
		}
		return nil
	})
	// The first's pods finish, then the PyTorchJob, and the second runs.
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, kind, first)
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("the first's Workload has not finished")
		}
		return started(second)
	})
	if c := finishedCondition(current(t, env, first)); c != "Succeeded" {
		t.Fatalf("the first PyTorchJob's Workload finished, but the operator says %q; want Succeeded", c)
	}
	testenv.Eventually(t, wait, func() error {
		if n := len(pods(second)); n != 3 {
			return fmt.Errorf("the operator made %d pods for the second; want 3", n)
		}
		return nil
	})

	alice := env.AsEditor(t, "alice")
	refused(t, alice, current(t, env, second), func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "pytorchReplicaSpecs", "Worker", "replicas")
	}, "spec.pytorchReplicaSpecs.Worker.replicas: may change on a queued PyTorchJob only in an update that leaves it suspended")
	// Nor through its scale subresource (its workers), which the API
	// server's policies cannot see the PyTorchJob behind.
	scale := &unstructured.Unstructured{}
	scale.SetAPIVersion("autoscaling/v1")
	scale.SetKind("Scale")
	if err := alice.SubResource("scale").Get(ctx, second, scale); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(scale.Object, int64(6), "spec", "replicas")
	err := alice.SubResource("scale").Update(ctx, second, client.WithSubResourceBody(scale))
	if err == nil || !strings.Contains(err.Error(), "PyTorchJob second: a queued PyTorchJob is scaled up (from 2 to 6) only while it is suspended") {
		t.Fatalf("scaling a running PyTorchJob up: %v", err)
	}
	podLabelRefused(t, alice, &pods(second)[0], "training.kubeflow.org/job-name",
		"metadata.labels[training.kubeflow.org/job-name]: the PyTorchJob finds its Pods by it")
	managed := pytorchJob("managed", "10m")
	_ = unstructured.SetNestedField(managed.Object, "kueue.x-k8s.io/multikueue", "spec", "runPolicy", "managedBy")
	if err := env.Client.Create(ctx, managed); err == nil || !strings.Contains(err.Error(), "spec.runPolicy.managedBy: is set; berth does not follow it") {
		t.Fatalf("a queued PyTorchJob handed to another controller was not refused: %v", err)
	}

	// Evicted (its ClusterQueue stopped and drained): suspended with its
	// own templates; the operator deletes its pods, and only then is its
	// quota given back.
	drain(t, env, cq)
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, kind, second)
		if err != nil {
			return err
		}
		left := len(pods(second))
		if !workload.HasQuota(wl) && left > 0 {
			t.Fatalf("the evicted PyTorchJob's quota came back with %d of its pods still there", left)
		}
		now := current(t, env, second)
		if !kind.C.Suspended(now) {
			return fmt.Errorf("not suspended")
		}
		if sel, _, _ := unstructured.NestedStringMap(now.Object, "spec", "pytorchReplicaSpecs", "Master", "template", "spec", "nodeSelector"); sel["pool"] != "" {
			return fmt.Errorf("the master's template keeps its flavor's node selector %v", sel)
		}
		if left > 0 || workload.HasQuota(wl) {
			return fmt.Errorf("%d pods left, quota held %v", left, workload.HasQuota(wl))
		}
		return nil
	})
	// The queue open again, it runs again whole.
	var q berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &q); err != nil {
		t.Fatal(err)
	}
	orig := q.DeepCopy()
	q.Spec.StopPolicy = berthv1.StopPolicyNone
	if err := env.Client.Patch(ctx, &q, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		if err := started(second); err != nil {
			return err
		}
		if n := len(pods(second)); n != 3 {
			return fmt.Errorf("the operator made %d pods; want 3 again", n)
		}
		return nil
	})

	// Suspended and grown in one update: it queues again, 4 cpu of 3.
	testenv.Eventually(t, wait, func() error {
		grown := current(t, env, second)
		_ = unstructured.SetNestedField(grown.Object, true, "spec", "runPolicy", "suspend")
		_ = unstructured.SetNestedField(grown.Object, int64(3), "spec", "pytorchReplicaSpecs", "Worker", "replicas")
		return alice.Update(ctx, grown) // a conflict with berth's writes: read and try again
	})
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, kind, second)
		if err != nil {
			return err
		}
		if len(wl.Spec.PodSets) != 2 || wl.Spec.PodSets[1].Count != 3 || workload.HasQuota(wl) {
			return fmt.Errorf("pod sets %+v, quota %v: not queued again with 3 workers", wl.Spec.PodSets, workload.HasQuota(wl))
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		if !kind.C.Suspended(current(t, env, second)) {
			return fmt.Errorf("the grown PyTorchJob runs, past its quota")
		}
		return nil
	})
}

// trainingEditors lets the edit role write the training operator's kinds,
// as the operator's own install does.
func trainingEditors(t *testing.T, env *testenv.Env) {
	t.Helper()
	editors(t, env, "training-edit", "kubeflow.org", "pytorchjobs", "pytorchjobs/scale")
}

// Each of the training operator's examples but PyTorchJob's (above), as
// it is but for its namespace, queue and run time, all at once: held
// until admitted whole, started with the flavor on each replica type's
// template; the operator makes its pods on the flavor's nodes, they run
// and finish, and the operator's Succeeded finishes its Workload.
func TestEachTrainingOperatorExampleRunsToItsEnd(t *testing.T) {
	env := testenv.New(t)
	pool, _ := poolQueue(t, env, "8", "8Gi")
	env.CreateSimNode(t, env.Name("n1"), map[string]string{"pool": pool})
	env.CreateSimNode(t, env.Name("n2"), map[string]string{"pool": pool})
	examples := []struct {
		file, kind string
		podSets    map[string]int32
	}{
		{"tfjob.yaml", "TFJob", map[string]int32{"worker": 2}},
		{"xgboostjob.yaml", "XGBoostJob", map[string]int32{"master": 1, "worker": 1}},
		{"paddlejob.yaml", "PaddleJob", map[string]int32{"worker": 2}},
		{"jaxjob.yaml", "JAXJob", map[string]int32{"worker": 2}},
	}
	jobs := make([]*unstructured.Unstructured, len(examples))
	for i, ex := range examples {
		data, err := os.ReadFile("../../examples/configured/" + ex.file)
		if err != nil {
			t.Fatal(err)
		}
		job := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(strings.ReplaceAll(string(data), "sim-duration: 20s", "sim-duration: 3s")), &job.Object); err != nil {
			t.Fatal(err)
		}
		job.SetNamespace(env.Namespace)
		job.SetLabels(map[string]string{berthv1.QueueNameLabel: "main"})
		env.Create(t, job)
		if !kindIn(t, trainingKinds, ex.kind).C.Suspended(job) {
			t.Fatalf("a queued %s was not created suspended", ex.kind)
		}
		jobs[i] = job
	}
	for i, ex := range examples {
		kind, job := kindIn(t, trainingKinds, ex.kind), jobs[i]
		testenv.Eventually(t, wait, func() error {
			wl, err := workloadOf(env, kind, job)
			if err != nil {
				return err
			}
			got := map[string]int32{}
			for _, ps := range wl.Spec.PodSets {
				got[ps.Name] = ps.Count
			}
			if fmt.Sprint(got) != fmt.Sprint(ex.podSets) {
				return fmt.Errorf("%s: pod sets %v; want %v", ex.kind, got, ex.podSets)
			}
			var l corev1.PodList
			if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace),
				client.MatchingLabels{"training.kubeflow.org/job-name": job.GetName()}); err != nil {
				return err
			}
			want := int32(0)
			for _, n := range ex.podSets {
				want += n
			}
			// The operator keeps a finished job's pods (cleanPodPolicy
			// None): all of them ran on the flavor's nodes.
			if len(l.Items) != int(want) {
				return fmt.Errorf("%s: %d pods; want %d", ex.kind, len(l.Items), want)
			}
			for _, p := range l.Items {
				if p.Spec.NodeSelector["pool"] != pool {
					return fmt.Errorf("%s's pod %s: node selector %v", ex.kind, p.Name, p.Spec.NodeSelector)
				}
			}
			if !workload.IsFinished(wl) {
				return fmt.Errorf("%s: its Workload has not finished (%d of its pods made)", ex.kind, len(l.Items))
			}
			if c := finishedCondition(current(t, env, job)); c != "Succeeded" {
				return fmt.Errorf("%s: the operator says %q; want Succeeded", ex.kind, c)
			}
			return nil
		})
	}
}

// finishedCondition is the type of a training job's Succeeded or Failed
// condition that is True, "" if none is.
func finishedCondition(job *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	for _, c := range conds {
		if c, _ := c.(map[string]any); (c["type"] == "Succeeded" || c["type"] == "Failed") && c["status"] == "True" {
			return c["type"].(string)
		}
	}
	return ""
}
