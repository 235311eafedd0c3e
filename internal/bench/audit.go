package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/berth-dev/berth/internal/audit"
)

// AuditResult is what the auditor (package audit) found during a run and
// once it ended: a run is only as good as the promises it kept.
type AuditResult struct {
	Violations int      `json:"violations"`
	First      []string `json:"first,omitempty"` // the first ten, in words
	// Dismissed: violations the auditor's cache showed for a moment
	// that a consistent read of the API server did not (audit.Auditor.Dismissed).
	Dismissed int `json:"dismissed,omitempty"`
}

// startAudit audits the bench's ClusterQueues and namespaces (all named
// bench-...) while the run lasts, when on; nil when off. Other work in the
// cluster is not the bench's to vouch for.
func startAudit(ctx context.Context, cfg *rest.Config, on bool) (*audit.Auditor, error) {
	if !on {
		return nil, nil
	}
	a, err := audit.Start(ctx, cfg, 200*time.Millisecond, audit.Scope{NamespacePrefix: "bench-", ClusterQueuePrefix: "bench-"})
	if err != nil {
		return nil, fmt.Errorf("starting the auditor: %w", err)
	}
	return a, nil
}

// endAudit adds the end-state checks to what the auditor saw; running says
// whether workloads may still hold quota at the end. Queue status trails
// the workloads by up to a second or so, and after a fault (a chaos run's
// last) by as long as a new leader takes to win its lease and fill its
// caches, hence tries for up to a minute.
func endAudit(a *audit.Auditor, running bool) *AuditResult {
	if a == nil {
		return nil
	}
	vs := a.Violations()
	var end []audit.Violation
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		end, err = a.Settle(context.Background(), running)
		if (err == nil && len(end) == 0) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		end = append(end, audit.Violation{At: time.Now(), Rule: "AuditFailed", Message: err.Error()})
	}
	vs = append(vs, end...)
	r := &AuditResult{Violations: len(vs), Dismissed: a.Dismissed()}
	for _, v := range vs[:min(10, len(vs))] {
		r.First = append(r.First, v.String())
	}
	return r
}

// auditRow is a summary's line for the audit, when there was one.
func auditRow(b *strings.Builder, r *AuditResult) {
	if r == nil {
		return
	}
	fmt.Fprintf(b, "| auditor: promises broken | %d |\n", r.Violations)
	if r.Dismissed > 0 {
		fmt.Fprintf(b, "| auditor: seen in its cache only, not in a consistent read | %d |\n", r.Dismissed)
	}
	for _, v := range r.First {
		fmt.Fprintf(b, "| | %s |\n", strings.ReplaceAll(v, "|", "/"))
	}
}
