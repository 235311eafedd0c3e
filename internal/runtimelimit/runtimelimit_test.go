package runtimelimit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/runtimelimit"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

var t0 = time.Unix(0, 0) // when fixtures admit

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// Time before an eviction counts: a workload with 10 s that ran 4 s, was
// evicted and waited, has 6 s left when admitted again, and is out of run
// time 6 s later, whatever it waited in between.
func TestRunTimeAddsUpOverAdmissions(t *testing.T) {
	wl := MakeWorkload("w", "ns").MaxRunTime(10).Reserved("cq").Obj()
	if out, left, limited := runtimelimit.OutOfRunTime(wl, wl.Spec.MaximumExecutionTimeSeconds, at(4)); out || left != 6*time.Second || !limited {
		t.Errorf("4 s into its first admission: out %v, left %s, limited %v; want false, 6s, true", out, left, limited)
	}
	workload.SetEvicted(wl, "Preempted", "preempted", at(4), true)
	if got := wl.Status.AccumulatedPastExecutionTimeSeconds; got == nil || *got != 4 {
		t.Fatalf("accumulated after the eviction: %v, want 4", got)
	}
	if got := runtimelimit.RunTime(wl, at(100)); got != 4*time.Second {
		t.Errorf("run time while it waits: %s, want 4s (waiting does not count)", got)
	}
	workload.SetAdmitted(wl, &berthv1.Admission{ClusterQueue: "cq"}, nil, at(100))
	if out, left, _ := runtimelimit.OutOfRunTime(wl, wl.Spec.MaximumExecutionTimeSeconds, at(105)); out || left != time.Second {
		t.Errorf("5 s into its second admission: out %v, left %s; want false, 1s", out, left)
	}
	if out, _, _ := runtimelimit.OutOfRunTime(wl, wl.Spec.MaximumExecutionTimeSeconds, at(106)); !out {
		t.Errorf("6 s into its second admission: not out of run time")
	}
	wl.Spec.Active = new(bool)
	reason, msg := workload.Deactivation(wl, at(106))
	if reason != runtimelimit.Exceeded || !strings.Contains(msg, "it ran 10s of its maximum 10s") {
		t.Errorf("deactivation: %s, %q", reason, msg)
	}
	// Released at last, it keeps what it ran.
	workload.SetEvicted(wl, reason, msg, at(107), false)
	if got := *wl.Status.AccumulatedPastExecutionTimeSeconds; got != 11 {
		t.Errorf("accumulated after the second eviction: %d, want 11", got)
	}
}

// Quota reserved while admission checks are pending is not run time: its
// pods do not run until it is Admitted.
func TestOnlyAdmittedTimeCounts(t *testing.T) {
	wl := MakeWorkload("w", "ns").MaxRunTime(10).Reserved("cq", "prov").Obj()
	if got := runtimelimit.RunTime(wl, at(50)); got != 0 {
		t.Errorf("run time with a check pending: %s, want 0", got)
	}
	workload.SetEvicted(wl, "AdmissionCheck", "retry", at(50), true)
	if wl.Status.AccumulatedPastExecutionTimeSeconds != nil {
		t.Errorf("accumulated %d after an eviction before admission, want none", *wl.Status.AccumulatedPastExecutionTimeSeconds)
	}
}

func TestNoLimitNoEnd(t *testing.T) {
	wl := MakeWorkload("w", "ns").Reserved("cq").Obj()
	if out, _, limited := runtimelimit.OutOfRunTime(wl, wl.Spec.MaximumExecutionTimeSeconds, at(1<<30)); out || limited {
		t.Errorf("without a maximum: out %v, limited %v", out, limited)
	}
	wl.Spec.Active = new(bool)
	if reason, _ := workload.Deactivation(wl, at(1<<30)); reason != "Deactivated" {
		t.Errorf("deactivated by hand: reason %s, want Deactivated", reason)
	}
}

func TestLimitOfAClusterQueue(t *testing.T) {
	n := func(v int32) *int32 { return &v }
	show := func(p *int32) string {
		if p == nil {
			return "none"
		}
		return fmt.Sprint(*p)
	}
	for _, tc := range []struct {
		name string
		own  *int32
		p    *berthv1.RunTimePolicy
		want *int32
	}{
		{"no policy, none of its own", nil, nil, nil},
		{"no policy", n(60), nil, n(60)},
		{"its own under the maximum", n(60), &berthv1.RunTimePolicy{DefaultSeconds: n(30), MaximumSeconds: n(100)}, n(60)},
		{"its own over the maximum", n(600), &berthv1.RunTimePolicy{MaximumSeconds: n(100)}, n(100)},
		{"none of its own: the default", nil, &berthv1.RunTimePolicy{DefaultSeconds: n(30), MaximumSeconds: n(100)}, n(30)},
		{"none of its own, a maximum only", nil, &berthv1.RunTimePolicy{MaximumSeconds: n(100)}, n(100)},
		{"an empty policy", n(5), &berthv1.RunTimePolicy{}, n(5)},
	} {
		if got := runtimelimit.Limit(tc.own, tc.p); show(got) != show(tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, show(got), show(tc.want))
		}
	}
}
