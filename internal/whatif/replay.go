package whatif

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/controller/queues"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/scheduler"
	"github.com/berth-dev/berth/internal/topology"
	"github.com/berth-dev/berth/internal/workload"
)

// Options change how a trace is replayed.
type Options struct {
	// FairSharing is berth controller --fair-sharing.
	FairSharing bool
	// Nodes are the trace's nodes (Header.Nodes), which a configuration
	// with Topologies places pods on.
	Nodes []Node
}

// Outcome is what became of one workload of the trace.
type Outcome struct {
	Key          string  `json:"key"`
	LocalQueue   string  `json:"localQueue"`
	ClusterQueue string  `json:"clusterQueue,omitempty"`
	Priority     int32   `json:"priority"`
	Arrival      float64 `json:"arrival"`
	// Admitted is when it was last admitted (seconds after the trace's
	// start), nil when it never was.
	Admitted *float64 `json:"admitted,omitempty"`
	// Wait is the seconds from its arrival to its first admission, or to
	// the end of the replay when it never was admitted.
	Wait      float64 `json:"wait"`
	Preempted int     `json:"preempted,omitempty"`
	Finished  bool    `json:"finished"`
}

// Result is one replay: every workload's outcome, in trace order.
type Result struct {
	Config      string    `json:"config"`
	Workloads   []Outcome `json:"workloads"`
	Preemptions int       `json:"preemptions"`
	// End is when the last event happened, seconds after the trace's start.
	End float64 `json:"end"`
	// Cycles is how many admission cycles ran.
	Cycles int `json:"cycles"`
	// Recorded: not a replay but what happened (Recorded); its
	// preemptions are the evictions the trace holds.
	Recorded bool `json:"recorded,omitempty"`
	// Quota is what each ClusterQueue held on average, per flavor and
	// resource (none for what was recorded: a trace has no flavors).
	Quota []QuotaUse `json:"quota,omitempty"`
	// Held is what all ClusterQueues held, change by change, and Nominal
	// their nominal quota, by resource: the chart's quota over time.
	Held    []Held             `json:"-"`
	Nominal map[string]float64 `json:"-"`
	// Budgets is what each queue's budget did: how long it held its
	// queue back, and from when.
	Budgets []BudgetUse `json:"budgets,omitempty"`
}

// virtualClock is the replay's time, moved by the loop alone.
type virtualClock struct{ now time.Time }

func (c *virtualClock) Now() time.Time                  { return c.now }
func (c *virtualClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }

// finish is a running workload's end; gen tells a stale one (the workload
// was preempted since) from its current run.
type finish struct {
	at  time.Time
	i   int
	gen int
}

type finishes []finish

func (f finishes) Len() int { return len(f) }
func (f finishes) Less(a, b int) bool {
	return f[a].at.Before(f[b].at) || f[a].at.Equal(f[b].at) && f[a].i < f[b].i
}
func (f finishes) Swap(a, b int) { f[a], f[b] = f[b], f[a] }
func (f *finishes) Push(x any)   { *f = append(*f, x.(finish)) }
func (f *finishes) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}

// maxCyclesAtOnce bounds the admission cycles that admit or preempt at one
// instant: more means the configuration makes workloads preempt each other
// forever. (Cycles that only set heads aside end when the lines do.)
const maxCyclesAtOnce = 100000

