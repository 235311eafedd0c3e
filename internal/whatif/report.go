package whatif

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/berth-dev/berth/internal/core"
)

// Stats sum up the waits of a group of workloads: over those admitted (a
// wait from arrival to first admission); those never admitted are counted
// apart.
type Stats struct {
	Workloads   int     `json:"workloads"`
	Admitted    int     `json:"admitted"`
	NotAdmitted int     `json:"notAdmitted"`
	Mean        float64 `json:"meanWait"`
	P50         float64 `json:"p50Wait"`
	P95         float64 `json:"p95Wait"`
	Max         float64 `json:"maxWait"`
	// Preempted is how many times workloads of the group were preempted.
	Preempted int `json:"preempted"`
}

// Group is the stats of the workloads of one ClusterQueue, LocalQueue or
// priority.
type Group struct {
	By    string `json:"by"`
	Name  string `json:"name"`
	Stats Stats  `json:"stats"`
}

// Summarize groups a replay's workloads by ClusterQueue, by LocalQueue and
// by priority, each group's stats in that order, by name within.
func Summarize(r *Result) []Group {
	keys := []struct {
		by string
		of func(*Outcome) string
	}{
		{"ClusterQueue", func(o *Outcome) string { return cmp.Or(o.ClusterQueue, "(none: no such LocalQueue)") }},
		{"LocalQueue", func(o *Outcome) string { return o.LocalQueue }},
		{"priority", func(o *Outcome) string { return fmt.Sprint(o.Priority) }},
	}
	var out []Group
	for _, k := range keys {
		members := map[string][]*Outcome{}
		for i := range r.Workloads {
			o := &r.Workloads[i]
			members[k.of(o)] = append(members[k.of(o)], o)
		}
		var names []string
		for n := range members {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, b string) int {
			if k.by == "priority" {
				x, _ := strconv.Atoi(a) // written by Sprint above
				y, _ := strconv.Atoi(b)
				return cmp.Compare(y, x) // highest first
			}
			return cmp.Compare(a, b)
		})
		for _, n := range names {
			out = append(out, Group{By: k.by, Name: n, Stats: statsOf(members[n])})
		}
	}
	return out
}

func statsOf(os []*Outcome) Stats {
	st := Stats{Workloads: len(os)}
	var waits []float64
	for _, o := range os {
		st.Preempted += o.Preempted
		if o.Admitted == nil {
			st.NotAdmitted++
			continue
		}
		waits = append(waits, o.Wait)
	}
	st.Admitted = len(waits)
	if len(waits) == 0 {
		return st
	}
	slices.Sort(waits)
	sum := 0.0
	for _, w := range waits {
		sum += w
	}
	st.Mean = sum / float64(len(waits))
	st.P50, st.P95, st.Max = rank(waits, 0.50), rank(waits, 0.95), waits[len(waits)-1]
	return st
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Recorded is what happened in the cluster a trace was recorded from, as a
// result to compare a replay with: each workload admitted when the trace
// says it was last admitted, in the ClusterQueue the replay put it in, and
// evicted as often as it was there (preempted, or sent back for another
// reason: a recording does not tell them apart). A workload preempted there
// waited, by this account, until its last admission. An error names a
// workload without a recorded admission (a generated trace has none).
func Recorded(trace []Workload, replay *Result) (*Result, error) {
	r := &Result{Config: "recorded", Workloads: make([]Outcome, len(trace)), Recorded: true}
	for i := range trace {
		w := &trace[i]
		if w.Admitted == nil {
			return nil, fmt.Errorf("workload %s: no recorded admission (admitted): only a trace recorded from a cluster has them", w.Key())
		}
		o := Outcome{Key: w.Key(), LocalQueue: w.Namespace + "/" + w.LocalQueue, Priority: w.Priority, Arrival: w.Arrival,
			Admitted: w.Admitted, Wait: *w.Admitted - w.Arrival, Finished: true, Preempted: int(w.Evicted)}
		r.Preemptions += int(w.Evicted)
		if i < len(replay.Workloads) {
			o.ClusterQueue = replay.Workloads[i].ClusterQueue
		}
		r.Workloads[i] = o
		r.End = max(r.End, *w.Admitted+w.Run)
	}
	return r, nil
}

// ByLastAdmission is r with each admitted workload's wait counted to its
// last admission, as Recorded counts them, so that a replay and what
// happened are compared alike.
func ByLastAdmission(r *Result) *Result {
	out := *r
	out.Workloads = slices.Clone(r.Workloads)
	for i := range out.Workloads {
		if o := &out.Workloads[i]; o.Admitted != nil {
			o.Wait = *o.Admitted - o.Arrival
		}
	}
	return &out
}

// OrderAgreement is the share of pairs of workloads admitted in both
// results that were admitted in the same order; a pair admitted in the
// same whole second in either counts as agreeing (a recorded trace has
// seconds). 1 when fewer than two were admitted in both.
func OrderAgreement(a, b *Result) float64 {
	type pair struct{ a, b float64 }
	var ps []pair
	for i := range a.Workloads {
		if i < len(b.Workloads) && a.Workloads[i].Admitted != nil && b.Workloads[i].Admitted != nil {
			ps = append(ps, pair{math.Floor(*a.Workloads[i].Admitted), math.Floor(*b.Workloads[i].Admitted)})
		}
	}
	n := len(ps)
	if n < 2 {
		return 1
	}
	// Sorted by a (ties by b), the pairs b orders the other way are the
	// inversions of the b column, counted by merge sort: n log n, for
	// traces of hundreds of thousands.
	slices.SortFunc(ps, func(x, y pair) int { return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b)) })
	bs := make([]float64, n)
	for i, p := range ps {
		bs[i] = p.b
	}
	inversions := countInversions(bs, make([]float64, n))
	return 1 - float64(inversions)/(float64(n)*float64(n-1)/2)
}

