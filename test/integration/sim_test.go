package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/localcluster"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// Simulated nodes become Ready and stay Ready: their leases are renewed, so
// the node lifecycle controller leaves them alone, while a node nobody
// renews (the control) is marked unreachable after the grace period.
func TestSimNodesStayReady(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	var names []string
	for i := range 3 {
		names = append(names, env.CreateSimNode(t, env.Name("node-"+strconv.Itoa(i)), nil).Name)
	}
	control := env.CreateReadyNode(t, env.Name("control"), nil)
	first := map[string]time.Time{}
	for _, n := range names {
		lease, err := env.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of node %s: %v", n, err)
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != n || len(lease.OwnerReferences) != 1 ||
			lease.OwnerReferences[0].Name != n {
			t.Fatalf("lease of node %s: holder %v, owners %v", n, lease.Spec.HolderIdentity, lease.OwnerReferences)
		}
		first[n] = lease.Spec.RenewTime.Time
	}
	// Past the grace period: the control node is tainted unreachable.
	testenv.Eventually(t, 3*time.Minute, func() error {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, control.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable {
				return nil
			}
		}
		return fmt.Errorf("the control node %s is not tainted unreachable yet (taints %v)", n.Name, n.Spec.Taints)
	})
	for _, name := range names {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable || taint.Key == corev1.TaintNodeNotReady {
				t.Errorf("simulated node %s was tainted %s", name, taint.Key)
			}
		}
		if !nodeReady(n) {
			t.Errorf("simulated node %s is not Ready: %v", name, n.Status.Conditions)
		}
		lease, err := env.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !lease.Spec.RenewTime.After(first[name]) {
			t.Errorf("lease of %s not renewed since %v", name, first[name])
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Job pods on simulated nodes run for their berth.dev/sim-duration and
// succeed, or fail with berth.dev/sim-exit-code.
func TestSimJobRunsForItsDuration(t *testing.T) {
	env := testenv.New(t)
	node := env.CreateSimNode(t, env.Name("node"), nil)
	ok := MakeJob("two-seconds", env.Namespace).Parallelism(2).PodAnnotation("berth.dev/sim-duration", "2s").
		Toleration(env.Toleration()).NodeSelector(corev1.LabelHostname, node.Name).Obj()
	failing := MakeJob("exit-3", env.Namespace).BackoffLimit(0).PodAnnotation("berth.dev/sim-duration", "1s").
		PodAnnotation("berth.dev/sim-exit-code", "3").Toleration(env.Toleration()).NodeSelector(corev1.LabelHostname, node.Name).Obj()
	env.Create(t, ok)
	env.Create(t, failing)

	var running time.Time
	testenv.Eventually(t, wait, func() error {
		pods, err := env.Kube.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=two-seconds"})
		if err != nil {
			return err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("%d of 2 pods Running with an IP", n)
		}
		running = time.Now()
		return nil
	})
	waitJobCondition(t, env, "two-seconds", batchv1.JobComplete)
	if took := time.Since(running); took < 1500*time.Millisecond {
		t.Errorf("the Job completed %v after its pods ran; they should run for 2s", took)
	}
	waitJobCondition(t, env, "exit-3", batchv1.JobFailed)
	pods, err := env.Kube.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=exit-3"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of exit-3: %v %v", len(pods.Items), err)
	}
	p := pods.Items[0]
	if p.Status.Phase != corev1.PodFailed || len(p.Status.ContainerStatuses) != 1 ||
		p.Status.ContainerStatuses[0].State.Terminated == nil || p.Status.ContainerStatuses[0].State.Terminated.ExitCode != 3 {
		t.Errorf("failing pod: phase %s, container statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
}

func waitJobCondition(t *testing.T, env *testenv.Env, name string, want batchv1.JobConditionType) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		j, err := env.Kube.BatchV1().Jobs(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == want && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("job %s not %s: %+v", name, want, j.Status)
	})
}

