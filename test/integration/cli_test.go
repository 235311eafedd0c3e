package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/top"
	"github.com/berth-dev/berth/internal/why"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// berthCLI runs the berth binary on env's cluster, flags after the
// arguments, and returns its output (stdout and stderr) trimmed.
func berthCLI(t *testing.T, env *testenv.Env, flags ...string) func(args ...string) (string, error) {
	t.Helper()
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(append(args, "--kubeconfig", env.Kubeconfig), flags...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
}

// berth stop and resume set a queue's stopPolicy, which the controller acts
// on: a stopped ClusterQueue admits nothing new, a resumed one admits again.
func TestStopAndResumeQueues(t *testing.T) {
	env := testenv.New(t)
	berth := berthCLI(t, env)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	out, err := berth("stop", "clusterqueue", cq)
	if err != nil || !strings.Contains(out, "ClusterQueue "+cq+" stopped: it admits nothing new") {
		t.Fatalf("berth stop clusterqueue: %v\n%s", err, out)
	}
	env.Create(t, MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "w", "stopped")

	out, err = berth("stop", "lq", "main", "-n", env.Namespace, "--drain")
	if err != nil || !strings.Contains(out, "LocalQueue "+env.Namespace+"/main stopped and draining") {
		t.Fatalf("berth stop lq --drain: %v\n%s", err, out)
	}
	var lq berthv1.LocalQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "main"}, &lq); err != nil || lq.Spec.StopPolicy != berthv1.HoldAndDrain {
		t.Fatalf("LocalQueue stopPolicy %q (%v), want HoldAndDrain", lq.Spec.StopPolicy, err)
	}
	for _, args := range [][]string{{"resume", "localqueue", "main", "-n", env.Namespace}, {"resume", "cq", cq}} {
		if out, err := berth(args...); err != nil || !strings.Contains(out, "resumed: it admits again") {
			t.Fatalf("berth %v: %v\n%s", args, err, out)
		}
	}
	waitAdmitted(t, env, env.Namespace, "w")

	// Mistakes are named, and change nothing.
	for args, want := range map[string]string{
		"stop cq " + env.Name("missing"):            fmt.Sprintf("ClusterQueue %s not found", env.Name("missing")),
		"stop deployment " + env.Name("whatever"):   "stop and resume take clusterqueue (cq), localqueue (lq), workload (wl), job, jobset, statefulset (sts) or trainjob",
		"stop workload missing -n " + env.Namespace: "Workload " + env.Namespace + "/missing not found",
	} {
		out, err := berth(strings.Fields(args)...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("berth %s: %v\n%s\nwant an error saying %q", args, err, out, want)
		}
	}
}

