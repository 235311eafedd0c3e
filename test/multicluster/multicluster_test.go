package multicluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/multicluster"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workercluster"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

const (
	manager = "manager"
	worker1 = "worker1"
	worker2 = "worker2"
	wait    = 60 * time.Second
)

var ctx = context.Background()

// lostTimeout is the manager's --worker-lost-timeout, short for the tests.
const lostTimeout = 5 * time.Second

// spreadAfter is the manager's --dispatch-spread-after: long enough that a
// worker with room admits its copy in time on a busy machine, short enough
// for the tests that wait for the others to get one.
const spreadAfter = 20 * time.Second

// The manager and worker1 run JobSet's controller; worker2 does not serve
// JobSets at all.
func TestMain(m *testing.M) {
	os.Exit(testenv.MainClusters(m,
		testenv.Cluster{Name: manager, ControllerArgs: []string{"--worker-lost-timeout=" + lostTimeout.String(),
			"--dispatch-spread-after=" + spreadAfter.String()}, With: []string{"jobset"}},
		testenv.Cluster{Name: worker1, With: []string{"jobset"}}, testenv.Cluster{Name: worker2}))
}

var connected struct {
	once sync.Once
	err  error
}

// connect adds both workers to the manager, once for the package, as
// `berth cluster add` does, and waits until the manager reaches them.
func connect(t *testing.T, envs map[string]*testenv.Env) {
	t.Helper()
	connected.once.Do(func() {
		m := envs[manager]
		for _, w := range []string{worker1, worker2} {
			data, err := workercluster.Portable(envs[w].Kubeconfig, "")
			if err != nil {
				connected.err = err
				return
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-" + w, Namespace: "berth-system"},
				Data: map[string][]byte{workercluster.SecretKey: data}}
			if err := m.Client.Create(ctx, secret); err != nil {
				connected.err = err
				return
			}
			wc := &berthv1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: w},
				Spec: berthv1.WorkerClusterSpec{KubeconfigSecret: secret.Name}}
			if err := m.Client.Create(ctx, wc); err != nil {
				connected.err = err
				return
			}
		}
	})
	if connected.err != nil {
		t.Fatalf("adding the workers: %v", connected.err)
	}
	for _, w := range []string{worker1, worker2} {
		testenv.Eventually(t, wait, func() error {
			var wc berthv1.WorkerCluster
			if err := envs[manager].Client.Get(ctx, types.NamespacedName{Name: w}, &wc); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(wc.Status.Conditions, berthv1.WorkerClusterActive) {
				return fmt.Errorf("WorkerCluster %s not Active: %+v", w, wc.Status.Conditions)
			}
			return nil
		})
	}
}

// shape makes the queues of one test: on the manager, a ClusterQueue with
// a multicluster check over both workers; on each worker with quota (cpu,
// "" for no queues at all), a ClusterQueue of that much and a simulated
// node. Every cluster has LocalQueue "lq" in the test's namespace, except
// workers without queues.
func shape(t *testing.T, envs map[string]*testenv.Env, quota map[string]string) {
	t.Helper()
	connect(t, envs)
	m := envs[manager]
	rf := m.Name("rf")
	m.Create(t, MakeResourceFlavor(rf).Obj())
	m.Create(t, &berthv1.MultiClusterConfig{ObjectMeta: metav1.ObjectMeta{Name: m.Name("mcc")},
		Spec: berthv1.MultiClusterConfigSpec{Clusters: []string{worker1, worker2}}})
	m.Create(t, &berthv1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: m.Name("mc")},
		Spec: berthv1.AdmissionCheckSpec{ControllerName: berthv1.MultiClusterControllerName,
			Parameters: &berthv1.AdmissionCheckParametersReference{APIGroup: "berth.dev", Kind: "MultiClusterConfig", Name: m.Name("mcc")}}})
	m.Create(t, MakeClusterQueue(m.Name("cq")).AdmissionChecks(m.Name("mc")).
		ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "10").Obj()).Obj())
	m.Create(t, MakeLocalQueue("lq", m.Namespace, m.Name("cq")).Obj())
	for _, w := range []string{worker1, worker2} {
		env := envs[w]
		env.CreateSimNode(t, env.Name("node"), nil)
		if quota[w] != "" {
			workerQueues(t, env, quota[w])
		}
	}
}

