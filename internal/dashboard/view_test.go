package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func pending(name string, prio int32, age time.Duration, why string) *berthv1.Workload {
	w := MakeWorkload(name, "ns").Queue("lq").Priority(prio).Obj()
	w.CreationTimestamp = metav1.NewTime(t0.Add(-age))
	if why != "" {
		w.Status.Conditions = []metav1.Condition{{Type: berthv1.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending", Message: why}}
	}
	return w
}

// Pending workloads are listed by priority, then age, with why each
// waits; admitted ones apart; those of other queues and finished ones not
// at all; pages cut the list.
func TestWorkloadsOfAClusterQueue(t *testing.T) {
	lqs := map[string]string{"ns/lq": "cq", "ns/other": "cq2"}
	old := pending("old", 1, time.Hour, "needs 4 cpu; 2 available")
	young := pending("young", 1, time.Minute, "")
	urgent := pending("urgent", 9, 0, "")
	elsewhere := pending("elsewhere", 9, 0, "")
	elsewhere.Spec.QueueName = "other"
	running := MakeWorkload("running", "ns").Queue("lq").Reserved("cq").Obj()
	done := pending("done", 1, time.Hour, "")
	workload.SetFinished(done, "Succeeded", "done", t0)
	all := []*berthv1.Workload{young, old, running, elsewhere, done, urgent}

	p, err := dashboard.Workloads(all, lqs, "cq", "", dashboard.Pending, 0, 10, nil, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range p.Rows {
		names = append(names, r.Name)
	}
	if p.Total != 3 || strings.Join(names, ",") != "urgent,old,young" {
		t.Fatalf("pending %d %v; want urgent, old, young", p.Total, names)
	}
	if p.Rows[1].Why != "needs 4 cpu; 2 available" || p.Rows[1].Position != 2 || p.Rows[2].Why == "" {
		t.Errorf("rows %+v", p.Rows)
	}
	a, err := dashboard.Workloads(all, lqs, "cq", "", dashboard.Admitted, 0, 10, nil, nil, t0)
	if err != nil || a.Total != 1 || a.Rows[0].Name != "running" {
		t.Errorf("admitted %+v %v; want running alone", a, err)
	}
	second, err := dashboard.Workloads(all, lqs, "cq", "", dashboard.Pending, 1, 1, nil, nil, t0)
	if err != nil || second.Total != 3 || len(second.Rows) != 1 || second.Rows[0].Name != "old" {
		t.Errorf("second page of one: %+v %v", second, err)
	}
}

// One LocalQueue's workloads keep their places in the ClusterQueue's whole
// line; the page names the LocalQueues to choose from.
func TestWorkloadsOfOneLocalQueue(t *testing.T) {
	lqs := map[string]string{"ns/lq": "cq", "ns/team-b": "cq", "ns/other": "cq2"}
	first := pending("first", 9, 0, "")
	second := pending("second", 5, 0, "")
	second.Spec.QueueName = "team-b"
	third := pending("third", 1, 0, "")
	fourth := pending("fourth", 0, 0, "")
	fourth.Spec.QueueName = "team-b"
	all := []*berthv1.Workload{third, fourth, first, second}
	p, err := dashboard.Workloads(all, lqs, "cq", "ns/team-b", dashboard.Pending, 0, 10, nil, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Rows {
		got = append(got, fmt.Sprintf("%d %s", r.Position, r.Name))
	}
	if p.Total != 2 || strings.Join(got, ", ") != "2 second, 4 fourth" {
		t.Errorf("team-b's: %d %v; want second at 2 and fourth at 4", p.Total, got)
	}
	if strings.Join(p.LocalQueues, ",") != "ns/lq,ns/team-b" {
		t.Errorf("LocalQueues to choose from: %v; want ns/lq and ns/team-b", p.LocalQueues)
	}
	if next, err := dashboard.Workloads(all, lqs, "cq", "ns/team-b", dashboard.Pending, 1, 1, nil, nil, t0); err != nil ||
		len(next.Rows) != 1 || next.Rows[0].Name != "fourth" {
		t.Errorf("its second row: %+v %v; want fourth", next, err)
	}
}

// With the ClusterQueue's aging, a workload that has waited long enough
// goes before a younger one of higher priority, as berth takes them.
func TestWorkloadsInLineWithAging(t *testing.T) {
	lqs := map[string]string{"ns/lq": "cq"}
	old := pending("old", 1, time.Hour, "")
	urgent := pending("urgent", 5, 0, "")
	aging := &core.Aging{Step: 1, Interval: 10 * time.Minute, Cap: 10}
	for a, want := range map[*core.Aging]string{nil: "urgent", aging: "old"} {
		p, err := dashboard.Workloads([]*berthv1.Workload{urgent, old}, lqs, "cq", "", dashboard.Pending, 0, 10, a, nil, t0)
		if err != nil || p.Rows[0].Name != want {
			t.Errorf("aging %+v: %+v %v; want %s first", a, p.Rows, err, want)
		}
	}
}

// Where the ClusterQueue orders by LocalQueue usage, a quieter queue's
// workload goes before a busier one's of higher priority, as berth takes
// them.
func TestWorkloadsInLineByLocalQueueUsage(t *testing.T) {
	lqs := map[string]string{"ns/lq": "cq", "ns/quiet": "cq"}
	urgent := pending("urgent", 5, time.Hour, "")
	calm := pending("calm", 1, 0, "")
	calm.Spec.QueueName = "quiet"
	for scores, want := range map[*map[string]float64]string{{}: "urgent", {"ns/lq": 3, "ns/quiet": 1}: "calm"} {
		p, err := dashboard.Workloads([]*berthv1.Workload{urgent, calm}, lqs, "cq", "", dashboard.Pending, 0, 10, nil, *scores, t0)
		if err != nil || p.Rows[0].Name != want {
			t.Errorf("scores %v: %+v %v; want %s first", *scores, p.Rows, err, want)
		}
	}
}

// What a query may ask is bounded, and a bad one is refused naming it.
func TestWorkloadsRefusesBadQueries(t *testing.T) {
	for _, tc := range []struct {
		state         string
		offset, limit int
		want          string
	}{
		{"finished", 0, 10, `state "finished"`},
		{dashboard.Pending, -1, 10, "offset -1"},
		{dashboard.Pending, 0, 0, "limit 0"},
		{dashboard.Pending, 0, dashboard.MaxLimit + 1, "limit 501"},
	} {
		if _, err := dashboard.Workloads(nil, nil, "cq", "", tc.state, tc.offset, tc.limit, nil, nil, t0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want refused with %q", tc, err, tc.want)
		}
	}
}

// A request naming another host (a page elsewhere reaching the dashboard
// through a name that points at 127.0.0.1) is refused; the page is served
// with a policy that lets it load nothing from elsewhere.
func TestHandlerAnswersLoopbackHostsOnly(t *testing.T) {
	var s dashboard.Server
	h := s.Handler()
	for host, want := range map[string]int{"127.0.0.1:4000": http.StatusOK, "localhost:4000": http.StatusOK, "evil.example:4000": http.StatusForbidden} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
		if want == http.StatusOK && (!strings.Contains(rec.Body.String(), "app.js") ||
			!strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'")) {
			t.Errorf("Host %s: page %q, policy %q", host, rec.Body.String(), rec.Header().Get("Content-Security-Policy"))
		}
	}
}
