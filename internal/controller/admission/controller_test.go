package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/scheduler"
	"github.com/berth-dev/berth/internal/workload"
)

// These tests drive the controller's write paths against a fake client whose
// calls fail on demand: what they check is how the controller reacts to a
// failed read or write, which a real API server cannot be made to do at will.

const ns = "ns"

var errServer = apierrors.NewInternalError(errors.New("injected failure"))

// failures makes calls fail: per workload name, how many more Gets and
// status patches fail, and counts the patch attempts.
type failures struct {
	mu       sync.Mutex
	gets     map[string]int
	patches  map[string]int // -1: always
	conflict map[string]bool
	attempts map[string]int
}

func newFailures() *failures {
	return &failures{gets: map[string]int{}, patches: map[string]int{}, conflict: map[string]bool{}, attempts: map[string]int{}}
}

func (f *failures) take(m map[string]int, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch n := m[name]; {
	case n < 0:
		return true
	case n > 0:
		m[name] = n - 1
		return true
	}
	return false
}

func (f *failures) attemptsOf(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[name]
}

func (f *failures) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*berthv1.Workload); ok && f.take(f.gets, key.Name) {
				return errServer
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			name := obj.GetName()
			f.mu.Lock()
			f.attempts[name]++
			conflict := f.conflict[name]
			f.mu.Unlock()
			if conflict {
				return apierrors.NewConflict(schema.GroupResource{Group: "berth.dev", Resource: "workloads"}, name, errors.New("injected conflict"))
			}
			if f.take(f.patches, name) {
				return errServer
			}
			return c.Status().Patch(ctx, obj, patch)
		},
	}
}

// logSink collects error log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logSink) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

type fixture struct {
	c     *Controller
	cl    client.Client
	fail  *failures
	sched *scheduler.Scheduler
	log   *logSink
}

// newFixture returns a controller on a scheduler with ClusterQueue "cq"
// (4 cpu, preemption of lower priorities within it) and LocalQueue ns/lq.
func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := berthv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := &fixture{fail: newFailures(), log: &logSink{}}
	base := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&berthv1.Workload{}).WithObjects(objs...).Build()
	f.cl = interceptor.NewClient(base, f.fail.funcs())
	f.sched = scheduler.New(clock.RealClock{})
	f.sched.SetFlavor(MakeFlavor("rf").Obj())
	cq := MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("rf").Resource("cpu", "4").Obj()).
		Preemption(core.PreemptLowerPriority, core.PreemptNever).Obj()
	f.sched.SetClusterQueue(cq)
	f.sched.SetLocalQueue(queue.LocalQueue{Key: ns + "/lq", ClusterQueue: "cq"})
	f.c = newController(f.cl, f.sched, events.NewFakeRecorder(100), f.log.logger(), Options{
		Evictors: 4, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, VictimAttempts: 3,
	})
	return f
}

// run starts the eviction workers until the test ends.
func (f *fixture) runEvictors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range []func(context.Context) error{f.c.stopEvictions} {
		wg.Go(func() { _ = r(ctx) })
	}
	for range f.c.opts.Evictors {
		wg.Go(func() { _ = f.c.evictLoop(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func (f *fixture) get(t *testing.T, name string) *berthv1.Workload {
	t.Helper()
	var wl berthv1.Workload
	if err := f.cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &wl); err != nil {
		t.Fatal(err)
	}
	return &wl
}

// apiWorkload is a Workload of one pod of cpu in ns/lq, holding quota in cq
// when admittedIn is set.
func apiWorkload(name, cpu string, priority int32, admittedIn string) *berthv1.Workload {
	wl := &berthv1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.Now()},
		Spec: berthv1.WorkloadSpec{QueueName: "lq", Priority: &priority, PodSets: []berthv1.PodSet{{
			Name: "main", Count: 1, Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu)},
		}}},
	}
	if admittedIn != "" {
		workload.SetAdmitted(wl, &berthv1.Admission{ClusterQueue: admittedIn, PodSetAssignments: []berthv1.PodSetAssignment{{
			Name: "main", Count: 1, Flavors: map[corev1.ResourceName]string{"cpu": "rf"},
			ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse(cpu)},
		}}}, nil, time.Now())
	}
	return wl
}

