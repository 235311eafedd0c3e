package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/helmchart"
	"github.com/berth-dev/berth/internal/realnode"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/version"
	. "github.com/berth-dev/berth/test/fixtures"
)

// berthImage builds berth's image for this machine's platform as make
// image does (hack/image), into an archive naming it
// berth.dev/berth:<version>; "" when the build failed (the failure is
// reported).
func berthImage(t *testing.T) string {
	archive := filepath.Join(t.TempDir(), "berth.tar")
	cmd := exec.Command("go", "run", "./hack/image", "--platforms", "linux/"+runtime.GOARCH, "--output", archive)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("building berth's image (go run ./hack/image): %v\n%s", err, out)
		return ""
	}
	return archive
}

// installedFromImage: berth installed from its image and Helm chart on a
// one-machine cluster with a real node, upgraded, switched to cert-manager
// and back, and uninstalled; TestRealNode says what each step proves.
func installedFromImage(t *testing.T, tools realnode.Tools, hello, berth string, cm certManager) {
	if berth == "" {
		t.Fatal("no image of berth to install")
	}
	// The chart as make chart packages it: stamped with the version the
	// image was built as, which its image tag defaults to.
	built, ok, err := version.FromGit("../..")
	if err != nil || !ok {
		t.Fatalf("berth's version from git: %v (in a work tree: %v)", err, ok)
	}
	archive, err := helmchart.Package("../../"+helmchart.Dir, t.TempDir(), built.Version)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helmchart.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	inst := newInstance(t, "installed")
	kubeconfig := inst.up(t, "--nodes", "0", "--real-node", "--no-controller")
	node := realnode.LayoutOf(controlplane.Layout{Dir: inst.dir})
	downChecked := false
	t.Cleanup(func() {
		if !downChecked {
			_, _ = inst.run(t, "down")
		}
	})
	for _, archive := range []string{berth, hello} {
		if out, code := inst.run(t, "image", "load", archive); code != 0 {
			t.Fatalf("berth image load %s: exit %d\n%s", archive, code, out)
		}
	}
	kubectl := func(stdin string, args ...string) string {
		cmd := exec.Command(inst.bin, append([]string{"kubectl", "--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	c := clientOf(t, kubeconfig)
	ctx := context.Background()
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := c.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		if strings.HasSuffix(crd.Name, "."+berthv1.GroupVersion.Group) {
			t.Fatalf("an instance with --no-controller has berth's CRD %s: the chart is to install it", crd.Name)
		}
	}

	const ns = "berth-system"
	helm := helmConfig(t, kubeconfig, ns)
	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace, install.CreateNamespace = helmchart.ReleaseName, ns, true
	// A virtual cluster without storage: this cluster has no provisioner.
	if _, err := install.RunWithContext(ctx, ch, map[string]any{
		"image":     map[string]any{"repository": "berth.dev/berth"},
		"vclusters": []any{map[string]any{"name": "e2e", "storage": ""}},
		// It asks for no cpu: the controllers, the virtual cluster and the
		// Jobs below fill the node's 2 cpu exactly.
		"dashboard": map[string]any{"enabled": true, "resources": map[string]any{"requests": map[string]any{"cpu": "0"}}},
	}); err != nil {
		t.Fatalf("helm install: %v", err)
	}

	// What a failure needs explained: the controller's pods, their logs and
	// the certificate's state.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"-n", ns, "get", "pods,certificates,certificaterequests,secrets", "-o", "wide"},
			{"-n", ns, "describe", "pods"},
			{"-n", ns, "logs", "-l", "app.kubernetes.io/name=berth-controller", "--tail", "30", "--prefix"},
			{"-n", ns, "describe", "certificates"},
		} {
			out, _ := exec.Command(inst.bin, append([]string{"kubectl", "--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
			t.Logf("kubectl %s:\n%s", strings.Join(args, " "), tail(string(out), 80))
		}
	})
	leader := func() (string, error) {
		var lease coordinationv1.Lease
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "berth-controller"}, &lease); err != nil {
			return "", err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return "", fmt.Errorf("no replica leads")
		}
		return strings.SplitN(*lease.Spec.HolderIdentity, "_", 2)[0], nil // the pod's name
	}
	var first string
	testenv.Eventually(t, 3*time.Minute, func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "berth-controller"}, &d); err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 2 {
			return fmt.Errorf("%d of 2 replicas Ready", d.Status.ReadyReplicas)
		}
		var err error
		first, err = leader()
		return err
	})
	// The build that runs is the one the chart names.
	var leaderPod corev1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: first}, &leaderPod); err != nil {
		t.Fatal(err)
	}
	if img, want := leaderPod.Spec.Containers[0].Image, "berth.dev/berth:"+strings.ReplaceAll(ch.Metadata.AppVersion, "+", "-"); img != want || ch.Metadata.AppVersion != built.Version {
		t.Errorf("the chart (appVersion %s) runs %s; want %s, of berth %s", ch.Metadata.AppVersion, img, want, built.Version)
	}
	logs := kubectl("", "-n", ns, "logs", first)
	if line, _, _ := strings.Cut(logs, "\n"); !strings.Contains(line, "berth controller starting") || !strings.Contains(line, `"version":"`+built.Version+`"`) {
		t.Errorf("the controller's first log line: %s; want it starting as berth %s", line, built.Version)
	}

	team := "team"
	realQueue(t, c, team)
	succeeds := func(job *batchv1.Job, within time.Duration) {
		t.Helper()
		testenv.Eventually(t, within, func() error {
			var j batchv1.Job
			if err := c.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
				return err
			}
			if j.Status.Succeeded != 1 {
				return fmt.Errorf("Job %s: %d succeeded, %d failed, %d active", j.Name, j.Status.Succeeded, j.Status.Failed, j.Status.Active)
			}
			return nil
		})
		if out := kubectl("", "-n", team, "logs", "job/"+job.Name); !strings.Contains(out, "hello from a real container: "+job.Name) {
			t.Errorf("kubectl logs job/%s: %q", job.Name, out)
		}
	}
	// The webhook is reached through its Service once kube-proxy has
	// programmed it, a moment after the replicas are Ready; until then, and
	// while a replica goes, the API server refuses queued Jobs (the webhook
	// fails closed) and the client submits again.
	create := func(job *batchv1.Job) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() error {
			err := c.Create(ctx, job)
			if err != nil && !strings.Contains(err.Error(), "failed calling webhook") {
				t.Fatalf("creating Job %s: %v", job.Name, err)
			}
			return err
		})
	}
	// The first runs a few seconds on the queue's whole quota (1 cpu); one
	// submitted meanwhile waits, tried and found not to fit, then runs.
	before, waits := helloJob("before", team, "15"), helloJob("waits", team, "0")
	create(before)
	testenv.Eventually(t, 2*time.Minute, func() error { return running(ctx, c, team, before.Name) })
	create(waits)
	testenv.Eventually(t, 30*time.Second, func() error {
		wl, err := workloadOf(ctx, c, waits)
		if err != nil {
			return err
		}
		if wl.Status.Admission != nil {
			if running(ctx, c, team, before.Name) == nil {
				t.Fatalf("Job %s was admitted while Job %s held the quota", waits.Name, before.Name)
			}
			return fmt.Errorf("Job %s was admitted before it was seen waiting", waits.Name)
		}
		if cond := apimeta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved); cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("Workload %s not yet found not to fit: %v", wl.Name, wl.Status.Conditions)
		}
		return nil
	})
	succeeds(before, 2*time.Minute)
	succeeds(waits, 2*time.Minute)

	// The chart's dashboard, through kubectl port-forward, as its docs say:
	// the queue, and a workload's pods, which its ServiceAccount may read.
	wl, err := workloadOf(ctx, c, waits)
	if err != nil {
		t.Fatal(err)
	}
	dash := portForward(t, inst.bin, kubeconfig, ns, "deploy/berth-dashboard", 8080)
	// It asks for the token in the URL it printed, read with kubectl logs as
	// its docs say: the forwarded port is open to every user of this machine.
	token := ""
	testenv.Eventually(t, time.Minute, func() error {
		out, err := exec.Command(inst.bin, "kubectl", "--kubeconfig", kubeconfig, "-n", ns, "logs", "deploy/berth-dashboard").Output()
		if err != nil {
			return fmt.Errorf("kubectl logs deploy/berth-dashboard: %w", err)
		}
		m := regexp.MustCompile(`\?token=([0-9a-f]+)`).FindSubmatch(out)
		if m == nil {
			return fmt.Errorf("no URL with a token in the dashboard's log:\n%s", out)
		}
		token = string(m[1])
		return nil
	})
	if err := testenv.GetJSON(dash+"api/tree", &dashboard.Tree{}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("the chart's dashboard without its token: %v; want 401 Unauthorized", err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		var tree dashboard.Tree
		if err := testenv.GetJSON(dash+"api/tree?token="+token, &tree); err != nil {
			return err
		}
		if !strings.Contains(fmt.Sprintf("%+v", tree), "Name:real") {
			return fmt.Errorf("the dashboard's tree has no ClusterQueue real: %+v", tree)
		}
		var d dashboard.Detail
		if err := testenv.GetJSON(dash+"api/workload?namespace="+team+"&name="+wl.Name+"&token="+token, &d); err != nil {
			return err
		}
		if len(d.Pods) == 0 || d.Pods[0].Phase != string(corev1.PodSucceeded) {
			return fmt.Errorf("the dashboard shows Workload %s with pods %+v; want its Job's pod, Succeeded", wl.Name, d.Pods)
		}
		return nil
	})

	// The leader's pod goes: the other replica leads, and admits a Job
	// submitted meanwhile.
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first}}); err != nil {
		t.Fatalf("deleting the leader's pod %s: %v", first, err)
	}
	meanwhile := helloJob("meanwhile", team, "0")
	create(meanwhile)
	deleted := time.Now()
	testenv.Eventually(t, 30*time.Second, func() error {
		now, err := leader()
		if err != nil {
			return err
		}
		if now == first {
			return fmt.Errorf("%s still leads", first)
		}
		return nil
	})
	t.Logf("another replica leads %.1fs after the leader's pod was deleted", time.Since(deleted).Seconds())
	succeeds(meanwhile, 2*time.Minute)

	// The chart's virtual cluster: its control plane comes up in its Pod.
	testenv.Eventually(t, 3*time.Minute, func() error {
		out, err := exec.Command(inst.bin, "kubectl", "--kubeconfig", kubeconfig, "-n", "vcluster-e2e", "logs", "deploy/berth-vcluster-e2e").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "virtual cluster e2e is up") {
			return fmt.Errorf("virtual cluster e2e not up yet (%v): %s", err, tail(string(out), 5))
		}
		return nil
	})

	// helm upgrade to another image, with cert-manager now issuing the
	// webhooks' certificate, while 50 Jobs wait (their queue held): once it
	// has rolled out and the queue is released, each runs once.
	const waiting = 50
	burst := MakeClusterQueue("burst").StopPolicy(berthv1.Hold).
		ResourceGroup(MakeFlavorQuotas("real").Resource("cpu", "1").Obj()).Obj()
	if err := c.Create(ctx, burst); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, MakeLocalQueue("burst", team, "burst").Obj()); err != nil {
		t.Fatal(err)
	}
	var burstJobs []*batchv1.Job
	for i := range waiting {
		job := helloJob(fmt.Sprintf("burst-%d", i), team, "0")
		job.Labels[berthv1.QueueNameLabel] = "burst"
		job.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("10m")
		create(job)
		burstJobs = append(burstJobs, job)
	}
	testenv.Eventually(t, time.Minute, func() error {
		var cq berthv1.ClusterQueue
		if err := c.Get(ctx, client.ObjectKeyFromObject(burst), &cq); err != nil {
			return err
		}
		if cq.Status.PendingWorkloads != waiting {
			return fmt.Errorf("%d of %d Workloads pending", cq.Status.PendingWorkloads, waiting)
		}
		return nil
	})
	if out, err := exec.Command(tools.Ctr, "--address", node.Socket(), "--namespace", realnode.Namespace,
		"images", "tag", leaderPod.Spec.Containers[0].Image, "berth.dev/berth:e2e-upgraded").CombinedOutput(); err != nil {
		t.Fatalf("ctr images tag: %v\n%s", err, out)
	}
	cm.start(t, kubectl, kubeconfig)
	helm = helmConfig(t, kubeconfig, ns) // anew, as the helm command would be: it learns cert-manager's kinds
	upgrade := action.NewUpgrade(helm)
	upgrade.Namespace, upgrade.ReuseValues = ns, true
	if _, err := upgrade.RunWithContext(ctx, helmchart.ReleaseName, ch, map[string]any{"image": map[string]any{"tag": "e2e-upgraded"},
		"certManager": map[string]any{"enabled": true}}); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	// Both replicas replaced by pods that are as done says, one leading.
	rolledOut := func(what string, done func(corev1.Pod) bool) {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, func() error {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "berth-controller"}); err != nil {
				return err
			}
			upgraded := map[string]bool{}
			for _, p := range pods.Items {
				ready := false
				for _, cond := range p.Status.Conditions {
					ready = ready || cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue
				}
				if p.DeletionTimestamp == nil && ready && done(p) {
					upgraded[p.Name] = true
				}
			}
			if len(pods.Items) != 2 || len(upgraded) != 2 {
				return fmt.Errorf("%d pods, %d of them Ready with %s", len(pods.Items), len(upgraded), what)
			}
			now, err := leader()
			if err != nil || !upgraded[now] {
				return fmt.Errorf("leader %q (%v): not one of the pods with %s %v", now, err, what, upgraded)
			}
			return nil
		})
	}
	rolledOut("the new image", func(p corev1.Pod) bool { return p.Spec.Containers[0].Image == "berth.dev/berth:e2e-upgraded" })
	pending := func(queue string) func() (string, error) {
		return func() (string, error) {
			out, err := exec.Command(inst.bin, "kubectl", "--kubeconfig", kubeconfig, "get", "--raw",
				"/apis/visibility.berth.dev/v1beta1/clusterqueues/"+queue+"/pendingworkloads").CombinedOutput()
			return string(out), err
		}
	}
	certManagersServed(t, c, ns, pending("burst"))
	// The webhook answers with cert-manager's certificate: a queued Job is
	// held (the webhooks fail closed, so it could not be created otherwise).
	after := helloJob(fmt.Sprintf("burst-%d", waiting), team, "0")
	after.Labels[berthv1.QueueNameLabel] = "burst"
	after.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("10m")
	create(after)
	burstJobs = append(burstJobs, after)
	if after.Spec.Suspend == nil || !*after.Spec.Suspend {
		t.Errorf("Job %s created after the upgrade was not held by the webhook", after.Name)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(burst), burst); err != nil {
		t.Fatal(err)
	}
	burst.Spec.StopPolicy = berthv1.StopPolicyNone
	if err := c.Update(ctx, burst); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 4*time.Minute, func() error {
		done := 0
		for _, job := range burstJobs {
			var j batchv1.Job
			if err := c.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
				return err
			}
			if j.Status.Succeeded == 1 {
				done++
			}
		}
		if done != len(burstJobs) {
			return fmt.Errorf("%d of %d Jobs succeeded", done, len(burstJobs))
		}
		return nil
	})
	for _, job := range burstJobs {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(team), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
			t.Fatal(err)
		}
		wl, err := workloadOf(ctx, c, job)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 || hasCondition(wl, berthv1.WorkloadEvicted) {
			t.Errorf("Job %s: %d pods, Workload conditions %v; want one pod, admitted once", job.Name, len(pods.Items), wl.Status.Conditions)
		}
	}

	// And back to berth's own certificate: berth makes a new CA, trusted
	// beside cert-manager's certificate while the replicas roll; the
	// webhooks and the visibility API answer with it.
	upgrade = action.NewUpgrade(helm)
	upgrade.Namespace, upgrade.ReuseValues = ns, true
	if _, err := upgrade.RunWithContext(ctx, helmchart.ReleaseName, ch, map[string]any{"certManager": map[string]any{"enabled": false}}); err != nil {
		t.Fatalf("helm upgrade back to berth's own certificate: %v", err)
	}
	rolledOut("berth's own certificate", func(p corev1.Pod) bool {
		return !slices.Contains(p.Spec.Containers[0].Args, "--webhook-cert-provided")
	})
	back := helloJob("back", team, "0")
	create(back)
	if back.Spec.Suspend == nil || !*back.Spec.Suspend {
		t.Errorf("Job %s created after the switch back was not held by the webhook", back.Name)
	}
	succeeds(back, 2*time.Minute)
	testenv.Eventually(t, time.Minute, func() error {
		out, err := pending("real")()
		if err != nil || !strings.Contains(out, `"items"`) {
			return fmt.Errorf("the visibility API through the API server: %v: %s", err, tail(out, 3))
		}
		return nil
	})

	// helm uninstall: nothing of berth's is left but its CRDs (and what
	// users made of them, and the namespace Helm was asked to create).
	if _, err := action.NewUninstall(helm).Run(helmchart.ReleaseName); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	testenv.Eventually(t, 2*time.Minute, func() error {
		left, err := berthObjects(ctx, kubeconfig, ns)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("left after helm uninstall: %v", left)
		}
		return nil
	})

	inst.down(t)
	downChecked = true
	if left := realnode.Leftovers(node, tools); len(left) > 0 {
		t.Errorf("berth down left on the machine: %v", left)
	}
}

