package integrations

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
	"github.com/berth-dev/berth/test/standin"
)

// configuredKinds is the example of MPIJob, the package's controller's
// --configured-kinds (`berth up --with ray,training-operator` adds the
// kinds of its addons to it).
const configuredKinds = "../../examples/configured/kinds.yaml"

func mpiJobKind(t *testing.T) configured.Kind { return kindIn(t, configuredKinds, "MPIJob") }

// installMPIJobs installs the MPIJob CRD (and lets namespace editors use
// MPIJobs, as the operator's install does), and waits until berth's
// controller has turned the configured kind on.
func installMPIJobs(t *testing.T, env *testenv.Env) {
	t.Helper()
	installKind(t, env, standin.MPIJobCRD, standin.MPIJobHook)
}

// installKind installs the CRD in file (and lets namespace editors use
// the training operator's kinds and MPIJobs, as their installs do), and
// waits until berth's webhook configuration has hook.
func installKind(t *testing.T, env *testenv.Env, file, hook string) {
	t.Helper()
	editors := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubeflow-edit",
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"kubeflow.org"}, Resources: []string{"mpijobs", "pytorchjobs", "pytorchjobs/scale"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if err := env.Client.Create(ctx, editors); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	standin.InstallCRD(t, env, file, hook)
}