// berth create makes a flavor, a ClusterQueue and a LocalQueue from flags
// that work together: a workload submitted to the LocalQueue is admitted.
// Bad flags are named, and create nothing.
func TestCreateQueues(t *testing.T) {
	env := testenv.New(t)
	berth := berthCLI(t, env)
	rf, cq := env.Name("rf"), env.Name("cq")
	for _, args := range [][]string{
		{"create", "resourceflavor", rf, "--node-labels", "example.com/pool=a"},
		{"create", "clusterqueue", cq, "--flavor", rf, "--quota", "cpu=4,memory=8Gi", "--cohort", env.Name("co"),
			"--borrowing-limit", "cpu=2", "--preemption", "LowerPriority", "--namespaces", "kubernetes.io/metadata.name=" + env.Namespace},
		{"create", "localqueue", "main", "-n", env.Namespace, "--clusterqueue", cq},
	} {
		if out, err := berth(args...); err != nil || !strings.HasSuffix(out, " created") {
			t.Fatalf("berth %v: %v\n%s", args, err, out)
		}
	}
	var got berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &got); err != nil {
		t.Fatal(err)
	}
	rq := got.Spec.ResourceGroups[0].Flavors[0].Resources[0]
	if got.Spec.Preemption == nil || got.Spec.Preemption.WithinClusterQueue != berthv1.PreemptionLowerPriority ||
		rq.Name != "cpu" || rq.NominalQuota.String() != "4" || rq.BorrowingLimit == nil || rq.BorrowingLimit.String() != "2" {
		t.Errorf("created ClusterQueue spec %+v", got.Spec)
	}
	env.Create(t, MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "3").Obj())
	waitAdmitted(t, env, env.Namespace, "w")

	for args, want := range map[string]string{
		"create cq " + env.Name("x") + " --quota cpu=ten":                       `--quota cpu="ten": not a quantity`,
		"create cq " + env.Name("x") + " --quota cpu=1 --lending-limit gpu=1":   "--lending-limit gpu: gpu has no --quota",
		"create cq " + env.Name("x") + " --quota cpu=1 --borrowing-limit cpu=1": "borrowingLimit is only allowed in a ClusterQueue with a cohort",
		"create lq other -n " + env.Namespace:                                   "--clusterqueue is required",
		"create rf " + env.Name("topo") + " --topology racks":                   "spec.topologyName: a flavor with a topology needs nodeLabels",
		"create cq " + cq + " --quota cpu=1":                                    "ClusterQueue " + cq + " already exists",
		"create workload " + env.Name("w"):                                      "create takes clusterqueue (cq), localqueue (lq) or resourceflavor (rf)",
	} {
		out, err := berth(strings.Fields(args)...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("berth %s: %v\n%s\nwant an error with %q", args, err, out, want)
		}
	}
	var cqs berthv1.ClusterQueueList
	if err := env.Client.List(ctx, &cqs); err != nil {
		t.Fatal(err)
	}
	for _, q := range cqs.Items {
		if q.Name == env.Name("x") {
			t.Errorf("a refused ClusterQueue was stored: %+v", q.Spec)
		}
	}
}

// Installed as kubectl-berth, berth is a kubectl plugin: its commands act
// on the cluster of the usual kubeconfig (here KUBECONFIG), as kubectl's do.
func TestKubectlPlugin(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(t.TempDir(), "kubectl-berth")
	if err := os.Symlink(bin, plugin); err != nil {
		t.Fatal(err)
	}
	rf := env.Name("rf")
	cmd := exec.Command(plugin, "create", "resourceflavor", rf)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ResourceFlavor "+rf+" created") {
		t.Fatalf("kubectl-berth create: %v\n%s", err, out)
	}
	var got berthv1.ResourceFlavor
	if err := env.Client.Get(ctx, client.ObjectKey{Name: rf}, &got); err != nil {
		t.Fatal(err)
	}
	help, _ := exec.Command(plugin, "--help").CombinedOutput()
	if !strings.Contains(string(help), "kubectl berth [command]") {
		t.Errorf("plugin help does not say kubectl berth:\n%s", help)
	}
}

// berth stop job deactivates the Job's Workload: it is evicted, the Job
// suspended, and it waits out of its queue, saying so, while the next Job
// takes the quota; berth resume queues it again.
func TestStopAndResumeAJob(t *testing.T) {
	env := testenv.New(t)
	berth := berthCLI(t, env)
	_, cq, _ := podQueue(t, env, "2")
	job := func(name string) *batchv1.Job {
		j := MakeJob(name, env.Namespace).Queue("main").Parallelism(1).Request("cpu", "2").
			Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "1h").Obj()
		env.Create(t, j)
		return j
	}
	first := job("first")
	firstWl := jobWorkload(t, env, first)
	waitAdmitted(t, env, env.Namespace, firstWl.Name)
	second := job("second")
	secondWl := jobWorkload(t, env, second)

	out, err := berth("stop", "job", "first", "-n", env.Namespace)
	if err != nil || !strings.Contains(out, "stopped: it gives its quota back") {
		t.Fatalf("berth stop job: %v\n%s", err, out)
	}
	waitPending(t, env, env.Namespace, firstWl.Name, "deactivated (spec.active is false)")
	waitAdmitted(t, env, env.Namespace, secondWl.Name)
	testenv.Eventually(t, wait, func() error {
		j, err := getJob(env, env.Namespace, "first")
		if err != nil {
			return err
		}
		if j.Spec.Suspend == nil || !*j.Spec.Suspend {
			return fmt.Errorf("the stopped Job is not suspended")
		}
		return nil
	})

	// Resumed, it queues behind the second, which holds the quota.
	if out, err := berth("resume", "workload", firstWl.Name, "-n", env.Namespace); err != nil || !strings.Contains(out, "resumed: it queues again") {
		t.Fatalf("berth resume workload: %v\n%s", err, out)
	}
	waitPending(t, env, env.Namespace, firstWl.Name, "needs 2 cpu")
	if out, err := berth("stop", "job", "second", "-n", env.Namespace); err != nil {
		t.Fatalf("berth stop job second: %v\n%s", err, out)
	}
	waitAdmitted(t, env, env.Namespace, firstWl.Name)
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if q.Status.PendingWorkloads != 0 || q.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("ClusterQueue counts %d pending, %d admitted; want the deactivated one out of the queue",
				q.Status.PendingWorkloads, q.Status.AdmittedWorkloads)
		}
		return nil
	})
}