// served: an APIService that a Service answers (an aggregated API), not
// the API server's own.
func served(apiService unstructured.Unstructured) bool {
	svc, found, _ := unstructured.NestedMap(apiService.Object, "spec", "service")
	return found && svc != nil
}

// helmConfig is Helm's client of the cluster of kubeconfig, for releases
// in namespace.
func helmConfig(t *testing.T, kubeconfig, namespace string) *action.Configuration {
	t.Helper()
	cfg := new(action.Configuration)
	if err := cfg.Init(kube.GetConfig(kubeconfig, "", namespace), namespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// berthObjects lists every object of berth's in the cluster of kubeconfig,
// of every kind the API server serves, but its CRDs and the objects of
// their kinds (users' queues and workloads): any named berth-* (but the
// instance's own: its simulator's, its API server's kubelet access, its
// real node),
// any in namespace (but what every namespace has) or in a virtual
// cluster's namespace, and any of berth.dev's APIServices that a Service
// answers (the API server's own, for the CRDs' group, stays with them).
func berthObjects(ctx context.Context, kubeconfig, namespace string) ([]string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.WarningHandler = rest.NoWarnings{} // listing every kind lists deprecated ones too
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err) // an APIService left unanswered shows here too
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		if gv.Group == berthv1.GroupVersion.Group || gv.Group == "events.k8s.io" || gv.Group == "kwok.x-k8s.io" {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || r.Name == "events" {
				continue
			}
			objs, err := dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for _, o := range objs.Items {
				name, ns := o.GetName(), o.GetNamespace()
				// The instance's own: its simulator's, its API server's
				// access to the kubelet, and the real node.
				instances := strings.HasPrefix(name, "berth-sim") || name == "berth-apiserver-kubelet-client" || name == realnode.NodeName
				mine := strings.HasPrefix(name, "berth") && !instances && r.Name != "customresourcedefinitions" ||
					strings.HasPrefix(ns, "vcluster-") || strings.HasPrefix(name, "vcluster-") ||
					(ns == namespace && !(r.Name == "serviceaccounts" && name == "default") && !(r.Name == "configmaps" && name == "kube-root-ca.crt")) ||
					(r.Name == "apiservices" && strings.HasSuffix(name, "."+berthv1.GroupVersion.Group) && served(o))
				if r.Name == "namespaces" && name == namespace {
					mine = false // made by helm install --create-namespace, which uninstall leaves
				}
				if mine {
					left = append(left, fmt.Sprintf("%s %s", r.Name, path.Join(ns, name)))
				}
			}
		}
	}
	return left, nil
}