// countInversions counts the pairs i < j with xs[i] > xs[j], sorting xs.
func countInversions(xs, tmp []float64) int64 {
	if len(xs) < 2 {
		return 0
	}
	mid := len(xs) / 2
	n := countInversions(xs[:mid], tmp[:mid]) + countInversions(xs[mid:], tmp[mid:])
	i, j, k := 0, mid, 0
	for i < mid && j < len(xs) {
		if xs[i] <= xs[j] {
			tmp[k] = xs[i]
			i++
		} else {
			tmp[k] = xs[j]
			n += int64(mid - i)
			j++
		}
		k++
	}
	k += copy(tmp[k:], xs[i:mid])
	copy(tmp[k:], xs[j:])
	copy(xs, tmp[:len(xs)])
	return n
}

// Change is one workload's wait under two configurations.
type Change struct {
	Key string  `json:"key"`
	A   float64 `json:"waitA"`
	B   float64 `json:"waitB"`
	// AdmittedA and AdmittedB say whether it was admitted at all.
	AdmittedA bool `json:"admittedA"`
	AdmittedB bool `json:"admittedB"`
}

// Pair is a group's stats under two configurations.
type Pair struct {
	By   string `json:"by"`
	Name string `json:"name"`
	A    Stats  `json:"a"`
	B    Stats  `json:"b"`
}

// Comparison lines up two replays of one trace.
type Comparison struct {
	A, B   string
	Groups []Pair `json:"groups"`
	// Changed are the workloads whose wait changed most, most first.
	Changed []Change `json:"changed"`
	// PreemptionsA and PreemptionsB are the replays' preemptions.
	PreemptionsA int `json:"preemptionsA"`
	PreemptionsB int `json:"preemptionsB"`
	// OrderAgreement is the share of pairs admitted in the same order
	// under both (OrderAgreement).
	OrderAgreement float64 `json:"orderAgreement"`
	// Recorded: A is what happened (Recorded); its preemptions are the
	// evictions recorded.
	Recorded bool `json:"recorded,omitempty"`
	// Quota lines up what each ClusterQueue held on average under each
	// (QuotaUse); A is nil where it has none (what was recorded).
	Quota []QuotaPair `json:"quota,omitempty"`
	// Budgets lines up what each queue's budget did under each.
	Budgets []BudgetPair `json:"budgets,omitempty"`
}

// QuotaPair is one ClusterQueue's average use of one resource in one
// flavor under two configurations; nil where one has none.
type QuotaPair struct {
	ClusterQueue string    `json:"clusterQueue"`
	Flavor       string    `json:"flavor"`
	Resource     string    `json:"resource"`
	A            *QuotaUse `json:"a,omitempty"`
	B            *QuotaUse `json:"b,omitempty"`
}

