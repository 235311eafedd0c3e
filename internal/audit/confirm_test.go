package audit

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
	. "github.com/berth-dev/berth/test/fixtures"
)

// A quota excess the cache showed counts only if a consistent read shows
// it too: one that the API server does not hold is dismissed, and counted.
func TestConfirmKeepsOnlyWhatAConsistentReadShows(t *testing.T) {
	cq := MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "4").Obj()).Obj()
	a1, a2 := admitted("a1", "cq", "3", now), admitted("a2", "cq", "3", now)
	seen := Quota(Snapshot{At: now, ClusterQueues: []*berthv1.ClusterQueue{cq}, Workloads: []*berthv1.Workload{a1, a2}})
	if len(seen) != 1 {
		t.Fatalf("the cache's view: %s; want one excess", rules(seen))
	}
	for _, tc := range []struct {
		name   string
		stored []client.Object
		want   int
	}{
		{"the API server holds only one of them", []client.Object{cq, a1}, 0},
		{"the API server holds both", []client.Object{cq, a1, a2}, 1},
		// a1 finished and a3 came in its place: still over, by other workloads.
		{"the API server holds another excess in the same queue", []client.Object{cq, a2, admitted("a3", "cq", "2", now)}, 1},
	} {
		c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(tc.stored...).WithStatusSubresource().Build()
		a := &Auditor{client: c, scope: Scope{NamespacePrefix: "ns"}}
		if got := a.confirm(context.Background(), seen); len(got) != tc.want {
			t.Errorf("%s: kept %s; want %d", tc.name, rules(got), tc.want)
		}
	}
}