// Replay runs the trace (its workloads with arrivals counted from start)
// against cfg with berth's scheduler, in virtual time: each arrival queues
// its workload, each cycle's admissions start their run, each preemption
// sends its victim back to its queue (to run again in full once admitted
// again), and each run's end gives its quota back.
func Replay(cfg *Config, start time.Time, trace []Workload, o Options) (*Result, error) {
	clk := &virtualClock{now: start}
	s := scheduler.New(clk)
	s.SetFairSharing(o.FairSharing)
	if err := setTopologies(s, cfg, o.Nodes); err != nil {
		return nil, err
	}
	for i := range cfg.Flavors {
		s.SetFlavor(queues.FlavorOf(&cfg.Flavors[i]))
	}
	for i := range cfg.Cohorts {
		s.SetCohort(queues.CohortOf(&cfg.Cohorts[i]))
	}
	var cqs []core.ClusterQueue
	for i := range cfg.ClusterQueues {
		cq := queues.ClusterQueueOf(&cfg.ClusterQueues[i])
		s.SetClusterQueue(cq)
		cqs = append(cqs, cq)
	}
	m := newMeter(start, cqs)
	cqOf := map[string]string{}
	for i := range cfg.LocalQueues {
		lq := queues.LocalQueueOf(&cfg.LocalQueues[i])
		s.SetLocalQueue(lq)
		// A ClusterQueue that orders by LocalQueue usage does here too,
		// measured with the controller's defaults.
		s.SetLocalQueueWeight(lq.Key, queues.WeightOf(&cfg.LocalQueues[i]))
		spec, _ := queues.BudgetOf(cfg.LocalQueues[i].Spec.Budget) // refused when it has a problem
		s.SetLocalQueueBudget(lq.Key, spec)
		cqOf[lq.Key] = lq.ClusterQueue
	}
	bm := newBudgetMeter(start, cfg)
	nsLabels := map[string]labels.Set{}
	for _, ns := range cfg.Namespaces {
		l := labels.Set(maps.Clone(ns.Labels))
		if l == nil {
			l = labels.Set{}
		}
		l[corev1.LabelMetadataName] = ns.Name
		nsLabels[ns.Name] = l
	}

	res := &Result{Config: cfg.Name, Workloads: make([]Outcome, len(trace))}
	byKey := make(map[string]int, len(trace))
	cws := make([]*core.Workload, len(trace))
	for i := range trace {
		w := &trace[i]
		lq := w.Namespace + "/" + w.LocalQueue
		res.Workloads[i] = Outcome{Key: w.Key(), LocalQueue: lq, ClusterQueue: cqOf[lq], Priority: w.Priority, Arrival: w.Arrival}
		byKey[w.Key()] = i
		l, ok := nsLabels[w.Namespace]
		if !ok {
			l = labels.Set{corev1.LabelMetadataName: w.Namespace}
		}
		cw, err := coreWorkload(w, l, at(start, w.Arrival))
		if err != nil {
			return nil, err
		}
		cws[i] = cw
	}
	arrivals := make([]int, len(trace))
	for i := range arrivals {
		arrivals[i] = i
	}
	sort.SliceStable(arrivals, func(a, b int) bool { return trace[arrivals[a]].Arrival < trace[arrivals[b]].Arrival })

	var running finishes
	gen := make([]int, len(trace))
	// held is what each running workload holds, and where.
	type holding struct {
		cq    string
		usage core.Usage
	}
	held := make([]holding, len(trace))
	release := func(i int, now time.Time) {
		if h := held[i]; h.cq != "" {
			m.add(h.cq, h.usage, -1, now)
			held[i] = holding{}
		}
	}
	next, finished := 0, 0
	for {
		// The next instant anything happens.
		var now time.Time
		has := false
		consider := func(t time.Time) {
			if !has || t.Before(now) {
				now, has = t, true
			}
		}
		if next < len(arrivals) {
			consider(at(start, trace[arrivals[next]].Arrival))
		}
		if len(running) > 0 {
			consider(running[0].at)
		}
		if wake, ok := s.NextWake(); ok && wake.After(clk.now) {
			consider(wake)
		}
		// A budget spent, or with room again, is an event of its own
		// while any workload has not finished.
		if at, ok := s.NextBudgetChange(); ok && finished < len(trace) {
			consider(at)
		}
		if !has {
			break
		}
		clk.now = now
		// Budgets are charged for what was held since the last instant,
		// before anything changes, and told what is held from now on
		// after: exact, where the controller charges every few seconds.
		s.ChargeBudgets()
		for next < len(arrivals) && !at(start, trace[arrivals[next]].Arrival).After(now) {
			i := arrivals[next]
			s.WorkloadPending(cws[i], res.Workloads[i].LocalQueue)
			next++
		}
		for len(running) > 0 && !running[0].at.After(now) {
			f := heap.Pop(&running).(finish)
			if f.gen != gen[f.i] {
				continue
			}
			res.Workloads[f.i].Finished = true
			finished++
			release(f.i, now)
			s.WorkloadGone(cws[f.i].Key)
		}
		// Cycles run, as in the controller, until no queue has a head to
		// look at: a head that does not fit is set aside and the next in
		// its line is looked at in the next cycle, at the same instant.
		for n := 0; ; {
			if n == maxCyclesAtOnce {
				return nil, fmt.Errorf("%s: at %s, %d admission cycles without an end: the workloads preempt each other forever", cfg.Name, now.Sub(start), n)
			}
			ds := s.Cycle()
			if ds == nil {
				break
			}
			res.Cycles++
			progress := false
			for _, d := range ds {
				for _, v := range d.Preempt {
					i := byKey[v.Key]
					gen[i]++
					release(i, now)
					res.Workloads[i].Preempted++
					res.Preemptions++
					again := *cws[i]
					again.Timestamp = now // queued again in the order of its eviction
					// and held back as the controller holds an evicted one.
					again.NotBefore = now.Add(workload.BackoffFor(int32(res.Workloads[i].Preempted)))
					cws[i] = &again
					s.WorkloadPending(cws[i], res.Workloads[i].LocalQueue)
					progress = true
				}
				if d.Admit == nil {
					continue
				}
				i := byKey[d.Workload.Key]
				s.WorkloadAdmitted(core.Admitted{Key: d.Workload.Key, ClusterQueue: d.Admit.ClusterQueue, Usage: d.Admit.Usage,
					Priority: *cmp.Or(d.Admit.Priority, &d.Workload.Priority), Timestamp: d.Workload.Timestamp, AdmittedAt: now,
					Placements: s.Placements(d.Workload.Key)}, res.Workloads[i].LocalQueue)
				o := &res.Workloads[i]
				t := now.Sub(start).Seconds()
				if o.Admitted == nil {
					o.Wait = t - o.Arrival
				}
				o.Admitted, o.ClusterQueue = &t, d.Admit.ClusterQueue
				held[i] = holding{cq: d.Admit.ClusterQueue, usage: d.Admit.Usage}
				m.add(d.Admit.ClusterQueue, d.Admit.Usage, 1, now)
				heap.Push(&running, finish{at: at(now, trace[i].Run), i: i, gen: gen[i]})
				progress = true
			}
			if progress {
				n++
			}
		}
		s.ChargeBudgets()
		bm.at(s, now)
	}
	res.End = clk.now.Sub(start).Seconds()
	res.Budgets = bm.result()
	res.Quota = m.uses(start, clk.now)
	res.Held, res.Nominal = m.timeline, m.nominalTotal()
	for i := range res.Workloads {
		if o := &res.Workloads[i]; o.Admitted == nil {
			o.Wait = res.End - o.Arrival
		}
	}
	return res, nil
}

