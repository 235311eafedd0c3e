package core

import (
	"fmt"
	"strings"
)

// SetAdmissionCheck adds or updates an AdmissionCheck: active is its Active
// condition.
func (c *Cluster) SetAdmissionCheck(name string, active bool) {
	c.checks[name] = active
	c.refreshActive()
}

// DeleteAdmissionCheck removes an AdmissionCheck; the queues that name it
// go inactive until it is back.
func (c *Cluster) DeleteAdmissionCheck(name string) {
	delete(c.checks, name)
	c.refreshActive()
}

// checkProblem says why a ClusterQueue's admission checks keep it from
// admitting, or "": a workload that reserved quota behind a check nobody
// decides would hold that quota for ever.
func (c *Cluster) checkProblem(q *cqNode) string {
	var missing, inactive []string
	for _, name := range q.spec.AdmissionChecks {
		active, ok := c.checks[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case !active:
			inactive = append(inactive, name)
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Sprintf("AdmissionCheck %s not found", strings.Join(missing, ", "))
	case len(inactive) > 0:
		return fmt.Sprintf("AdmissionCheck %s not Active", strings.Join(inactive, ", "))
	}
	return ""
}
