package dashboard_test

import (
	"strings"
	"testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/dashboard"
)

// An action names what berth can do; anything else is refused naming the
// field, before any request reaches the API server.
func TestActionCheck(t *testing.T) {
	for _, c := range []struct {
		a    dashboard.Action
		want string // in the error; "" for none
	}{
		{dashboard.Action{Verb: "stop", Kind: "ClusterQueue", Name: "cq"}, ""},
		{dashboard.Action{Verb: "drain", Kind: "LocalQueue", Namespace: "ns", Name: "lq"}, ""},
		{dashboard.Action{Verb: "resume", Kind: "Workload", Namespace: "ns", Name: "w"}, ""},
		{dashboard.Action{Verb: "delete", Kind: "ClusterQueue", Name: "cq"}, `verb "delete"`},
		{dashboard.Action{Verb: "drain", Kind: "Workload", Namespace: "ns", Name: "w"}, "queues only"},
		{dashboard.Action{Verb: "stop", Kind: "Pod", Namespace: "ns", Name: "p"}, `kind "Pod"`},
		{dashboard.Action{Verb: "stop", Kind: "ClusterQueue", Namespace: "ns", Name: "cq"}, `namespace "ns"`},
		{dashboard.Action{Verb: "stop", Kind: "LocalQueue", Name: "lq"}, "namespace: required"},
		{dashboard.Action{Verb: "stop", Kind: "ClusterQueue"}, "name: required"},
	} {
		err := c.a.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v; want %q", c.a, err, c.want)
		}
	}
	for verb, want := range map[string]berthv1.StopPolicy{"stop": berthv1.Hold, "drain": berthv1.HoldAndDrain, "resume": berthv1.StopPolicyNone} {
		if got := (dashboard.Action{Verb: verb}).StopPolicy(); got != want {
			t.Errorf("%s sets %s; want %s", verb, got, want)
		}
	}
}