// Lesson 5: 500 pods whose finalizer a delayed stage removes are deleted at
// once; every one is gone after the delay and within the delay plus a
// margin. The stage is a Stage object in the cluster, which the simulator
// `berth up` runs picks up and prefers (weight 1) over the default
// pod-delete stage (weight 0).
func TestSimDeletionStorm(t *testing.T) {
	t.Parallel()
	const pods, delay, margin = 500, 5 * time.Second, 30 * time.Second
	env := testenv.New(t)
	nodes := []string{env.CreateSimNode(t, env.Name("a"), nil).Name, env.CreateSimNode(t, env.Name("b"), nil).Name}
	stageName := env.Name("storm")
	createStage(t, env, fmt.Sprintf(`
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: %s
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.namespace, operator: In, values: [%s]}
    - {key: .metadata.deletionTimestamp, operator: Exists}
  weight: 1
  delay:
    durationMilliseconds: %d
  next:
    finalizers:
      remove:
      - value: berth.dev/storm
    delete: true
`, stageName, env.Namespace, delay.Milliseconds()))
	waitStageLoaded(t, env, stageName)

	var wg sync.WaitGroup
	errs := make(chan error, pods)
	sem := make(chan struct{}, 16)
	for i := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p := MakePod("p-"+strconv.Itoa(i), env.Namespace).Node(nodes[i%len(nodes)]).Finalizer("berth.dev/storm").Obj()
			if _, err := env.Kube.CoreV1().Pods(env.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var rv string
	testenv.Eventually(t, time.Minute, func() error {
		list, err := env.Kube.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		n := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		if n != pods {
			return fmt.Errorf("%d of %d pods Running", n, pods)
		}
		rv = list.ResourceVersion
		return nil
	})

	// A watch that resumes where it stopped: on a busy machine the API
	// server closes watchers that fall behind a burst of events.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.Kube.CoreV1().Pods(env.Namespace).Watch(ctx, o)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	type goneEvent struct {
		name string
		at   time.Time
	}
	goneCh := make(chan goneEvent, pods)
	watchErr := make(chan error, 1)
	go func() {
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				goneCh <- goneEvent{ev.Object.(*corev1.Pod).Name, time.Now()}
			case watch.Error:
				watchErr <- fmt.Errorf("watch error: %v", ev.Object)
				return
			}
		}
		watchErr <- fmt.Errorf("watch ended")
	}()
	deleted := time.Now()
	if err := env.Kube.CoreV1().Pods(env.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// More versions of half the pods arrive while their stage waits: the
	// same stage matching again keeps its place and its due time.
	touch := make(chan error, 1)
	go func() {
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		for i := 0; i < pods; i += 2 {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				_, err := env.Kube.CoreV1().Pods(env.Namespace).Patch(ctx, "p-"+strconv.Itoa(i), types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					select {
					case touch <- err:
					default:
					}
				}
			}()
		}
		wg.Wait()
		close(touch)
	}()
	gone := map[string]time.Duration{}
	deadline := time.After(delay + margin)
	for len(gone) < pods {
		select {
		case g := <-goneCh:
			gone[g.name] = g.at.Sub(deleted)
		case err := <-watchErr:
			t.Fatalf("%v with %d of %d pods gone", err, len(gone), pods)
		case <-deadline:
			list, _ := env.Kube.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{Limit: 5})
			t.Fatalf("%d of %d pods still there %v after their deletion (the delayed stage was lost); e.g. %v",
				pods-len(gone), pods, delay+margin, podNames(list))
		}
	}
	if err := <-touch; err != nil {
		t.Errorf("touching a pod being deleted: %v", err)
	}
	for name, after := range gone {
		if after < delay {
			t.Errorf("pod %s was gone %v after its deletion, before the stage's %v delay", name, after, delay)
		}
	}
}

func podNames(l *corev1.PodList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, p := range l.Items {
		out = append(out, p.Name)
	}
	return out
}

// createStage creates a Stage object from YAML and deletes it when the test ends.
func createStage(t *testing.T, env *testenv.Env, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	env.Create(t, u)
}

// waitStageLoaded waits for the simulator's event saying the Stage is in force.
func waitStageLoaded(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		evs, err := env.Kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: "regarding.name=" + name})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "Loaded" {
				return nil
			}
			if e.Reason == "InvalidStage" {
				return fmt.Errorf("stage %s invalid: %s", name, e.Note)
			}
		}
		return fmt.Errorf("no Loaded event for stage %s yet", name)
	})
}

