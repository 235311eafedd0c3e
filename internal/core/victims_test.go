package core_test

import (
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

func TestVictimsComeFromTheBorrowedEnd(t *testing.T) {
	runPreempt(t, preemptCase{
		name: "victims come from the borrowed end when admission times tie",
		cqs: []core.ClusterQueue{
			cpuQueue("a", "co", "2", core.PreemptNever, core.PreemptNever).Obj(),
			cpuQueue("b", "co", "2", core.PreemptNever, core.PreemptAny).Obj()},
		running: []*AdmittedWrapper{
			Running("a0", "a").AdmittedAt(time.Second).Use("f", "cpu", "1"),
			Running("a1", "a").AdmittedAt(time.Second).Use("f", "cpu", "1"),
			Running("a2", "a").AdmittedAt(time.Second).Use("f", "cpu", "1"),
			Running("a3", "a").AdmittedAt(time.Second).Use("f", "cpu", "1"),
		},
		head:        MakeWorkload("b0", "b").Request("cpu", "1").Obj(),
		wantVictims: map[string]string{"a3": core.InCohortReclamation},
	})
}