func pairQuota(a, b []QuotaUse) []QuotaPair {
	out := pairUp(a, b, func(u *QuotaUse) [3]string { return [3]string{u.ClusterQueue, u.Flavor, u.Resource} },
		func(u *QuotaUse) QuotaPair {
			return QuotaPair{ClusterQueue: u.ClusterQueue, Flavor: u.Flavor, Resource: u.Resource}
		},
		func(p *QuotaPair, inA bool, u *QuotaUse) {
			if inA {
				p.A = u
			} else {
				p.B = u
			}
		})
	slices.SortFunc(out, func(x, y QuotaPair) int {
		return cmp.Or(cmp.Compare(x.ClusterQueue, y.ClusterQueue), cmp.Compare(x.Flavor, y.Flavor), cmp.Compare(x.Resource, y.Resource))
	})
	return out
}

// pairUp lines up what two replays report, by key, in the order first
// seen (a's, then b's not in a): newPair makes a pair for a key, put sets
// its side from a (inA) or b.
func pairUp[U any, K comparable, P any](a, b []U, key func(*U) K, newPair func(*U) P, put func(p *P, inA bool, u *U)) []P {
	var out []P
	index := map[K]int{}
	for side, uses := range [][]U{a, b} {
		for i := range uses {
			u := &uses[i]
			j, ok := index[key(u)]
			if !ok {
				j = len(out)
				index[key(u)] = j
				out = append(out, newPair(u))
			}
			put(&out[j], side == 0, u)
		}
	}
	return out
}

// Compare lines up two replays of the same trace: each group of either,
// and the top workloads whose wait changed most.
func Compare(a, b *Result, top int) Comparison {
	c := Comparison{A: a.Config, B: b.Config, PreemptionsA: a.Preemptions, PreemptionsB: b.Preemptions, OrderAgreement: OrderAgreement(a, b),
		Recorded: a.Recorded, Quota: pairQuota(a.Quota, b.Quota), Budgets: pairBudgets(a.Budgets, b.Budgets)}
	ga, gb := Summarize(a), Summarize(b)
	index := func(gs []Group) map[[2]string]Stats {
		m := map[[2]string]Stats{}
		for _, g := range gs {
			m[[2]string{g.By, g.Name}] = g.Stats
		}
		return m
	}
	ia, ib := index(ga), index(gb)
	seen := map[[2]string]bool{}
	for _, g := range append(ga, gb...) {
		k := [2]string{g.By, g.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		c.Groups = append(c.Groups, Pair{By: g.By, Name: g.Name, A: ia[k], B: ib[k]})
	}
	for i := range a.Workloads {
		oa, ob := &a.Workloads[i], &b.Workloads[i]
		c.Changed = append(c.Changed, Change{Key: oa.Key, A: oa.Wait, B: ob.Wait, AdmittedA: oa.Admitted != nil, AdmittedB: ob.Admitted != nil})
	}
	slices.SortStableFunc(c.Changed, func(x, y Change) int { return cmp.Compare(math.Abs(y.B-y.A), math.Abs(x.B-x.A)) })
	c.Changed = slices.DeleteFunc(c.Changed, func(ch Change) bool { return ch.A == ch.B && ch.AdmittedA == ch.AdmittedB })
	if len(c.Changed) > top {
		c.Changed = c.Changed[:top]
	}
	return c
}

// WriteSummary writes a replay's groups as a table, waits in seconds.
func WriteSummary(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "config %s: %d workloads, %d preemptions, last event at %s\n", r.Config, len(r.Workloads), r.Preemptions, secs(r.End))
	fmt.Fprintln(tw, "BY\tNAME\tWORKLOADS\tADMITTED\tNOT ADMITTED\tMEAN WAIT\tP50\tP95\tMAX\tPREEMPTED")
	for _, g := range Summarize(r) {
		s := g.Stats
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d\n", g.By, g.Name, s.Workloads, s.Admitted, s.NotAdmitted,
			secs(s.Mean), secs(s.P50), secs(s.P95), secs(s.Max), s.Preempted)
	}
	if len(r.Quota) > 0 {
		fmt.Fprintln(tw, "\nCLUSTERQUEUE\tFLAVOR\tRESOURCE\tUSED OF NOMINAL\tBORROWED")
		for i := range r.Quota {
			u := &r.Quota[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.ClusterQueue, u.Flavor, u.Resource, used(u), borrowed(u))
		}
	}
	if len(r.Budgets) > 0 {
		fmt.Fprintln(tw, "\nBUDGET OF\tBUDGET\tSPENT FOR\tFIRST SPENT AT")
		for i := range r.Budgets {
			u := &r.Budgets[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", budgetOwner(u.Queue, u.LocalQueue), u.Budget, spentFor(u), firstSpent(u))
		}
	}
	return tw.Flush()
}