// `berth sim` runs KWOK's stage format unchanged: the KWOK-style stage files
// in examples/stages/kwok (and nothing else) drive the nodes it creates with
// --nodes, in racks, and a Job's pods through Ready (with KWOK's Created
// event) to completion. Run again with fewer --nodes, it deletes the
// surplus.
func TestSimRunsKWOKStageFiles(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	prefix := env.Namespace + "-"
	owner := "berth.dev/sim-test=" + env.Namespace
	run := func(nodes int) func() {
		return runSim(t, env.Kubeconfig, "--stages", "../../examples/stages/kwok", "--default-stages=false", "--cluster-stages=false",
			"--node-selector", owner, "--nodes", strconv.Itoa(nodes), "--node-name-prefix", prefix,
			"--nodes-per-rack", "2", "--node-taints", testenv.SimNodeTaintKey+"="+env.Namespace+":NoSchedule")
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: owner})
	})
	stop := run(3)
	testenv.Eventually(t, time.Minute, func() error {
		list, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: owner})
		if err != nil {
			return err
		}
		racks := map[string]int{}
		for _, n := range list.Items {
			if !nodeReady(&n) || n.Status.NodeInfo.KubeletVersion[:5] != "kwok-" {
				return fmt.Errorf("node %s not initialised by the KWOK stage: ready %v, kubelet %q", n.Name, nodeReady(&n), n.Status.NodeInfo.KubeletVersion)
			}
			racks[n.Labels["topology.berth.dev/rack"]]++
			lease, err := env.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("lease of node %s: %w", n.Name, err)
			}
			if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != n.Name ||
				len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != n.UID {
				return fmt.Errorf("lease of node %s: holder %v, owners %v; want held by and owned by the node", n.Name, lease.Spec.HolderIdentity, lease.OwnerReferences)
			}
		}
		if len(list.Items) != 3 || racks["rack-0"] != 2 || racks["rack-1"] != 1 {
			return fmt.Errorf("%d nodes, racks %v; want 3 in rack-0 (2) and rack-1 (1)", len(list.Items), racks)
		}
		return nil
	})

	job := MakeJob("pi", env.Namespace).Toleration(env.Toleration()).Obj()
	job.Spec.Template.Spec.NodeName = prefix + "0"
	env.Create(t, job)
	waitJobCondition(t, env, "pi", batchv1.JobComplete)
	testenv.Eventually(t, wait, func() error {
		evs, err := env.Kube.EventsV1().Events(env.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "Created" && e.Regarding.Kind == "Pod" && e.ReportingController == "berth-sim" {
				return nil
			}
		}
		return fmt.Errorf("no Created event from the KWOK pod-ready stage among %d events", len(evs.Items))
	})

	stop()
	run(1)
	testenv.Eventually(t, time.Minute, func() error {
		list, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: owner})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != prefix+"0" {
			return fmt.Errorf("%d nodes left; want only %s0", len(list.Items), prefix)
		}
		return nil
	})
}