// berth top shows a cohort with its queues, their workloads and usage, as
// the controller reports them: -o json for scripts, --once as a table.
func TestTop(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	berth := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(args, "--kubeconfig", env.Kubeconfig)...).Output()
		return string(out), err
	}
	rf, cohort, a, b := env.Name("rf"), env.Name("cohort"), env.Name("a"), env.Name("b")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(a).Cohort(cohort).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeClusterQueue(b).Cohort(cohort).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2", "", "0").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, a).Obj())
	// 3 cpu in a queue of 2, and b lends nothing (lendingLimit 0): one waits.
	for _, name := range []string{"w1", "w2", "w3"} {
		env.Create(t, MakeWorkload(name, env.Namespace).Queue("main").Request("cpu", "1").Obj())
	}
	var tree []top.Node
	testenv.Eventually(t, wait, func() error {
		out, err := berth("top", "-o", "json")
		if err != nil {
			return fmt.Errorf("berth top -o json: %v\n%s", err, out)
		}
		tree = nil
		if err := json.Unmarshal([]byte(out), &tree); err != nil {
			return fmt.Errorf("berth top -o json is not a tree: %v", err)
		}
		i := slices.IndexFunc(tree, func(n top.Node) bool { return n.Name == cohort })
		if i < 0 || len(tree[i].Children) != 2 {
			return fmt.Errorf("no cohort %s with 2 queues in %s", cohort, out)
		}
		co, qa := tree[i], tree[i].Children[0]
		if co.Kind != "Cohort" || qa.Name != a || qa.Admitted != 2 || qa.Pending != 1 ||
			len(qa.Resources) != 1 || qa.Resources[0].Used.String() != "2" || co.Resources[0].Nominal.String() != "4" {
			return fmt.Errorf("want queue %s with 2 admitted, 1 pending, 2 cpu used, in a cohort of 4 cpu: %+v", a, co)
		}
		return nil
	})
	out, err := berth("top", "--once")
	if err != nil || !strings.Contains(out, "cohort "+cohort) || !strings.Contains(out, "  "+a+" ") {
		t.Errorf("berth top --once: %v\n%s", err, out)
	}
	if out, err := berth("top", "-o", "xml"); err == nil {
		t.Errorf("berth top -o xml succeeded:\n%s", out)
	}
}

// Shell completion (the hidden __complete command the completion scripts
// call) offers the names of the cluster's objects: queues for stop, Jobs in
// the -n namespace, and check names for each item of --admission-checks.
func TestCompletion(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	complete := func(args ...string) []string {
		t.Helper()
		// The last argument is the word being completed: flags go first.
		out, err := exec.Command(bin, append([]string{"__complete", "--kubeconfig", env.Kubeconfig}, args...)...).Output()
		if err != nil {
			t.Fatalf("berth __complete %v: %v", args, err)
		}
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.HasPrefix(l, ":") {
				names = append(names, l)
			}
		}
		return names
	}
	cq, check := env.Name("cq"), env.Name("check")
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas("rf").Resource("cpu", "1").Obj()).Obj())
	makeCheck(t, env, check, true)
	env.Create(t, MakeJob("train", env.Namespace).Obj())

	if got := complete("stop", "cq", env.Namespace); !slices.Equal(got, []string{cq}) {
		t.Errorf("stop cq %s...: %v, want %s", env.Namespace, got, cq)
	}
	if got := complete("stop", "-n", env.Namespace, "job", ""); !slices.Equal(got, []string{"train"}) {
		t.Errorf("stop job -n %s: %v, want train", env.Namespace, got)
	}
	if got := complete("create", "cq", "x", "--admission-checks", "other,"+env.Namespace); !slices.Equal(got, []string{"other," + check}) {
		t.Errorf("--admission-checks other,%s...: %v, want other,%s", env.Namespace, got, check)
	}
}

