package workercluster

import (
	"fmt"
	"time"
)

// Finalizer holds a WorkerCluster being deleted until the manager's copies
// on that worker are deleted: otherwise its Jobs would run on there with
// no one to stop them.
const Finalizer = "berth.dev/worker-copies"

// Removal says whether a WorkerCluster being deleted may go, given what
// reaching it led to (reason, as in its Active condition), how many of the
// manager's copies are left there, and for how long it has not been
// reached:
//   - reached: once no copy is left;
//   - its kubeconfig cannot reach anything (no Secret, a refused
//     kubeconfig): at once, since nothing could be collected;
//   - not reached: after lostTimeout, the time after which its workloads
//     are given up on too; its copies, if any, are left there.
//
// note says what it waits for, or what it leaves behind.
func Removal(reason string, left int, unreachableFor, lostTimeout time.Duration) (done bool, note string) {
	switch reason {
	case Connected:
		if left == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("being removed: deleting %d copies of this manager's workloads there", left)
	case SecretNotFound, BadKubeconfig:
		return true, "removed without deleting what this manager copied there: its kubeconfig cannot reach it"
	}
	if unreachableFor >= lostTimeout {
		return true, fmt.Sprintf("removed without deleting what this manager copied there: not reached for %s", lostTimeout)
	}
	return false, fmt.Sprintf("being removed: waiting up to %s for it to be reached, to delete this manager's copies there",
		(lostTimeout - unreachableFor).Round(time.Second))
}