// workerQueues makes a worker's flavor and queues.
func workerQueues(t *testing.T, env *testenv.Env, cpu string) {
	t.Helper()
	rf := env.Name("rf")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(env.Name("cq")).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", cpu).Obj()).Obj())
	env.Create(t, MakeLocalQueue("lq", env.Namespace, env.Name("cq")).Obj())
}

// submit creates a Job on the manager that runs for a second on a
// simulated node of the test, and returns it as created.
func submit(t *testing.T, m *testenv.Env, name string) *batchv1.Job {
	t.Helper()
	job := MakeJob(name, m.Namespace).Queue("lq").Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "1s").Toleration(m.Toleration()).Obj()
	if err := m.Client.Create(ctx, job); err != nil {
		t.Fatalf("creating Job %s: %v", name, err)
	}
	return job
}

func managerWorkload(t *testing.T, m *testenv.Env, job *batchv1.Job) *berthv1.Workload {
	t.Helper()
	var wl berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		return m.Client.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: jobs.WorkloadName(job)}, &wl)
	})
	return &wl
}

// waitRunsOn waits until the manager's workload is admitted and records
// the worker it runs on.
func waitRunsOn(t *testing.T, m *testenv.Env, job *batchv1.Job, worker string) *berthv1.Workload {
	t.Helper()
	var wl berthv1.Workload
	testenv.Eventually(t, wait, func() error {
		if err := m.Client.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: jobs.WorkloadName(job)}, &wl); err != nil {
			return err
		}
		if !workload.IsAdmitted(&wl) || wl.Status.ClusterName != worker {
			return fmt.Errorf("workload %s: admitted %v on %q, want on %s; checks %+v; conditions %+v", wl.Name,
				workload.IsAdmitted(&wl), wl.Status.ClusterName, worker, wl.Status.AdmissionChecks, wl.Status.Conditions)
		}
		return nil
	})
	return &wl
}

// waitNoCopy waits until a worker holds no copy of the Job, nor of any
// Workload of the test.
func waitNoCopy(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var job batchv1.Job
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: name}, &job)
		if err == nil {
			return fmt.Errorf("a copy of Job %s is still on the worker (deleting: %v)", name, job.DeletionTimestamp != nil)
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		var wls berthv1.WorkloadList
		if err := env.Client.List(ctx, &wls, client.InNamespace(env.Namespace), client.HasLabels{multicluster.OriginLabel}); err != nil {
			return err
		}
		if len(wls.Items) > 0 {
			return fmt.Errorf("%d copies of Workloads still on the worker", len(wls.Items))
		}
		return nil
	})
}

