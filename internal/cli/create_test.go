package cli

import (
	"slices"
	"strings"
	"testing"
)

func TestClusterQueueOf(t *testing.T) {
	f := clusterQueueFlags{flavor: "default", cohort: "shared", strategy: "StrictFIFO", namespaces: "all",
		quota: "cpu=10,memory=20Gi", borrowing: "cpu=4", admissionChecks: []string{"budget"}}
	cq, err := f.ClusterQueueOf("team-a")
	if err != nil {
		t.Fatal(err)
	}
	rq := cq.Spec.ResourceGroups[0].Flavors[0].Resources
	if cq.Spec.Cohort != "shared" || len(rq) != 2 || rq[0].Name != "cpu" || rq[0].BorrowingLimit.String() != "4" ||
		!slices.Equal(cq.Spec.AdmissionChecks, []string{"budget"}) || cq.Spec.QueueingStrategy != "StrictFIFO" {
		t.Errorf("%+v", cq.Spec)
	}
	for _, tc := range []struct {
		flags clusterQueueFlags
		want  string
	}{
		{clusterQueueFlags{strategy: "BestEffortFIFO", namespaces: "all"}, "--quota is required"},
		{clusterQueueFlags{strategy: "BestEffortFIFO", namespaces: "all", quota: "cpu=1", lending: "gpu=1"}, "--lending-limit gpu: gpu has no --quota"},
		{clusterQueueFlags{strategy: "LIFO", namespaces: "all", quota: "cpu=1"}, `--strategy "LIFO"`},
	} {
		if _, err := tc.flags.ClusterQueueOf("q"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.flags, err, tc.want)
		}
	}
}
