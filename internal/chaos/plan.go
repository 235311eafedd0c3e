package chaos

import (
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

// Fault is one fault: Component killed (or the leader paused, for
// LeaderPause), At after the run's submissions began.
type Fault struct {
	At        time.Duration `json:"at"`
	Component string        `json:"component"`
}

// Plan spreads n faults over span, taking kinds in turn, so each gets its
// share (n / len(kinds), the first ones one more), in an order and at
// moments drawn from seed. The moments are the earliest each fault may
// come: the injector also waits for its victim to have been up a while.
func Plan(seed uint64, kinds []string, n int, span time.Duration) []Fault {
	if len(kinds) == 0 || n <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	order := make([]string, n)
	for i := range order {
		order[i] = kinds[i%len(kinds)]
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(r.Int64N(int64(span) + 1))
	}
	slices.Sort(at)
	out := make([]Fault, n)
	for i := range out {
		out[i] = Fault{At: at[i], Component: order[i]}
	}
	return out
}