func jobCondition(job *batchv1.Job, typ batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// A Job submitted to the manager runs on the worker that has room (worker1
// has none: it gets the first copy, worker2 one once the manager's
// --dispatch-spread-after has passed), completes there, and the manager
// shows it finished; nothing is left on either worker, and no pod ever ran
// on the manager. The next Job goes to worker2 first.
func TestJobRunsOnAWorkerWithRoom(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "0", worker2: "4"})
	m := envs[manager]
	job := submit(t, m, "hello")

	var created batchv1.Job
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &created); err != nil {
		t.Fatal(err)
	}
	if created.Spec.ManagedBy == nil || *created.Spec.ManagedBy != multicluster.ManagedBy {
		t.Fatalf("the manager's Job has spec.managedBy %v; want %s, so the manager's Job controller leaves it alone",
			created.Spec.ManagedBy, multicluster.ManagedBy)
	}
	wl := waitRunsOn(t, m, &created, worker2)
	if s := wl.Status.AdmissionChecks[0]; s.State != berthv1.CheckReady || s.Message != "admitted on worker cluster worker2" {
		t.Errorf("check %s %q", s.State, s.Message)
	}
	// The check's Ready and the admission are one write, told in one event.
	testenv.Eventually(t, wait, func() error {
		evs, err := m.Kube.EventsV1().Events(m.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + wl.Name})
		if err != nil {
			return err
		}
		var said []string
		for _, ev := range evs.Items {
			said = append(said, ev.Reason+": "+ev.Note)
		}
		if !slices.Equal(said, []string{"Admitted: every admission check is Ready; runs on worker cluster worker2"}) {
			return fmt.Errorf("the workload's events %q; want one saying it was admitted and where it runs", said)
		}
		return nil
	})
	waitNoCopy(t, envs[worker1], job.Name)

	testenv.Eventually(t, wait, func() error {
		var j batchv1.Job
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
			return err
		}
		if !jobCondition(&j, batchv1.JobComplete) || j.Status.Succeeded != 1 {
			return fmt.Errorf("the manager's Job is not Complete with 1 succeeded: %+v", j.Status)
		}
		w := managerWorkload(t, m, &j)
		if !workload.IsFinished(w) {
			return fmt.Errorf("the manager's workload is not Finished: %+v", w.Status.Conditions)
		}
		return nil
	})
	waitNoCopy(t, envs[worker2], job.Name)
	// The copy was started with no event of berth's: nobody reads the
	// copy's, and each dispatch costs the worker's API server one write
	// less. (The Job controller's events say it ran there.)
	evs, err := envs[worker2].Kube.EventsV1().Events(m.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	for _, ev := range evs.Items {
		if ev.Reason == "Started" {
			t.Errorf("berth wrote an event on the worker's copy: %s: %s", ev.Reason, ev.Note)
		}
		ran = ran || ev.Reason == "Completed"
	}
	if !ran {
		t.Errorf("no Completed event of the Job controller on the worker's copy among %d: the events are not where the test looks", len(evs.Items))
	}
	pods, err := m.Kube.CoreV1().Pods(m.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("%d pods on the manager (%v); it runs none", len(pods.Items), err)
	}

	// The next Job's first copy goes where the last one ran: it does not
	// wait on worker1, still full, once more.
	seen := watchWorkloads(t, envs[worker1])
	next := submit(t, m, "again")
	var nextCreated batchv1.Job
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(next), &nextCreated); err != nil {
		t.Fatal(err)
	}
	wl = waitRunsOn(t, m, &nextCreated, worker2)
	neverCopied(t, envs[worker1], worker1, seen, wl.Name)
}

// Lesson 3 across clusters: the Job is dispatched while no worker has a
// queue for it; the queues appearing on worker1 later is enough for it to
// run there.
func TestLateWorkerQueueAdmits(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, nil)
	m := envs[manager]
	job := submit(t, m, "early")
	wl := managerWorkload(t, m, job)
	testenv.Eventually(t, wait, func() error {
		for _, w := range []string{worker1, worker2} {
			var c berthv1.Workload
			if err := envs[w].Client.Get(ctx, client.ObjectKeyFromObject(wl), &c); err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
		}
		return nil
	})
	workerQueues(t, envs[worker1], "4")
	var created batchv1.Job
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &created); err != nil {
		t.Fatal(err)
	}
	waitRunsOn(t, m, &created, worker1)
	waitNoCopy(t, envs[worker2], job.Name)
}

