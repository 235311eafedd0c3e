package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Components berth's chaos runs kill, in the names `berth status` gives them.
var Components = []string{"berth-controller", "kube-apiserver", "etcd", "berth-sim"}

// LeaderPause is the fault of pausing (SIGSTOP) whichever of two controller
// replicas leads, past its lease, then letting it go on (SIGCONT).
const LeaderPause = "leader-pause"

// Kinds are the faults of a run: the components' kills, and leader pauses
// when the controller runs with leader election beside a second replica.
func Kinds(pause bool) []string {
	if pause {
		return append(slices.Clone(Components), LeaderPause)
	}
	return Components
}

// ControllerExits counts the faults of a plan that end the controller
// component's process: its kills, and the pauses (a paused leader exits
// when it resumes, and either replica may be the one paused). They share the
// crash-loop limit of `berth up`.
func ControllerExits(plan []Fault) int {
	n := 0
	for _, f := range plan {
		if f.Component == Components[0] || f.Component == LeaderPause {
			n++
		}
	}
	return n
}

// Fault is one kill: of Component, At after the run's submissions began.
type Fault struct {
	At        time.Duration `json:"at"`
	Component string        `json:"component"`
}

// Plan spreads n kills over span, taking components from kinds in turn, so
// each gets its share (n / len(kinds), the first ones one more), in an order
// and at moments drawn from seed. No component is killed more than perKind
// times: `berth up` gives up on a component that exits five times in five
// minutes, as a kubelet would call it a crash loop.
func Plan(seed uint64, kinds []string, n int, span time.Duration, perKind int) ([]Fault, error) {
	if len(kinds) == 0 || n <= 0 {
		return nil, nil
	}
	if n > perKind*len(kinds) {
		return nil, fmt.Errorf("%d faults of %d kinds: at most %d of each kind in one run", n, len(kinds), perKind)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	order := make([]string, n)
	for i := range order {
		order[i] = kinds[i%len(kinds)]
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	// Moments: n draws over span, sorted; the injector also waits for each
	// victim to come back before the next kill, so these are earliest times.
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(r.Int64N(int64(span) + 1))
	}
	slices.Sort(at)
	out := make([]Fault, n)
	for i := range out {
		out[i] = Fault{At: at[i], Component: order[i]}
	}
	return out, nil
}