// A kind berth has no code for, MPIJob, queued from configuration alone, as
// a Job is: one that does not fit waits suspended; one that fits is
// admitted and runs on its flavor's nodes, and its Workload finishes with
// it; preempted, it is suspended and its quota comes back only once its pods
// are gone, then it queues again whole; and its user cannot change its
// shape while it runs.
func TestAConfiguredKindIsQueuedAsAJobIs(t *testing.T) {
	env := testenv.New(t)
	installMPIJobs(t, env)
	kind := mpiJobKind(t)
	op := standin.StartMPIOperator(t, env)

	pool := env.Name("pool")
	env.CreateSimNode(t, env.Name("n1"), map[string]string{"pool": pool})
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("pool", pool).Toleration(env.Toleration()).Obj())
	cqObj := MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "3").Resource("memory", "4Gi").Obj()).Obj()
	cqObj.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: berthv1.PreemptionLowerPriority}
	env.Create(t, cqObj)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	high := env.Name("high")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: high}, Value: 100})

	get := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		now := u.DeepCopy()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), now); err != nil {
			t.Fatal(err)
		}
		return now
	}
	podsOf := func(u *unstructured.Unstructured) []corev1.Pod {
		t.Helper()
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{berthv1.OwnerUIDLabel: string(u.GetUID())}); err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}

	// Too big for the queue (5 cpu of 3): it waits, suspended, no pods.
	big := standin.MPIJob("big", env.Namespace, "main", "", 4, "1", 10*time.Minute)
	env.Create(t, big)
	if !kind.C.Suspended(big) {
		t.Fatal("a queued MPIJob was not created suspended")
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, kind, big)
		if err != nil {
			return err
		}
		if len(wl.Spec.PodSets) != 2 || wl.Spec.PodSets[0].Name != "launcher" || wl.Spec.PodSets[1].Count != 4 {
			return fmt.Errorf("pod sets %+v", wl.Spec.PodSets)
		}
		if workload.HasQuota(wl) {
			return fmt.Errorf("a Workload that does not fit holds quota")
		}
		return nil
	})
	// berth why names it by its kind, as its user types it; berth status
	// says the kind is on.
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "why", "mpijob", "big", "-n", env.Namespace, "--kubeconfig", env.Kubeconfig).CombinedOutput()
	if err != nil || !strings.Contains(string(out), kind.WorkloadName(big)) || !strings.Contains(string(out), "Pending") {
		t.Errorf("berth why mpijob big: %v\n%s", err, out)
	}
	if env.Instance != nil {
		out, err := exec.Command(bin, "status", "--data-dir", env.Instance.Layout().Dir, "--name", "integrations").CombinedOutput()
		if err != nil || !regexp.MustCompile(`configured kinds on: .*mpijobs\.kubeflow\.org`).Match(out) {
			t.Errorf("berth status: %v\n%s", err, out)
		}
	}
	if err := env.Client.Delete(ctx, big); err != nil {
		t.Fatal(err)
	}

	// The example (2 workers of 1 cpu, a launcher of 500m) fits: admitted,
	// started with the flavor's node label and toleration, its pods run and
	// succeed, and its Workload finishes.
	data, err := os.ReadFile("../../examples/configured/mpijob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.ReplaceAll(string(data), "berth.dev/sim-duration: 20s", "berth.dev/sim-duration: 2s"))
	short := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &short.Object); err != nil {
		t.Fatal(err)
	}
	short.SetNamespace(env.Namespace)
	short.SetLabels(map[string]string{berthv1.QueueNameLabel: "main"})
	env.Create(t, short)
	testenv.Eventually(t, wait, func() error {
		now := get(short)
		if kind.C.Suspended(now) {
			return fmt.Errorf("the admitted MPIJob is still suspended")
		}
		pods := podsOf(now)
		if len(pods) != 3 {
			return fmt.Errorf("%d pods, want 3", len(pods))
		}
		for _, p := range pods {
			if p.Spec.NodeSelector["pool"] != pool || !slices.Contains(p.Spec.Tolerations, env.Toleration()) {
				return fmt.Errorf("pod %s lacks its flavor's node label or toleration: %v %v", p.Name, p.Spec.NodeSelector, p.Spec.Tolerations)
			}
		}
		wl, err := workloadOf(env, kind, short)
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("its Workload is not finished")
		}
		return nil
	})

	// Low priority, running, preempted by a high-priority one: suspended,
	// but its quota is held until its pods are gone.
	low := standin.MPIJob("low", env.Namespace, "main", "", 2, "1", 10*time.Minute)
	env.Create(t, low)
	testenv.Eventually(t, wait, func() error {
		for _, p := range podsOf(get(low)) {
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
			}
		}
		if n := len(podsOf(get(low))); n != 3 {
			return fmt.Errorf("%d pods running, want 3", n)
		}
		return nil
	})

	// Its user may not grow it while it runs, nor start it again.
	alice := env.AsEditor(t, "alice")
	refused(t, alice, get(low), func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(8), "spec", "mpiReplicaSpecs", "Worker", "replicas")
	}, "spec.mpiReplicaSpecs.Worker.replicas: may change on a queued MPIJob only in an update that leaves it suspended")

	op.Release.Store(false) // its pods linger after it is suspended
	urgent := standin.MPIJob("urgent", env.Namespace, "main", high, 2, "1", 2*time.Second)
	env.Create(t, urgent)
	testenv.Eventually(t, wait, func() error {
		if !kind.C.Suspended(get(low)) {
			return fmt.Errorf("the preempted MPIJob is not suspended")
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		wl, err := workloadOf(env, kind, low)
		if err != nil {
			return err
		}
		if !workload.HasQuota(wl) {
			return fmt.Errorf("the preempted MPIJob's quota was given back while its pods run")
		}
		if uwl, err := workloadOf(env, kind, urgent); err == nil && workload.HasQuota(uwl) {
			return fmt.Errorf("the urgent MPIJob was admitted into quota still in use")
		}
		return nil
	})
	op.Release.Store(true)
	testenv.Eventually(t, wait, func() error {
		uwl, err := workloadOf(env, kind, urgent)
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(uwl) {
			return fmt.Errorf("the urgent MPIJob is not admitted")
		}
		wl, err := workloadOf(env, kind, low)
		if err != nil {
			return err
		}
		if workload.HasQuota(wl) || workload.IsFinished(wl) {
			return fmt.Errorf("the preempted MPIJob did not queue again (quota %v, finished %v)", workload.HasQuota(wl), workload.IsFinished(wl))
		}
		return nil
	})
	// Once the urgent one is done, the preempted one runs again, whole.
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, kind, low)
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(wl) || kind.C.Suspended(get(low)) {
			return fmt.Errorf("the preempted MPIJob has not started again")
		}
		if n := len(podsOf(get(low))); n != 3 {
			return fmt.Errorf("%d pods, want 3", n)
		}
		return nil
	})

	// Its Workload deleted by hand: it stops, its quota is given back once
	// its pods are gone, and it queues again with a new Workload, admitted.
	wl, err := workloadOf(env, kind, low)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, wl); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		now, err := workloadOf(env, kind, low)
		if err != nil {
			return err
		}
		if now.UID == wl.UID || !workload.IsAdmitted(now) || kind.C.Suspended(get(low)) {
			return fmt.Errorf("not queued again and started with a new Workload (same %v, admitted %v)", now.UID == wl.UID, workload.IsAdmitted(now))
		}
		return nil
	})
}