// setTopologies gives the scheduler cfg's Topologies and the trace's nodes,
// each Ready with all of its allocatable free: pods that are not placed
// by topology are not in a trace, so they take no room here.
func setTopologies(s *scheduler.Scheduler, cfg *Config, nodes []Node) error {
	for _, rf := range cfg.Flavors {
		if rf.Spec.TopologyName != nil && len(nodes) == 0 {
			return fmt.Errorf("%s: ResourceFlavor %s: spec.topologyName: topology-aware placement needs the trace's nodes, and this trace has none (recorded from a cluster without Topologies, or generated)", cfg.Name, rf.Name)
		}
	}
	for _, t := range cfg.Topologies {
		levels := make([]string, len(t.Spec.Levels))
		for i, l := range t.Spec.Levels {
			levels[i] = l.NodeLabel
		}
		s.SetTopology(t.Name, levels)
	}
	if len(cfg.Topologies) == 0 {
		return nil
	}
	set := make([]topology.Node, 0, len(nodes))
	for _, n := range nodes {
		free := make(map[string]int64, len(n.Allocatable))
		for r, q := range n.Allocatable {
			v, err := resource.ParseQuantity(q)
			if err != nil {
				return fmt.Errorf("node %s: allocatable[%s]: %w", n.Name, r, err)
			}
			free[r] = core.Milli(v)
		}
		set = append(set, topology.Node{Name: n.Name, Labels: n.Labels, Free: free, Taints: n.Taints, Ready: true, Unschedulable: n.Unschedulable})
	}
	s.SetNodes(set, nil)
	return nil
}

// at is t plus seconds, to the microsecond.
func at(t time.Time, seconds float64) time.Time {
	return t.Add(time.Duration(seconds * float64(time.Second)).Round(time.Microsecond))
}

// coreWorkload is a trace's workload as the scheduler takes it.
func coreWorkload(w *Workload, ns labels.Set, arrival time.Time) (*core.Workload, error) {
	cw := &core.Workload{Key: w.Key(), NamespaceLabels: ns, Priority: w.Priority, Timestamp: arrival}
	for _, ps := range w.PodSets {
		cps := core.PodSet{Name: ps.Name, Count: ps.Count, Requests: map[string]int64{}, Topology: workload.TopologyRequestOf(ps.Topology)}
		for _, r := range slices.Sorted(maps.Keys(ps.Requests)) {
			q, err := resource.ParseQuantity(ps.Requests[r])
			if err != nil {
				return nil, fmt.Errorf("workload %s: podSets %s: requests[%s]: %w", w.Key(), ps.Name, r, err)
			}
			cps.Requests[r] = core.Milli(q)
		}
		cw.PodSets = append(cw.PodSets, cps)
	}
	return cw, nil
}