// used says a queue's average use of its nominal quota: "6.11 of 4 (153 %)".
func used(u *QuotaUse) string {
	if u == nil {
		return "-"
	}
	if u.Nominal > 0 {
		return fmt.Sprintf("%s of %s (%.0f %%)", amount(u.Resource, u.Used), amount(u.Resource, u.Nominal), 100*u.Used/u.Nominal)
	}
	return amount(u.Resource, u.Used) + " of 0"
}

func borrowed(u *QuotaUse) string {
	if u == nil {
		return "-"
	}
	return amount(u.Resource, u.Borrowed)
}

// amount writes an average amount of a resource in its units, to three
// significant figures; bytes in the largest binary unit below them.
func amount(res string, v float64) string {
	if !core.InBytes(res) || v < 1024 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	unit := 0
	for v >= 1024 && unit < 5 {
		v /= 1024
		unit++
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + []string{"", "Ki", "Mi", "Gi", "Ti", "Pi"}[unit]
}

// WriteComparison writes a comparison as tables: per group, mean and p95
// waits and preemptions under each configuration; then the workloads whose
// wait changed most.
func WriteComparison(w io.Writer, c Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	a := fmt.Sprintf("%d preemptions", c.PreemptionsA)
	if c.Recorded {
		a = fmt.Sprintf("what happened: %d evictions; waits run to each workload's last admission, in both", c.PreemptionsA)
	}
	fmt.Fprintf(tw, "A = %s (%s), B = %s (%d preemptions); admitted in the same order: %.1f %% of pairs\n",
		c.A, a, c.B, c.PreemptionsB, 100*c.OrderAgreement)
	fmt.Fprintln(tw, "BY\tNAME\tADMITTED A\tADMITTED B\tMEAN WAIT A\tMEAN WAIT B\tP95 A\tP95 B\tPREEMPTED A\tPREEMPTED B")
	for _, g := range c.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%s\t%s\t%s\t%s\t%d\t%d\n", g.By, g.Name, g.A.Admitted, g.A.Workloads, g.B.Admitted, g.B.Workloads,
			secs(g.A.Mean), secs(g.B.Mean), secs(g.A.P95), secs(g.B.P95), g.A.Preempted, g.B.Preempted)
	}
	if len(c.Quota) > 0 {
		fmt.Fprintln(tw, "\nCLUSTERQUEUE\tFLAVOR\tRESOURCE\tUSED OF NOMINAL A\tUSED OF NOMINAL B\tBORROWED A\tBORROWED B")
		for _, q := range c.Quota {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.ClusterQueue, q.Flavor, q.Resource, used(q.A), used(q.B),
				borrowed(q.A), borrowed(q.B))
		}
	}
	if len(c.Budgets) > 0 {
		fmt.Fprintln(tw, "\nBUDGET OF\tSPENT FOR A\tSPENT FOR B\tFIRST SPENT AT A\tFIRST SPENT AT B")
		for _, b := range c.Budgets {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", budgetOwner(b.Queue, b.LocalQueue), spentFor(b.A), spentFor(b.B), firstSpent(b.A), firstSpent(b.B))
		}
	}
	if len(c.Changed) > 0 {
		fmt.Fprintln(tw, "\nWORKLOAD\tWAIT A\tWAIT B")
		for _, ch := range c.Changed {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Key, waitText(ch.A, ch.AdmittedA), waitText(ch.B, ch.AdmittedB))
		}
	}
	return tw.Flush()
}

func budgetOwner(queue string, local bool) string {
	if local {
		return "LocalQueue " + queue
	}
	return "ClusterQueue " + queue
}

// spentFor says how long a budget held its queue back; "-" where the
// configuration has no such budget.
func spentFor(u *BudgetUse) string {
	if u == nil {
		return "-"
	}
	return secs(u.SpentFor)
}

func firstSpent(u *BudgetUse) string {
	switch {
	case u == nil:
		return "-"
	case u.FirstSpent == nil:
		return "never"
	}
	return secs(*u.FirstSpent)
}

func waitText(s float64, admitted bool) string {
	if !admitted {
		return "not admitted (" + secs(s) + " at the end)"
	}
	return secs(s)
}

// secs writes seconds as a duration: "9s", "2m30s", "42h0m58s".
func secs(s float64) string {
	if s < 10 {
		return fmt.Sprintf("%.1fs", s)
	}
	return time.Duration(math.Round(s) * float64(time.Second)).String()
}