// A worker stopped (`berth down`) while its Job runs: after the manager's
// --worker-lost-timeout the workload is queued again and runs on the other
// worker; once the lost worker is back, its copy is deleted.
func TestLostWorkersWorkloadRunsElsewhere(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "4", worker2: "4"})
	m := envs[manager]
	job := MakeJob("long", m.Namespace).Queue("lq").Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "10m").Toleration(m.Toleration()).Obj()
	if err := m.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	var lost, other string
	testenv.Eventually(t, wait, func() error {
		wl := managerWorkload(t, m, job)
		if !workload.IsAdmitted(wl) || wl.Status.ClusterName == "" {
			return fmt.Errorf("not running on a worker yet: %+v", wl.Status.AdmissionChecks)
		}
		lost, other = wl.Status.ClusterName, worker1
		if lost == worker1 {
			other = worker2
		}
		return nil
	})
	// It really runs there before the worker goes.
	testenv.Eventually(t, wait, func() error {
		var j batchv1.Job
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
			return err
		}
		if j.Status.Active != 1 {
			return fmt.Errorf("the manager's Job shows %d active pods; want its copy's 1", j.Status.Active)
		}
		return nil
	})

	testenv.Stop(t, lost)
	restarted := false
	defer func() {
		if !restarted {
			testenv.Start(t, lost)
		}
	}()
	// Noticing the worker is gone takes up to the connection's recheck
	// interval; then the timeout runs.
	testenv.Eventually(t, 2*time.Minute, func() error {
		wl := managerWorkload(t, m, job)
		if !workload.IsAdmitted(wl) || wl.Status.ClusterName != other {
			return fmt.Errorf("runs on %q (admitted %v), want %s; checks %+v", wl.Status.ClusterName,
				workload.IsAdmitted(wl), other, wl.Status.AdmissionChecks)
		}
		return nil
	})
	testenv.Start(t, lost)
	restarted = true
	waitNoCopy(t, envs[lost], job.Name)
	var c batchv1.Job
	if err := envs[other].Client.Get(ctx, client.ObjectKeyFromObject(job), &c); err != nil {
		t.Errorf("the copy on %s: %v", other, err)
	}
}

// A worker without the Job's namespace gets no copy, and the check's
// message says so while the workload waits for the other.
func TestWorkerWithoutTheNamespaceIsNamed(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, nil)
	w1 := envs[worker1]
	if err := w1.Kube.CoreV1().Namespaces().Delete(ctx, w1.Namespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		_, err := w1.Kube.CoreV1().Namespaces().Get(ctx, w1.Namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace %s still on worker1 (%v)", w1.Namespace, err)
	})
	m := envs[manager]
	job := submit(t, m, "homeless")
	want := "not copied to worker1: namespace " + m.Namespace + " does not exist there"
	testenv.Eventually(t, wait, func() error {
		wl := managerWorkload(t, m, job)
		if len(wl.Status.AdmissionChecks) != 1 || !strings.Contains(wl.Status.AdmissionChecks[0].Message, want) ||
			!strings.Contains(wl.Status.AdmissionChecks[0].Message, "dispatched to worker2") {
			return fmt.Errorf("checks %+v; want a message with %q", wl.Status.AdmissionChecks, want)
		}
		return nil
	})
}

// A worker added to the config after the workload was dispatched is offered
// it too: here the only worker first listed has no queues, and the one
// added later runs it.
func TestWorkerAddedToTheConfigIsOffered(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker2: "4"})
	m := envs[manager]
	var mcc berthv1.MultiClusterConfig
	if err := m.Client.Get(ctx, types.NamespacedName{Name: m.Name("mcc")}, &mcc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(mcc.DeepCopy())
	mcc.Spec.Clusters = []string{worker1}
	if err := m.Client.Patch(ctx, &mcc, patch); err != nil {
		t.Fatal(err)
	}
	job := submit(t, m, "patient")
	testenv.Eventually(t, wait, func() error {
		wl := managerWorkload(t, m, job)
		if len(wl.Status.AdmissionChecks) != 1 || !strings.HasPrefix(wl.Status.AdmissionChecks[0].Message, "dispatched to worker1;") {
			return fmt.Errorf("checks %+v; want it dispatched to worker1 alone", wl.Status.AdmissionChecks)
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		if err := m.Client.Get(ctx, types.NamespacedName{Name: m.Name("mcc")}, &mcc); err != nil {
			return err
		}
		mcc.Spec.Clusters = []string{worker1, worker2}
		return m.Client.Update(ctx, &mcc)
	})
	var created batchv1.Job
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &created); err != nil {
		t.Fatal(err)
	}
	waitRunsOn(t, m, &created, worker2)
	waitNoCopy(t, envs[worker1], job.Name)
}