// berth why tells a waiting workload its place in line, who is ahead, its
// queue's room, and what berth decides for it now, against the real
// controller's state; a Job is found by its name.
func TestWhy(t *testing.T) {
	env := testenv.New(t)
	berth := berthCLI(t, env, "-n", env.Namespace)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("holder", env.Namespace).Queue("main").Request("cpu", "2").Obj())
	waitAdmitted(t, env, env.Namespace, "holder")
	job := MakeJob("train", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, job)
	trainWl := jobWorkload(t, env, job)
	waitPending(t, env, env.Namespace, trainWl.Name, "needs 1 cpu")
	env.Create(t, MakeWorkload("later", env.Namespace).Queue("main").Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "later", "needs 1 cpu")

	out, err := berth("why", "job", "train")
	for _, want := range []string{"Workload " + env.Namespace + "/" + trainWl.Name + " (Job train)",
		"-> ClusterQueue " + cq, "position:  1 of 2 waiting", "quota:     " + rf + "/cpu: 2 used of 2, 0 available now",
		"right now: it waits: needs 1 cpu"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("berth why job train: missing %q (%v):\n%s", want, err, out)
		}
	}
	out, err = berth("why", "later", "-o", "json")
	var r why.Report
	if err != nil || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("berth why later -o json: %v\n%s", err, out)
	}
	if r.Position != 2 || len(r.Ahead) != 1 || !strings.HasPrefix(r.Ahead[0], env.Namespace+"/"+trainWl.Name) || r.State != "Pending" {
		t.Errorf("later: %+v; want 2nd, behind the Job's workload", r)
	}
	if out, err := berth("why", "nosuch"); err == nil || !strings.Contains(out, "Workload "+env.Namespace+"/nosuch not found") {
		t.Errorf("berth why nosuch: %v\n%s", err, out)
	}
}