func eventually(t *testing.T, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func evicted(f *fixture, t *testing.T, name string) func() error {
	return func() error {
		if wl := f.get(t, name); workload.HasQuota(wl) {
			return fmt.Errorf("workload %s still holds quota", name)
		}
		return nil
	}
}

// An eviction whose write fails is written later: a drained or deleted
// ClusterQueue's workloads are not left holding quota until a restart.
func TestFailedEvictionIsRetried(t *testing.T) {
	f := newFixture(t, apiWorkload("w", "1", 0, "gone"))
	f.fail.patches["w"] = 2
	f.runEvictors(t)
	f.c.Evict([]string{ns + "/w"}, "ClusterQueueDeleted", "ClusterQueue gone was deleted")
	eventually(t, evicted(f, t, "w"))
	if got := f.fail.attemptsOf("w"); got != 3 {
		t.Errorf("%d write attempts, want 3 (two failures, then success)", got)
	}
	if !f.log.contains("evicting; will retry") {
		t.Errorf("the failures were not logged: %q", f.log.lines)
	}
}

// A workload whose eviction keeps conflicting does not hold up the others.
func TestAConflictingEvictionHoldsUpNoOther(t *testing.T) {
	f := newFixture(t, apiWorkload("stuck", "1", 0, "gone"), apiWorkload("free", "1", 0, "gone"))
	f.fail.conflict["stuck"] = true
	f.runEvictors(t)
	f.c.Evict([]string{ns + "/stuck", ns + "/free"}, "ClusterQueueDeleted", "ClusterQueue gone was deleted")
	eventually(t, evicted(f, t, "free"))
	// The retries with backoff go on meanwhile, and stop once it is written.
	eventually(t, func() error {
		if n := f.fail.attemptsOf("stuck"); n < 3 {
			return fmt.Errorf("the conflicting eviction was tried %d times, want retries", n)
		}
		return nil
	})
	f.fail.mu.Lock()
	f.fail.conflict["stuck"] = false
	f.fail.mu.Unlock()
	eventually(t, evicted(f, t, "stuck"))
}

// A preemption victim whose eviction cannot be written stops blocking its
// preemptor: after VictimAttempts the scheduler no longer counts on the
// victim's quota, and the preemptor chooses again.
func TestAnUnevictableVictimStopsBlocking(t *testing.T) {
	low := apiWorkload("low", "4", 0, "cq")
	f := newFixture(t, low)
	f.sched.WorkloadAdmitted(workload.AdmittedOf(low), ns+"/lq")
	high := apiWorkload("high", "4", 100, "")
	f.sched.WorkloadPending(workload.ToCore(high, nil), ns+"/lq")
	victims := func() []string {
		var out []string
		for _, d := range f.sched.Cycle() {
			for _, v := range d.Preempt {
				out = append(out, v.Key)
			}
		}
		return out
	}
	if got := victims(); len(got) != 1 || got[0] != ns+"/low" {
		t.Fatalf("victims %v, want [ns/low]", got)
	}
	f.fail.patches["low"] = -1
	f.runEvictors(t)
	f.c.evicts.Add(evictReq{key: ns + "/low", reason: "Preempted", rule: core.InClusterQueue, message: "to make room"})
	eventually(t, func() error {
		if got := victims(); len(got) == 1 && got[0] == ns+"/low" {
			return nil
		}
		return fmt.Errorf("the preemptor did not choose again after the victim's eviction failed %d times", f.fail.attemptsOf("low"))
	})
	if n := f.fail.attemptsOf("low"); n < 3 {
		t.Errorf("gave up after %d attempts, want VictimAttempts (3)", n)
	}
}

// An admission whose read fails is logged and tried again by a later cycle.
func TestAdmissionAfterAFailedReadIsRetried(t *testing.T) {
	w := apiWorkload("w", "1", 0, "")
	f := newFixture(t, w)
	stored := f.get(t, "w")
	f.sched.WorkloadPending(workload.ToCore(stored, nil), ns+"/lq")
	f.fail.gets["w"] = 1
	admitOnce := func() bool {
		for _, d := range f.sched.Cycle() {
			if d.Admit != nil {
				f.c.admit(context.Background(), d)
				return true
			}
		}
		return false
	}
	if !admitOnce() {
		t.Fatal("the first cycle did not admit the workload")
	}
	if workload.HasQuota(f.get(t, "w")) {
		t.Fatal("admitted although the read failed")
	}
	if !f.log.contains("reading workload before writing its admission") {
		t.Errorf("the failed read was not logged: %q", f.log.lines)
	}
	if !admitOnce() {
		t.Fatal("the workload was not queued again after the failed read")
	}
	if !workload.IsAdmitted(f.get(t, "w")) {
		t.Fatal("the retried admission was not written")
	}
}

// The pending-reason writer tries again after a failed read.
func TestPendingReasonAfterAFailedReadIsRetried(t *testing.T) {
	f := newFixture(t, apiWorkload("w", "8", 0, ""))
	f.sched.WorkloadPending(workload.ToCore(f.get(t, "w"), nil), ns+"/lq")
	f.sched.Cycle()
	if p := f.sched.Pending(ns + "/w"); p == nil || p.Reason == core.Contention {
		t.Fatalf("pending reason %+v, want one to write", p)
	}
	f.fail.gets["w"] = 1
	if retry := f.c.writePending(context.Background(), ns+"/w"); !retry {
		t.Fatal("a failed read was not retried")
	}
	if retry := f.c.writePending(context.Background(), ns+"/w"); retry {
		t.Fatal("the second attempt asked for another")
	}
	want := f.sched.Pending(ns + "/w").Message
	if c := findCondition(f.get(t, "w"), berthv1.WorkloadQuotaReserved); c == nil || c.Message != want {
		t.Errorf("pending condition %+v, want message %q", c, want)
	}
}

// At start-up, workloads holding quota in a ClusterQueue that no longer
// exists are evicted; the others are left alone.
func TestOrphanSweepEvictsWorkloadsOfDeletedQueues(t *testing.T) {
	f := newFixture(t, apiWorkload("orphan", "1", 0, "deleted-cq"), apiWorkload("kept", "1", 0, "cq"))
	f.runEvictors(t)
	if err := f.c.sweepOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, evicted(f, t, "orphan"))
	wl := f.get(t, "orphan")
	if c := findCondition(wl, berthv1.WorkloadEvicted); c == nil || c.Reason != "ClusterQueueDeleted" {
		t.Errorf("eviction condition %+v, want reason ClusterQueueDeleted", c)
	}
	if !workload.HasQuota(f.get(t, "kept")) {
		t.Error("a workload of an existing ClusterQueue was evicted")
	}
}

func findCondition(wl *berthv1.Workload, typ string) *metav1.Condition {
	for i := range wl.Status.Conditions {
		if wl.Status.Conditions[i].Type == typ {
			return &wl.Status.Conditions[i]
		}
	}
	return nil
}

// A plain Pod's workload cannot be held back, only deleted: evicted, it
// keeps its admission (and so its quota) while it is stopping.
func TestAPodWorkloadKeepsItsQuotaWhileStopping(t *testing.T) {
	yes := true
	w := apiWorkload("pod-w", "1", 0, "cq")
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u", Controller: &yes}}
	f := newFixture(t, w)
	f.runEvictors(t)
	f.c.Evict([]string{ns + "/pod-w"}, "ClusterQueueStopped", "ClusterQueue cq is stopped")
	eventually(t, func() error {
		if !workload.IsStopping(f.get(t, "pod-w")) {
			return fmt.Errorf("not stopping: %+v", f.get(t, "pod-w").Status.Conditions)
		}
		return nil
	})
	if wl := f.get(t, "pod-w"); !workload.HasQuota(wl) || wl.Status.Admission == nil {
		t.Errorf("a stopping pod workload gave its quota back: %+v", wl.Status)
	}
}