// Copies whose manager Workload is gone are deleted: the Job deleted on the
// manager while it runs on a worker takes its copies there with it.
func TestCopiesOfADeletedJobGo(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "4"})
	m := envs[manager]
	job := MakeJob("doomed", m.Namespace).Queue("lq").Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "10m").Toleration(m.Toleration()).Obj()
	if err := m.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitRunsOn(t, m, job, worker1)
	testenv.Eventually(t, wait, func() error {
		var c batchv1.Job
		return envs[worker1].Client.Get(ctx, client.ObjectKeyFromObject(job), &c)
	})
	if err := m.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitNoCopy(t, envs[worker1], job.Name)
	waitNoCopy(t, envs[worker2], job.Name)
}

// A dispatched Job evicted on the manager keeps its quota there until its
// copy on the worker is gone: the copy is deleted first (its pods with it),
// and only then is the quota given back. A finalizer on the copy holds it
// so the test can look in between.
func TestEvictedJobKeepsQuotaUntilItsCopyIsGone(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "4"})
	m, w1 := envs[manager], envs[worker1]
	job := MakeJob("evicted", m.Namespace).Queue("lq").Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "10m").Toleration(m.Toleration()).Obj()
	if err := m.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	wl := waitRunsOn(t, m, job, worker1)
	const hold = "test.berth.dev/hold"
	testenv.Eventually(t, wait, func() error {
		var c batchv1.Job
		if err := w1.Client.Get(ctx, client.ObjectKeyFromObject(job), &c); err != nil {
			return err
		}
		c.Finalizers = append(c.Finalizers, hold)
		return w1.Client.Update(ctx, &c)
	})
	defer func() {
		var c batchv1.Job
		if err := w1.Client.Get(ctx, client.ObjectKeyFromObject(job), &c); err == nil && len(c.Finalizers) > 0 {
			c.Finalizers = nil
			_ = w1.Client.Update(ctx, &c)
		}
	}()

	testenv.Eventually(t, wait, func() error {
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
			return err
		}
		wl.Spec.Active = new(false)
		return m.Client.Update(ctx, wl)
	})
	testenv.Eventually(t, wait, func() error {
		var c batchv1.Job
		if err := w1.Client.Get(ctx, client.ObjectKeyFromObject(job), &c); err != nil {
			return err
		}
		if c.DeletionTimestamp == nil {
			return fmt.Errorf("the copy on worker1 is not being deleted yet")
		}
		return nil
	})
	// The manager's Job is suspended, yet its quota stays while the copy is there.
	testenv.Eventually(t, wait, func() error {
		var j batchv1.Job
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
			return err
		}
		if !jobs.Suspended(&j) {
			return fmt.Errorf("the manager's Job is not suspended yet")
		}
		return nil
	})
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
		t.Fatal(err)
	}
	if !workload.HasQuota(wl) || wl.Status.ClusterName != worker1 {
		t.Fatalf("the workload gave its quota back (quota %v, runs on %q) while its copy on worker1 is still there",
			workload.HasQuota(wl), wl.Status.ClusterName)
	}

	testenv.Eventually(t, wait, func() error {
		var c batchv1.Job
		if err := w1.Client.Get(ctx, client.ObjectKeyFromObject(job), &c); err != nil {
			return err
		}
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == hold })
		return w1.Client.Update(ctx, &c)
	})
	waitNoCopy(t, w1, job.Name)
	testenv.Eventually(t, wait, func() error {
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
			return err
		}
		if workload.HasQuota(wl) || wl.Status.ClusterName != "" {
			return fmt.Errorf("the workload still holds quota (runs on %q): %+v", wl.Status.ClusterName, wl.Status.Conditions)
		}
		return nil
	})
}