// The positions berth why reports are the order berth admits in, for both
// queueing strategies, with priorities: the queue is held while four
// workloads arrive, then admits one at a time as each admitted one is
// deleted. why also names a stopped queue and a missing LocalQueue.
func TestWhyPositionsAreAdmissionOrder(t *testing.T) {
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, strategy := range []berthv1.QueueingStrategy{berthv1.StrictFIFO, berthv1.BestEffortFIFO} {
		t.Run(string(strategy), func(t *testing.T) {
			env := testenv.New(t)
			why := func(args ...string) (string, error) {
				out, err := exec.Command(bin, append(append([]string{"why"}, args...), "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)...).Output()
				return string(out), err
			}
			rf, cq := env.Name("rf"), env.Name("cq")
			env.Create(t, MakeResourceFlavor(rf).Obj())
			env.Create(t, MakeClusterQueue(cq).Strategy(strategy).StopPolicy(berthv1.Hold).
				ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
			env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
			priorities := map[string]int32{"a": 0, "b": 10, "c": 10, "d": 5}
			for _, name := range []string{"a", "b", "c", "d"} {
				env.Create(t, MakeWorkload(name, env.Namespace).Queue("main").Priority(priorities[name]).Request("cpu", "1").Obj())
			}
			out, err := why("a")
			if err != nil || !strings.Contains(out, "ClusterQueue "+cq+" is inactive: stopped by its stopPolicy") {
				t.Errorf("why a, queue held: %v\n%s", err, out)
			}
			order := make([]string, 4)
			for name := range priorities {
				out, err := why(name, "-o", "json")
				var r whyReport
				if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Position < 1 || r.Position > 4 || order[r.Position-1] != "" {
					t.Fatalf("why %s: %v\n%s", name, err, out)
				}
				order[r.Position-1] = name
			}
			if err := env.Client.Patch(ctx, MakeClusterQueue(cq).Obj(), client.RawPatch(types.MergePatchType,
				[]byte(`{"spec":{"stopPolicy":"None"}}`))); err != nil {
				t.Fatal(err)
			}
			var admitted []string
			for range order {
				var next string
				testenv.Eventually(t, wait, func() error {
					var list berthv1.WorkloadList
					if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
						return err
					}
					for _, w := range list.Items {
						if workload.IsAdmitted(&w) {
							next = w.Name
							return nil
						}
					}
					return fmt.Errorf("none of %d admitted yet", len(list.Items))
				})
				admitted = append(admitted, next)
				if err := env.Client.Delete(ctx, &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: next, Namespace: env.Namespace}}); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(admitted, order) {
				t.Errorf("admitted in order %v; why said %v", admitted, order)
			}
			env.Create(t, MakeWorkload("lost", env.Namespace).Queue("nosuch").Request("cpu", "1").Obj())
			if out, err := why("lost"); err != nil || !strings.Contains(out, "LocalQueue "+env.Namespace+"/nosuch does not exist") {
				t.Errorf("why lost: %v\n%s", err, out)
			}
		})
	}
}

type whyReport = why.Report

// berth pending lists a queue's line from the visibility API: positions,
// the LocalQueue's own count, and why each waits.
func TestPending(t *testing.T) {
	env := testenv.New(t)
	berth := berthCLI(t, env, "-n", env.Namespace)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("a", env.Namespace, cq).Obj())
	env.Create(t, MakeLocalQueue("b", env.Namespace, cq).Obj())
	env.Create(t, MakeWorkload("holder", env.Namespace).Queue("a").Request("cpu", "2").Obj())
	waitAdmitted(t, env, env.Namespace, "holder")
	env.Create(t, MakeWorkload("low", env.Namespace).Queue("a").Request("cpu", "1").Obj())
	env.Create(t, MakeWorkload("high", env.Namespace).Queue("b").Priority(9).Request("cpu", "1").Obj())
	waitPending(t, env, env.Namespace, "low", "needs 1 cpu")
	waitPending(t, env, env.Namespace, "high", "needs 1 cpu")

	out, err := berth("pending", "cq", cq)
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[0] != "POSITION" && f[0] != "ClusterQueue" {
			rows = append(rows, strings.Join(f, " "))
		}
	}
	want := []string{
		"1 1 " + env.Namespace + "/high b 9 needs 1 cpu in flavor " + rf + ", 0 free",
		"2 1 " + env.Namespace + "/low a 0 needs 1 cpu in flavor " + rf + ", 0 free",
	}
	if err != nil || !slices.Equal(rows, want) || !strings.Contains(out, "ClusterQueue "+cq+": 1-2 of 2 waiting") {
		t.Errorf("berth pending cq: %v\n%s\nwant rows %q", err, out, want)
	}
	out, err = berth("pending", "lq", "a", "-o", "json")
	var s struct {
		Total int32
		Items []struct {
			Metadata                                     metav1.ObjectMeta
			PositionInClusterQueue, PositionInLocalQueue int32
		}
	}
	if err != nil || json.Unmarshal([]byte(out), &s) != nil || s.Total != 1 || s.Items[0].Metadata.Name != "low" ||
		s.Items[0].PositionInClusterQueue != 2 || s.Items[0].PositionInLocalQueue != 1 {
		t.Errorf("berth pending lq a -o json: %v\n%s", err, out)
	}
	if out, err := berth("pending", "cq", cq, "--offset", "5"); err != nil || !strings.Contains(out, "2 waiting, none from position 6 on") {
		t.Errorf("berth pending past the end: %v\n%s", err, out)
	}
	for args, says := range map[string]string{
		"pending cq nosuch":      "ClusterQueue nosuch not found",
		"pending lq nosuch":      "LocalQueue " + env.Namespace + "/nosuch not found",
		"pending job x":          `"job": pending takes clusterqueue (cq) or localqueue (lq)`,
		"pending cq x --limit 0": "the limit from 1 to 10000",
	} {
		if out, err := berth(strings.Fields(args)...); err == nil || !strings.Contains(out, says) {
			t.Errorf("berth %s: %v, want an error saying %q:\n%s", args, err, says, out)
		}
	}
}