// TestSimHeartbeatsHaveKubeletPriority checks that the API server gives the
// simulator's Lease requests the priority level kubelets' have: in the
// catch-all level they would queue behind bulk work until nodes went
// unreachable.
func TestSimHeartbeatsHaveKubeletPriority(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	want, err := env.Kube.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "node-high", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: localcluster.SimIdentity.User}
	var mu sync.Mutex
	var level string
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				mu.Lock()
				level = resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
				mu.Unlock()
			}
			return resp, err
		})
	})
	sim := kubernetes.NewForConfigOrDie(cfg)
	_, err = sim.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, env.Name("no-such-node"), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("getting a missing lease as %s: want NotFound, got %v", localcluster.SimIdentity.User, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if level != string(want.UID) {
		t.Errorf("lease request of %s ran at priority level UID %q, want node-high (%s)", localcluster.SimIdentity.User, level, want.UID)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A node runs more pods over time than its address range holds: a finished
// pod's address is free for the next one, as a kubelet's would be.
func TestSimReusesAddressesOfFinishedPods(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	node := env.CreateSimNode(t, env.Name("node"), nil).Name
	const wave = 150 // two waves: more than the 254 addresses of a node's range
	for w := range 2 {
		for i := range wave {
			p := MakePod(fmt.Sprintf("w%d-%d", w, i), env.Namespace).Node(node).Obj()
			p.Annotations = map[string]string{"berth.dev/sim-exit-code": "0"} // succeeds as soon as it runs
			p.Spec.Tolerations = []corev1.Toleration{env.Toleration()}
			env.Create(t, p)
		}
		testenv.Eventually(t, 2*time.Minute, func() error {
			pods, err := env.Kube.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			done := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodSucceeded && p.Status.PodIP != "" {
					done++
				}
			}
			if done != (w+1)*wave {
				return fmt.Errorf("%d of %d pods succeeded with an address", done, (w+1)*wave)
			}
			return nil
		})
	}
}

// Finished pods and running ones (with a grace period and a finalizer) both
// go when deleted. The simulator no longer deletes a finished one itself
// (the API server removes it as it marks it deleted; the writes saved are
// counted in docs/benchmarks.md): this shows no pod is left behind by that,
// and that a running one is still ended as a kubelet would.
func TestSimDeletedPodsGo(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	node := env.CreateSimNode(t, env.Name("node"), nil).Name
	done := MakePod("done", env.Namespace).Node(node).Obj()
	done.Annotations = map[string]string{"berth.dev/sim-exit-code": "0"}
	running := MakePod("running", env.Namespace).Node(node).Finalizer("berth.dev/held").Obj()
	for _, p := range []*corev1.Pod{done, running} {
		p.Spec.Tolerations = []corev1.Toleration{env.Toleration()}
		env.Create(t, p)
	}
	want := map[string]corev1.PodPhase{"done": corev1.PodSucceeded, "running": corev1.PodRunning}
	testenv.Eventually(t, time.Minute, func() error {
		for name, phase := range want {
			p, err := env.Kube.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != phase {
				return fmt.Errorf("pod %s is %s, want %s", name, p.Status.Phase, phase)
			}
		}
		return nil
	})
	for name := range want {
		if err := env.Kube.CoreV1().Pods(env.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, time.Minute, func() error {
		for name := range want {
			p, err := env.Kube.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				return fmt.Errorf("pod %s still there (deleting since %v, finalizers %v)", name, p.DeletionTimestamp, p.Finalizers)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

// The simulator drives kinds other than Node and Pod from KWOK-format
// stages with CEL selectors: with the volume stages, a claim of the
// kwok-volume class gets a PersistentVolume and both turn Bound; deleting
// the claim deletes the volume. It runs as berth-sim, so its RBAC is proven
// to cover what the volume stages do.
func TestSimBindsClaimsWithVolumeStages(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	class := &storagev1.StorageClass{}
	readYAML(t, "../../examples/sim-volume-class.yaml", class)
	if _, err := env.Kube.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.StorageV1().StorageClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})

	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		u.Impersonate = localcluster.SimIdentity.User
	}
	asSim := filepath.Join(t.TempDir(), "sim.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, asSim); err != nil {
		t.Fatal(err)
	}
	runSim(t, asSim, "--stages", "../../examples/stages/volume", "--default-stages=false", "--cluster-stages=false",
		"--node-selector", "berth.dev/sim-test="+env.Namespace, "--nodes", "0")

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: env.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class.Name,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("2Gi")}}}}
	pvc, err = env.Kube.CoreV1().PersistentVolumeClaims(env.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volume := "pvc-" + string(pvc.UID)
	testenv.Eventually(t, time.Minute, func() error {
		c, err := env.Kube.CoreV1().PersistentVolumeClaims(env.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound || c.Spec.VolumeName != volume || c.Status.Capacity.Storage().String() != "2Gi" {
			return fmt.Errorf("claim %s: phase %s, volume %q, capacity %v; want Bound to %s with 2Gi", c.Name, c.Status.Phase,
				c.Spec.VolumeName, c.Status.Capacity, volume)
		}
		pv, err := env.Kube.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
			return fmt.Errorf("volume %s: phase %s, claim %+v; want Bound to the claim", volume, pv.Status.Phase, pv.Spec.ClaimRef)
		}
		return nil
	})

	if err := env.Kube.CoreV1().PersistentVolumeClaims(env.Namespace).Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		pv, err := env.Kube.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("volume %s still there: phase %s, deleting %v", volume, pv.Status.Phase, pv.DeletionTimestamp != nil)
	})
}

// runSim starts berth sim with the kubeconfig and the flags, on a free
// health port, and returns what stops it (also run at the test's end).
func runSim(t *testing.T, kubeconfig string, flags ...string) func() {
	t.Helper()
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"sim", "--kubeconfig", kubeconfig, "--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(ports[0])}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