// A WorkerCluster deleted while a Job runs there goes only once the
// manager's copies on that worker are deleted; the workload it ran is queued
// again. The WorkerCluster is added back for the tests that follow.
func TestDeletedWorkerClustersCopiesAreCollected(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "4"})
	m := envs[manager]
	job := MakeJob("orphan", m.Namespace).Queue("lq").Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "10m").Toleration(m.Toleration()).Obj()
	if err := m.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitRunsOn(t, m, job, worker1)
	testenv.Eventually(t, wait, func() error {
		var c batchv1.Job
		return envs[worker1].Client.Get(ctx, client.ObjectKeyFromObject(job), &c)
	})

	var wc berthv1.WorkerCluster
	if err := m.Client.Get(ctx, types.NamespacedName{Name: worker1}, &wc); err != nil {
		t.Fatal(err)
	}
	spec := wc.Spec
	if !slices.Contains(wc.Finalizers, workercluster.Finalizer) {
		t.Fatalf("WorkerCluster %s has finalizers %q; want %s", worker1, wc.Finalizers, workercluster.Finalizer)
	}
	if err := m.Client.Delete(ctx, &wc); err != nil {
		t.Fatal(err)
	}
	defer func() {
		testenv.Eventually(t, wait, func() error {
			return m.Client.Create(ctx, &berthv1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: worker1}, Spec: spec})
		})
		connect(t, envs)
	}()
	waitNoCopy(t, envs[worker1], job.Name)
	testenv.Eventually(t, wait, func() error {
		err := m.Client.Get(ctx, types.NamespacedName{Name: worker1}, &wc)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("WorkerCluster %s still there (%v): %+v", worker1, err, wc.Status.Conditions)
	})
	testenv.Eventually(t, wait, func() error {
		wl := managerWorkload(t, m, job)
		if wl.Status.ClusterName != "" || len(wl.Status.AdmissionChecks) != 1 ||
			wl.Status.AdmissionChecks[0].State != berthv1.CheckPending {
			return fmt.Errorf("runs on %q, checks %+v; want it queued again, waiting for a worker",
				wl.Status.ClusterName, wl.Status.AdmissionChecks)
		}
		return nil
	})
}

// A dispatched Job resized on the manager runs with its new size on the
// worker: its old copy goes (the manager keeping its quota meanwhile), and
// the Job is dispatched again with the new shape.
func TestResizedJobReachesItsWorker(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "4"})
	m, w1 := envs[manager], envs[worker1]
	job := MakeJob("resized", m.Namespace).Queue("lq").Request("cpu", "1").Parallelism(1).Completions(4).
		PodAnnotation("berth.dev/sim-duration", "10m").Toleration(m.Toleration()).Obj()
	if err := m.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitRunsOn(t, m, job, worker1)
	testenv.Eventually(t, wait, func() error {
		var c batchv1.Job
		return w1.Client.Get(ctx, client.ObjectKeyFromObject(job), &c)
	})
	testenv.Eventually(t, wait, func() error {
		var j batchv1.Job
		if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(j.DeepCopy(), client.MergeFromWithOptimisticLock{})
		j.Spec.Parallelism = new(int32(3))
		return m.Client.Patch(ctx, &j, patch)
	})
	testenv.Eventually(t, 2*wait, func() error {
		var c batchv1.Job
		if err := w1.Client.Get(ctx, client.ObjectKeyFromObject(job), &c); err != nil {
			wl := managerWorkload(t, m, job)
			return fmt.Errorf("the copy on worker1: %w; the manager's workload runs on %q: %+v %+v", err,
				wl.Status.ClusterName, wl.Status.Conditions, wl.Status.AdmissionChecks)
		}
		if c.Spec.Parallelism == nil || *c.Spec.Parallelism != 3 || jobs.Suspended(&c) {
			return fmt.Errorf("the copy on worker1 has parallelism %v (suspended %v); want 3, running",
				c.Spec.Parallelism, jobs.Suspended(&c))
		}
		wl := managerWorkload(t, m, job)
		if !workload.IsAdmitted(wl) || wl.Status.Admission.PodSetAssignments[0].Count != 3 || wl.Status.ClusterName != worker1 {
			return fmt.Errorf("the manager's workload: admitted %v on %q, %+v", workload.IsAdmitted(wl), wl.Status.ClusterName, wl.Status.Admission)
		}
		return nil
	})
}

