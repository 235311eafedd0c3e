package why

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller/queues"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/runtimelimit"
	"github.com/berth-dev/berth/internal/workload"
)

// Input is what Explain reads: the workload, and the cluster's queues,
// flavors, checks and workloads as the API server has them.
type Input struct {
	Workload       *berthv1.Workload
	LocalQueues    []berthv1.LocalQueue
	ClusterQueues  []berthv1.ClusterQueue
	Cohorts        []berthv1.Cohort
	Flavors        []berthv1.ResourceFlavor
	Checks         []berthv1.AdmissionCheck
	Workloads      []berthv1.Workload
	NamespaceLabel map[string]labels.Set
	Now            time.Time
}

// Report is the explanation; Render prints it, -o json shows it as it is.
type Report struct {
	Workload     string `json:"workload"`
	Owner        string `json:"owner,omitempty"`
	LocalQueue   string `json:"localQueue"`
	ClusterQueue string `json:"clusterQueue,omitempty"`
	// State: Pending, Deactivated, WaitingForChecks, Admitted or Finished.
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Position in its ClusterQueue's line (1 is next), of Waiting.
	Position int      `json:"position,omitempty"`
	Waiting  int      `json:"waiting,omitempty"`
	Ahead    []string `json:"ahead,omitempty"` // the first few, in order
	Needs    []Need   `json:"needs,omitempty"`
	Room     []Room   `json:"room,omitempty"`
	// Now is what the scheduling core decides for it at this moment, if it
	// were at the head of its queue.
	Now     string   `json:"now,omitempty"`
	Victims []string `json:"victims,omitempty"`
	Checks  []string `json:"checks,omitempty"`
	// RunsOn is the worker cluster a multicluster check dispatched it to.
	RunsOn string `json:"runsOn,omitempty"`
	// Pods is its PodsReady condition in words (berth controller
	// --wait-for-pods-ready): its pods all Ready, or why their readiness
	// cost it its admission.
	Pods string `json:"pods,omitempty"`
	// RunTime is how much of its maximum run time it has used, for a
	// workload that has one (its own or its ClusterQueue's).
	RunTime string   `json:"runTime,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Need is one pod set's request.
type Need struct {
	PodSet   string            `json:"podSet"`
	Count    int32             `json:"count"`
	Requests map[string]string `json:"requests"` // per pod
}

// Room is one flavor and resource of its ClusterQueue: what it has, uses,
// and could have.
type Room struct {
	Flavor   string `json:"flavor"`
	Resource string `json:"resource"`
	Nominal  string `json:"nominal"`
	Used     string `json:"used"`
	// Available counts what may be borrowed from the cohort.
	Available string `json:"available"`
}

// aheadShown is how many of those ahead a report names.
const aheadShown = 5

// Explain works out the report.
func Explain(in Input) Report {
	w := in.Workload
	r := Report{Workload: workload.Key(w), LocalQueue: workload.LocalQueueKey(w)}
	for _, o := range w.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			r.Owner = o.Kind + " " + o.Name
		}
	}
	for _, ps := range w.Spec.PodSets {
		n := Need{PodSet: ps.Name, Count: ps.Count, Requests: map[string]string{}}
		for res, q := range ps.Requests {
			n.Requests[string(res)] = q.String()
		}
		r.Needs = append(r.Needs, n)
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved); c != nil && c.Status != "True" {
		r.Reason, r.Message = c.Reason, c.Message
	}
	r.RunsOn = w.Status.ClusterName
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c != nil {
		r.Pods = c.Message
		if c.Status != "True" {
			r.Pods = "not Ready: " + c.Message
		}
	}
	for _, c := range w.Status.AdmissionChecks {
		s := fmt.Sprintf("%s: %s", c.Name, c.State)
		if c.Message != "" {
			s += " (" + c.Message + ")"
		}
		r.Checks = append(r.Checks, s)
	}
	switch {
	case workload.IsFinished(w):
		r.State = "Finished"
	case workload.IsAdmitted(w):
		r.State = "Admitted"
	case workload.HasQuota(w):
		r.State = "WaitingForChecks"
	case !workload.IsActive(w):
		r.State = "Deactivated"
	default:
		r.State = "Pending"
	}
	if w.Status.Admission != nil {
		r.ClusterQueue = w.Status.Admission.ClusterQueue
	}
	i := slices.IndexFunc(in.LocalQueues, func(lq berthv1.LocalQueue) bool {
		return lq.Namespace == w.Namespace && lq.Name == w.Spec.QueueName
	})
	if i < 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("LocalQueue %s does not exist: the workload waits for it", r.LocalQueue))
		return r
	}
	if r.ClusterQueue == "" {
		r.ClusterQueue = in.LocalQueues[i].Spec.ClusterQueue
	}
	cqi := slices.IndexFunc(in.ClusterQueues, func(cq berthv1.ClusterQueue) bool { return cq.Name == r.ClusterQueue })
	if cqi < 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("ClusterQueue %s does not exist: the workload waits for it", r.ClusterQueue))
		return r
	}
	lqObj := &in.LocalQueues[i]
	if p := lqObj.Spec.StopPolicy; p == berthv1.Hold || p == berthv1.HoldAndDrain {
		r.Notes = append(r.Notes, fmt.Sprintf("LocalQueue %s is stopped (stopPolicy %s)", r.LocalQueue, p))
	}
	if a := w.Status.Admission; a != nil {
		if a.Priority != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("admitted at priority %d, not its own %d: its ClusterQueue's budget was spent "+
				"(whenSpent: LowerPriority); it may be preempted as work of priority %d", *a.Priority, workload.Priority(w), *a.Priority))
		}
		for i, psa := range a.PodSetAssignments {
			if i < len(w.Spec.PodSets) && psa.Count < w.Spec.PodSets[i].Count {
				r.Notes = append(r.Notes, fmt.Sprintf("pod set %s was admitted with %d of its %d pods (partial admission)",
					psa.Name, psa.Count, w.Spec.PodSets[i].Count))
			}
		}
	}
	if limit := runtimelimit.Limit(w.Spec.MaximumExecutionTimeSeconds, in.ClusterQueues[cqi].Spec.RunTime); limit != nil {
		most := time.Duration(*limit) * time.Second
		r.RunTime = fmt.Sprintf("ran %s of its maximum %s", runtimelimit.RunTime(w, in.Now).Truncate(time.Second), most)
		if _, left, _ := runtimelimit.OutOfRunTime(w, limit, in.Now); r.State == "Admitted" && left > 0 {
			r.RunTime += fmt.Sprintf("; stopped in %s unless it ends first", left.Truncate(time.Second))
		}
	}
	c, cq := simulated(in, r.ClusterQueue)
	if r.State != "Pending" {
		r.Room = room(c, cq)
		return r
	}
	r.Position, r.Waiting, r.Ahead = position(in, cq)
	cqb, cqst := cqBudget(in, cq.Name)
	for _, note := range []string{budgetNote("ClusterQueue "+cq.Name, cqb, cqst, in.Now),
		budgetNote("LocalQueue "+r.LocalQueue, lqObj.Spec.Budget, lqObj.Status.Budget, in.Now)} {
		if note != "" {
			r.Notes = append(r.Notes, note)
		}
	}
	if cq.AdmissionFairSharing {
		r.Notes = append(r.Notes, fairNote(in, r.LocalQueue, cq.Name))
	}
	me := workload.ToCore(w, in.NamespaceLabel[w.Namespace])
	for i := range me.PodSets {
		if me.PodSets[i].Topology != nil {
			me.PodSets[i].Topology = nil
			r.Notes = append(r.Notes, "placement on nodes (topology) is not simulated here: only quota is")
		}
	}
	me.NotBefore = time.Time{}
	me.ClusterQueue = cq.Name
	r.Room = room(c, cq)
	ds := c.Cycle([]*core.Workload{me}, in.Now)
	switch d := ds[0]; {
	case d.Admit != nil:
		r.Now = "it fits: berth admits it at its turn"
		if r.Position > 1 {
			r.Now += fmt.Sprintf(", after the %d ahead of it that fit", r.Position-1)
		}
	case d.Pending != nil && len(d.Preempt) > 0:
		r.Now = "it fits only by preempting: " + d.Pending.Message
		for _, v := range d.Preempt {
			r.Victims = append(r.Victims, fmt.Sprintf("%s in ClusterQueue %s (%s)", v.Key, v.ClusterQueue, v.Reason))
		}
	case d.Pending != nil:
		r.Now = "it waits: " + d.Pending.Message
	}
	if r.Reason == string(core.WaitingForPodsReady) {
		// The copy knows nothing of --pods-ready-block-admission: the
		// controller's own reason says what holds it now.
		r.Now = "it waits: " + r.Message
	}
	if b := meta.FindStatusCondition(lqObj.Status.Conditions, "BudgetSpent"); b != nil && b.Status == metav1.ConditionTrue && lqObj.Spec.Budget != nil {
		// Nor of its LocalQueue's spent budget (its status says it).
		r.Now = fmt.Sprintf("it waits: LocalQueue %s: %s", r.LocalQueue, b.Message)
	}
	if rs := w.Status.RequeueState; rs != nil && rs.RequeueAt != nil && rs.RequeueAt.After(in.Now) {
		r.Notes = append(r.Notes, fmt.Sprintf("it backs off until %s after an eviction", rs.RequeueAt.Format(time.RFC3339)))
	}
	return r
}

// simulated is the core as the controller would have it: every queue,
// flavor, cohort and check, and every workload that holds quota; and the
// workload's ClusterQueue, cqName, as the core sees it.
func simulated(in Input, cqName string) (*core.Cluster, core.ClusterQueue) {
	c := core.NewCluster()
	for i := range in.Flavors {
		c.SetFlavor(queues.FlavorOf(&in.Flavors[i]))
	}
	for i := range in.Cohorts {
		c.SetCohort(queues.CohortOf(&in.Cohorts[i]))
	}
	for _, ac := range in.Checks {
		c.SetAdmissionCheck(ac.Name, meta.IsStatusConditionTrue(ac.Status.Conditions, berthv1.AdmissionCheckActive))
	}
	var mine core.ClusterQueue
	for i := range in.ClusterQueues {
		obj := &in.ClusterQueues[i]
		cq := queues.ClusterQueueOf(obj)
		if cq.Name == cqName {
			mine = cq
		}
		c.SetClusterQueue(cq)
		// A spent budget holds the queue back as the controller's last
		// charge found it (the copy charges nothing).
		if b := meta.FindStatusCondition(obj.Status.Conditions, "BudgetSpent"); b != nil && b.Status == metav1.ConditionTrue && cq.Budget != nil {
			c.SetBudgetSpent(cq.Name, core.SpentOf(cq.Budget, b.Message))
		}
	}
	for i := range in.Workloads {
		w := &in.Workloads[i]
		if workload.HasQuota(w) && !workload.IsFinished(w) && workload.Key(w) != workload.Key(in.Workload) {
			c.AddAdmitted(workload.AdmittedOf(w))
		}
	}
	return c, mine
}

// position counts the pending workloads of the ClusterQueue that come
// before this one in the order berth admits in (priority, then age).
func position(in Input, cq core.ClusterQueue) (pos, waiting int, ahead []string) {
	lqCQ, scores := map[string]string{}, map[string]float64{}
	for i := range in.LocalQueues {
		lq := &in.LocalQueues[i]
		lqCQ[lq.Namespace+"/"+lq.Name] = lq.Spec.ClusterQueue
		if cq.AdmissionFairSharing {
			scores[lq.Namespace+"/"+lq.Name] = queues.ScoreOf(lq)
		}
	}
	// In the queue's own order (queue.InLine), aging and LocalQueue usage
	// (as of its last sample) included, as the visibility API (berth
	// pending) shows it.
	inLine := func(w *berthv1.Workload) queue.Waiting {
		o := queue.WaitingOf(workload.ToCore(w, nil), workload.LocalQueueKey(w), cq.Aging, in.Now)
		o.Score = scores[o.LocalQueue]
		return o
	}
	me := inLine(in.Workload)
	var before []queue.Waiting
	for i := range in.Workloads {
		w := &in.Workloads[i]
		if workload.HasQuota(w) || workload.IsFinished(w) || !workload.IsActive(w) || w.DeletionTimestamp != nil ||
			lqCQ[workload.LocalQueueKey(w)] != cq.Name {
			continue
		}
		waiting++
		if workload.Key(w) == me.Key {
			continue
		}
		if o := inLine(w); queue.InLine(&o, &me) {
			before = append(before, o)
		}
	}
	queue.SortLine(before)
	for _, o := range before[:min(len(before), aheadShown)] {
		if cq.AdmissionFairSharing {
			ahead = append(ahead, fmt.Sprintf("%s (LocalQueue %s, usage %s; priority %d)", o.Key, o.LocalQueue, usageWords(o.Score), o.Priority+o.Aged))
			continue
		}
		ahead = append(ahead, fmt.Sprintf("%s (priority %d)", o.Key, o.Priority+o.Aged))
	}
	return len(before) + 1, waiting, ahead
}

// cqBudget is a ClusterQueue's budget and its status.
func cqBudget(in Input, cqName string) (*berthv1.Budget, *berthv1.BudgetStatus) {
	for i := range in.ClusterQueues {
		if obj := &in.ClusterQueues[i]; obj.Name == cqName {
			return obj.Spec.Budget, obj.Status.Budget
		}
	}
	return nil, nil
}

// budgetNote says what the budget of queue who has spent, as its status
// says, and when a spent one is free again and how much; "" without one.
func budgetNote(who string, b *berthv1.Budget, st *berthv1.BudgetStatus, now time.Time) string {
	spec, problem := queues.BudgetOf(b)
	l, ok := queues.LedgerOf(st)
	if spec == nil || problem != "" || !ok {
		return ""
	}
	msg := fmt.Sprintf("budget of %s: %s spent of %s", who, strconv.FormatFloat(spec.Spent(l, now), 'f', 3, 64), spec.Describe())
	if at, free := spec.FreeAt(l, now); !at.IsZero() {
		msg += fmt.Sprintf("; %s %s-hours free again at %s", strconv.FormatFloat(free, 'f', 3, 64), spec.Resource, at.UTC().Format(time.RFC3339))
	}
	return msg + " (as of " + l.At.UTC().Format(time.RFC3339) + ")"
}

// fairNote says how a ClusterQueue that orders by LocalQueue usage
// weighs the workload's own LocalQueue.
func fairNote(in Input, localQueue, cq string) string {
	msg := fmt.Sprintf("ClusterQueue %s admits the LocalQueues that used least lately first (admission fair sharing)", cq)
	for i := range in.LocalQueues {
		lq := &in.LocalQueues[i]
		if lq.Namespace+"/"+lq.Name != localQueue {
			continue
		}
		msg += fmt.Sprintf("; %s has usage %s (weight %g)", localQueue, usageWords(queues.ScoreOf(lq)), queues.WeightOf(lq))
		if fs := lq.Status.FairSharing; fs != nil && fs.AdmissionFairSharingStatus != nil {
			msg += " as of " + fs.AdmissionFairSharingStatus.LastUpdate.UTC().Format(time.RFC3339)
		}
	}
	return msg
}

func usageWords(score float64) string {
	if math.IsInf(score, 1) {
		return "unbounded (weight 0: after every other queue)"
	}
	return strconv.FormatFloat(score, 'g', 4, 64)
}

// room lists the ClusterQueue's quota, usage and what it could use now.
func room(c *core.Cluster, cq core.ClusterQueue) []Room {
	var out []Room
	usage := c.Usage(cq.Name)
	for _, rg := range cq.ResourceGroups {
		for _, f := range rg.Flavors {
			for _, res := range rg.Resources {
				fr := core.FlavorResource{Flavor: f.Name, Resource: res}
				out = append(out, Room{Flavor: f.Name, Resource: res,
					Nominal:   core.FormatQuantity(res, c.Nominal(cq.Name, fr)),
					Used:      core.FormatQuantity(res, usage[fr]),
					Available: core.FormatQuantity(res, c.Available(cq.Name, fr))})
			}
		}
	}
	return out
}

// Render says the report in words.
func Render(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Workload %s", r.Workload)
	if r.Owner != "" {
		fmt.Fprintf(&b, " (%s)", r.Owner)
	}
	fmt.Fprintf(&b, "\n  queue:     LocalQueue %s", r.LocalQueue)
	if r.ClusterQueue != "" {
		fmt.Fprintf(&b, " -> ClusterQueue %s", r.ClusterQueue)
	}
	fmt.Fprintf(&b, "\n  state:     %s", r.State)
	if r.Message != "" {
		fmt.Fprintf(&b, ": %s", r.Message)
	}
	b.WriteString("\n")
	for _, n := range r.Needs {
		var reqs []string
		for res, q := range n.Requests {
			reqs = append(reqs, q+" "+res)
		}
		slices.Sort(reqs)
		pods := "pods"
		if n.Count == 1 {
			pods = "pod"
		}
		fmt.Fprintf(&b, "  needs:     %s: %d %s of %s\n", n.PodSet, n.Count, pods, strings.Join(reqs, ", "))
	}
	if r.Position > 0 {
		fmt.Fprintf(&b, "  position:  %d of %d waiting in ClusterQueue %s\n", r.Position, r.Waiting, r.ClusterQueue)
		for _, a := range r.Ahead {
			fmt.Fprintf(&b, "    ahead:   %s\n", a)
		}
		if more := r.Position - 1 - len(r.Ahead); more > 0 {
			fmt.Fprintf(&b, "    ahead:   and %d more\n", more)
		}
	}
	for _, rm := range r.Room {
		fmt.Fprintf(&b, "  quota:     %s/%s: %s used of %s, %s available now (borrowing included)\n",
			rm.Flavor, rm.Resource, rm.Used, rm.Nominal, rm.Available)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  check:     %s\n", c)
	}
	if r.RunsOn != "" {
		fmt.Fprintf(&b, "  runs on:   worker cluster %s\n", r.RunsOn)
	}
	if r.RunTime != "" {
		fmt.Fprintf(&b, "  run time:  %s\n", r.RunTime)
	}
	if r.Pods != "" {
		fmt.Fprintf(&b, "  pods:      %s\n", r.Pods)
	}
	if r.Now != "" {
		fmt.Fprintf(&b, "  right now: %s\n", r.Now)
	}
	for _, v := range r.Victims {
		fmt.Fprintf(&b, "    evicts:  %s\n", v)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note:      %s\n", n)
	}
	return b.String()
}