// A configuration whose path the kind's CRD does not have stops `berth
// controller` before it writes anything, naming the path: read as "not
// suspended", it would let every object run unqueued.
func TestAConfiguredPathTheCRDLacksIsRefused(t *testing.T) {
	env := testenv.New(t)
	installMPIJobs(t, env)
	data, err := os.ReadFile(configuredKinds)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "kinds.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(data), "suspend: spec.runPolicy.suspend", "suspend: spec.suspend", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmdCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	out, err := exec.CommandContext(cmdCtx, bin, "controller", "--kubeconfig="+env.Kubeconfig, "--configured-kinds="+bad,
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0").CombinedOutput()
	if err == nil || cmdCtx.Err() != nil {
		t.Fatalf("berth controller did not refuse the configuration (%v):\n%s", err, out)
	}
	if want := `MPIJob.kubeflow.org (CustomResourceDefinition mpijobs.kubeflow.org): suspend: spec.suspend: the schema has no field "suspend" at spec`; !strings.Contains(string(out), want) {
		t.Fatalf("berth controller said:\n%s\nwant %q", out, want)
	}
}

// poolQueue makes LocalQueue "main" in env's namespace, of a ClusterQueue
// of cpu and memory in a flavor of nodes labelled pool; it returns the
// pool and the ClusterQueue.
func poolQueue(t *testing.T, env *testenv.Env, cpu, memory string) (pool, cq string) {
	t.Helper()
	pool, cq = env.Name("pool"), env.Name("cq")
	rf := env.Name("rf")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("pool", pool).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", cpu).Resource("memory", memory).Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	return pool, cq
}

// workloadOf is the Workload of obj, an object of kind.
func workloadOf(env *testenv.Env, kind configured.Kind, obj *unstructured.Unstructured) (*berthv1.Workload, error) {
	var wl berthv1.Workload
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: kind.WorkloadName(obj)}, &wl)
	return &wl, err
}

// readExample reads an object from a YAML file.
func readExample(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// kindIn is kind name as a --configured-kinds file describes it.
func kindIn(t *testing.T, file, name string) configured.Kind {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := configured.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range kinds {
		if kinds[i].Kind == name {
			return configured.Kind{C: &kinds[i]}
		}
	}
	t.Fatalf("no %s in %s", name, file)
	return configured.Kind{}
}

// podLabelRefused checks that user cannot change label on pod: dry runs are
// tried until the edit role has the pod's kind (aggregation takes a moment).
func podLabelRefused(t *testing.T, user client.Client, pod *corev1.Pod, label, want string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		p := pod.DeepCopy()
		if err := user.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Labels[label] = "elsewhere"
		err := user.Update(ctx, p, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("changing label %s on pod %s was not refused: %v", label, pod.Name, err)
		}
		return nil
	})
}

// editors lets the edit role write the resources of group, as an
// operator's own install does.
func editors(t *testing.T, env *testenv.Env, name, group string, resources ...string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources,
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if err := env.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// refused checks that user's update of obj by edit is refused with want:
// first as a dry run, until the edit role has the kind (its aggregation
// takes a moment) and the API server has taken up berth's policy (it
// reloads policies every second), then for real.
func refused(t *testing.T, user client.Client, obj *unstructured.Unstructured, edit func(*unstructured.Unstructured), want string) {
	t.Helper()
	attempt := func(opts ...client.UpdateOption) error {
		now := obj.DeepCopy()
		if err := user.Get(ctx, client.ObjectKeyFromObject(obj), now); err != nil {
			return err
		}
		edit(now)
		return user.Update(ctx, now, opts...)
	}
	testenv.Eventually(t, wait, func() error {
		if err := attempt(client.DryRunAll); err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("a dry run of the edit is not refused by berth's policy yet: %v", err)
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		err := attempt()
		if apierrors.IsConflict(err) {
			// Another writer (the operator, berth) changed the object between
			// the read and the write: the API server said so before it
			// judged the edit. Read again.
			return err
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("the edit was not refused with %q: %v", want, err)
		}
		return nil
	})
}