// A Job the first worker of the config admits within the manager's
// --dispatch-spread-after runs there, and the second worker never gets a
// copy of its Workload: no copy is made, admitted and deleted for nothing;
// nor is the check's Pending message written on the manager.
// (TestJobRunsOnAWorkerWithRoom shows the copy reaching the second worker
// when the first has no room.)
func TestOneCopyWhenTheFirstWorkerAdmits(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "4", worker2: "4"})
	m, w2 := envs[manager], envs[worker2]
	seen, states := watchWorkloads(t, w2), watchWorkloads(t, m)

	job := submit(t, m, "first")
	var created batchv1.Job
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(job), &created); err != nil {
		t.Fatal(err)
	}
	wl := waitRunsOn(t, m, &created, worker1)
	// Every version of the manager's Workload up to its admission: its
	// check went from Pending without a message to Ready.
	deadline := time.After(wait)
	for admitted := false; !admitted; {
		select {
		case ev, ok := <-states.ResultChan():
			if !ok {
				t.Fatal("the watch of the manager's Workloads ended")
			}
			o, isWorkload := ev.Object.(*berthv1.Workload)
			if !isWorkload || o.Name != wl.Name {
				continue
			}
			for _, c := range o.Status.AdmissionChecks {
				if c.State == berthv1.CheckPending && c.Message != "" {
					t.Errorf("the check's Pending message was written (%q), though worker1 admitted it in time", c.Message)
				}
			}
			admitted = workload.IsAdmitted(o)
		case <-deadline:
			t.Fatalf("the watch did not show Workload %s admitted within %s", wl.Name, wait)
		}
	}
	neverCopied(t, w2, worker2, seen, wl.Name)
}

// watchWorkloads watches the Workloads of the test's namespace on env.
func watchWorkloads(t *testing.T, env *testenv.Env) watch.Interface {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &berthv1.WorkloadList{}, client.InNamespace(env.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// neverCopied fails the test if seen, a watch of the Workloads of worker
// (env) started earlier, shows Workload name there.
func neverCopied(t *testing.T, env *testenv.Env, worker string, seen watch.Interface, name string) {
	t.Helper()
	// A Workload made now is seen after anything made there before it:
	// the watch delivers in order.
	marker := MakeWorkload("marker", env.Namespace).Request("cpu", "1").Obj()
	env.Create(t, marker)
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-seen.ResultChan():
			if !ok {
				t.Fatalf("the watch of %s's Workloads ended", worker)
			}
			o, isWorkload := ev.Object.(*berthv1.Workload)
			if !isWorkload {
				continue
			}
			if o.Name == name {
				t.Fatalf("a copy of %s reached %s (%s)", name, worker, ev.Type)
			}
			if o.Name == marker.Name {
				return
			}
		case <-deadline:
			t.Fatalf("the marker Workload was not seen on %s within %s", worker, wait)
		}
	}
}
