package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/audit"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// startAuditor audits this test's namespace and ClusterQueues until the
// test ends.
func startAuditor(t *testing.T, env *testenv.Env) *audit.Auditor {
	t.Helper()
	actx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	a, err := audit.Start(actx, env.Config, 100*time.Millisecond,
		audit.Scope{Namespace: env.Namespace, ClusterQueuePrefix: env.Namespace + "-"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Jobs that preempt each other in a queue of 4 cpu, audited throughout:
// no promise is broken while they run, and everything settles.
func TestAuditedPreemption(t *testing.T) {
	env := testenv.New(t)
	a := startAuditor(t, env)
	_, cqName, _ := podQueue(t, env, "4")
	high := preemptLowerPriority(t, env, cqName)
	job := func(name, cpu, duration string, labels ...string) {
		w := MakeJob(name, env.Namespace).Queue("main").Parallelism(1).Request("cpu", cpu).
			Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", duration)
		for i := 0; i+1 < len(labels); i += 2 {
			w.Label(labels[i], labels[i+1])
		}
		env.Create(t, w.Obj())
	}
	for i := range 4 {
		job(fmt.Sprintf("low-%d", i), "1", "3s")
	}
	for i := range 2 {
		job(fmt.Sprintf("high-%d", i), "2", "2s", berthv1.PriorityClassLabel, high)
	}
	testenv.Eventually(t, time.Minute, func() error {
		var wls berthv1.WorkloadList
		if err := env.Client.List(ctx, &wls, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		done := 0
		for i := range wls.Items {
			if workload.IsFinished(&wls.Items[i]) {
				done++
			}
		}
		if done != 6 {
			return fmt.Errorf("%d of 6 workloads finished", done)
		}
		return nil
	})
	if vs := a.Violations(); len(vs) > 0 {
		t.Errorf("violations while running: %v", vs)
	}
	testenv.Eventually(t, wait, func() error {
		vs, err := a.Settle(ctx, false)
		if err != nil {
			return err
		}
		if len(vs) > 0 {
			return fmt.Errorf("not settled: %v", vs)
		}
		return nil
	})
}

// The auditor is no rubber stamp: an admission written past quota (as a
// faulty controller would write it) is reported, naming the ClusterQueue and
// the workload.
func TestAuditorReportsOverAdmission(t *testing.T) {
	env := testenv.New(t)
	a := startAuditor(t, env)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).
		StopPolicy(berthv1.Hold).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	wl := MakeWorkload("greedy", env.Namespace).Queue("main").Request("cpu", "3").Obj()
	env.Create(t, wl)
	orig := wl.DeepCopy()
	workload.SetAdmitted(wl, &berthv1.Admission{ClusterQueue: cq, PodSetAssignments: []berthv1.PodSetAssignment{{
		Name: wl.Spec.PodSets[0].Name, Count: 1, Flavors: map[corev1.ResourceName]string{"cpu": rf},
		ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse("3")}}}}, nil, time.Now())
	if err := env.Client.Status().Patch(ctx, wl, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		for _, v := range a.Violations() {
			if v.Rule == audit.OverQuota && strings.Contains(strings.Join(v.Objects, " "), "ClusterQueue "+cq) &&
				strings.Contains(strings.Join(v.Objects, " "), env.Namespace+"/greedy") {
				return nil
			}
		}
		return fmt.Errorf("no OverQuota violation for %s among %v", cq, a.Violations())
	})
}

// The auditor judges Pods from themselves, not only Jobs: a Pod that runs
// while the Workload standing for it is not admitted is reported, by name.
// (berth itself stops a queued Pod that runs unadmitted; here the Workload
// is made by hand for a Pod berth does not queue, so nothing stops it.)
func TestAuditorReportsAPodRunningWithoutQuota(t *testing.T) {
	env := testenv.New(t)
	a := startAuditor(t, env)
	_, _, node := podQueue(t, env, "1")
	pod := plainPod("unadmitted", env.Namespace, "2", "10m", nil)
	pod.Spec.NodeName = node.Name
	pod.Spec.Tolerations = []corev1.Toleration{env.Toleration()}
	env.Create(t, pod)
	wl := MakeWorkload("for-unadmitted", env.Namespace).Queue("main").Request("cpu", "2").Obj()
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
	env.Create(t, wl)
	testenv.Eventually(t, wait, func() error {
		for _, v := range a.Violations() {
			if v.Rule == audit.RunsWithoutQuota && slices.Contains(v.Objects, "Pod "+env.Namespace+"/unadmitted") {
				return nil
			}
		}
		return fmt.Errorf("no RunsWithoutQuota for Pod unadmitted among %v", a.Violations())
	})
}
