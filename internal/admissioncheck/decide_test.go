package admissioncheck_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/admissioncheck"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	checks := []string{"budget", "capacity"}
	reserved := func() *WorkloadWrapper { return MakeWorkload("w", "ns").Queue("q").Reserved("cq", checks...) }
	for name, tc := range map[string]struct {
		w       *berthv1.Workload
		want    admissioncheck.Action
		message string
	}{
		"pending checks wait":       {w: reserved().Obj(), want: admissioncheck.Wait},
		"one of two Ready waits":    {w: reserved().Check("budget", berthv1.CheckReady, "").Obj(), want: admissioncheck.Wait},
		"all Ready admit":           {w: reserved().Check("budget", berthv1.CheckReady, "").Check("capacity", berthv1.CheckReady, "").Obj(), want: admissioncheck.Admit},
		"no quota, nothing to do":   {w: MakeWorkload("w", "ns").Check("budget", berthv1.CheckRejected, "").Obj(), want: admissioncheck.Wait},
		"inactive, already leaving": {w: reserved().Inactive().Check("budget", berthv1.CheckRejected, "").Obj(), want: admissioncheck.Wait},
		"retry gives quota back": {w: reserved().Check("capacity", berthv1.CheckRetry, "no nodes yet").Obj(),
			want: admissioncheck.Retry, message: "admission check capacity asked to retry later: no nodes yet"},
		"rejected beats retry": {w: reserved().Check("capacity", berthv1.CheckRetry, "").Check("budget", berthv1.CheckRejected, "over budget").Obj(),
			want: admissioncheck.Reject, message: "admission check budget rejected the workload: over budget"},
		"a check may take back its Ready": {w: func() *berthv1.Workload {
			w := reserved().Check("budget", berthv1.CheckReady, "").Check("capacity", berthv1.CheckReady, "").Obj()
			workload.SetChecksPassed(w, now)
			w.Status.AdmissionChecks[1].State = berthv1.CheckRetry
			return w
		}(), want: admissioncheck.Retry, message: "admission check capacity asked to retry later"},
		"a check added to the queue is synced": {w: MakeWorkload("w", "ns").Reserved("cq", "budget").Obj(), want: admissioncheck.Sync},
		"admitted without checks":              {w: MakeWorkload("w", "ns").Reserved("cq").Obj(), want: admissioncheck.Wait},
	} {
		t.Run(name, func(t *testing.T) {
			d := admissioncheck.Decide(tc.w, checks)
			if d.Action != tc.want || (tc.message != "" && d.Message != tc.message) {
				t.Errorf("got %+v, want action %d message %q", d, tc.want, tc.message)
			}
		})
	}
}

// Admit sets Admitted True, naming the checks that passed.
func TestApplyAdmit(t *testing.T) {
	w := MakeWorkload("w", "ns").Reserved("cq", "budget").Check("budget", berthv1.CheckReady, "").Obj()
	if workload.IsAdmitted(w) {
		t.Fatal("admitted before its check was Ready")
	}
	d := admissioncheck.Decide(w, []string{"budget"})
	admissioncheck.Apply(w, d, []string{"budget"}, now)
	c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadAdmitted)
	if !workload.IsAdmitted(w) || !strings.Contains(c.Message, "admission checks budget are Ready") {
		t.Errorf("Admitted %+v", c)
	}
}

// Sync keeps a decided state, adds a new check as Pending in the queue's
// order, and drops one the queue no longer asks for; with nothing left
// Pending the next decision admits.
func TestApplySync(t *testing.T) {
	w := MakeWorkload("w", "ns").Reserved("cq", "old", "budget").Check("budget", berthv1.CheckReady, "ok").Obj()
	checks := []string{"budget", "capacity"}
	admissioncheck.Apply(w, admissioncheck.Decide(w, checks), checks, now)
	var got []string
	for _, c := range w.Status.AdmissionChecks {
		got = append(got, c.Name+"="+string(c.State))
	}
	if want := []string{"budget=Ready", "capacity=Pending"}; !slices.Equal(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
	admissioncheck.Apply(w, admissioncheck.Decide(w, []string{"budget"}), []string{"budget"}, now)
	if d := admissioncheck.Decide(w, []string{"budget"}); d.Action != admissioncheck.Admit {
		t.Errorf("after the queue dropped capacity: %+v, want Admit", d)
	}
}

// A queue that drops all its checks admits what waited for them.
func TestQueueWithoutChecksAdmits(t *testing.T) {
	w := MakeWorkload("w", "ns").Reserved("cq", "budget").Obj()
	d := admissioncheck.Decide(w, nil)
	admissioncheck.Apply(w, d, nil, now)
	c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadAdmitted)
	if d.Action != admissioncheck.Admit || !workload.IsAdmitted(w) || c.Message != "admitted by ClusterQueue cq" || len(w.Status.AdmissionChecks) != 0 {
		t.Errorf("%+v: %+v, checks %+v", d, c, w.Status.AdmissionChecks)
	}
}

// A reservation starts the checks afresh: states a check left from an
// earlier reservation (Retry) do not carry over.
func TestReservationResetsStates(t *testing.T) {
	w := MakeWorkload("w", "ns").Reserved("cq", "capacity").Check("capacity", berthv1.CheckRetry, "").Obj()
	workload.SetEvicted(w, admissioncheck.RetryReason, "retry", now, true)
	workload.SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, []string{"capacity"}, now)
	if d := admissioncheck.Decide(w, []string{"capacity"}); d.Action != admissioncheck.Wait || w.Status.AdmissionChecks[0].State != berthv1.CheckPending {
		t.Errorf("after a new reservation: %+v, states %+v", d, w.Status.AdmissionChecks)
	}
}

// Rejection is what a deactivated workload is told, on its eviction and
// while it waits.
func TestDeactivationNamesTheRejectingCheck(t *testing.T) {
	w := MakeWorkload("w", "ns").Reserved("cq", "budget").Check("budget", berthv1.CheckRejected, "over budget").Inactive().Obj()
	reason, msg := workload.Deactivation(w, time.Now())
	if reason != "AdmissionCheckRejected" || msg != "admission check budget rejected the workload: over budget; it is deactivated (spec.active is false)" {
		t.Errorf("%s: %s", reason, msg)
	}
	if reason, _ := workload.Deactivation(MakeWorkload("w", "ns").Inactive().Obj(), time.Now()); reason != "Deactivated" {
		t.Errorf("deactivated by a user: %s", reason)
	}
}
