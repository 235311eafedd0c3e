package raydashboard

import (
	"fmt"
	"strconv"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	utiltypes "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/types"
)

// The annotations a simulated pod's life is told by (package stage's
// pod-finish), read here from a RayCluster.
const (
	DurationAnnotation = "berth.dev/sim-duration"
	ExitCodeAnnotation = "berth.dev/sim-exit-code"
)

// JobInfo is what the dashboard of a simulated cluster, made at created
// with annotations, says at now of its Ray job id: RUNNING until the
// duration has passed since created, then SUCCEEDED, or FAILED with a
// non-zero exit code. A duration or exit code that cannot be read makes
// the job FAILED at once, saying why, rather than run for ever.
func JobInfo(id string, annotations map[string]string, created, now time.Time) utiltypes.RayJobInfo {
	start := uint64(max(created.UnixMilli(), 0))
	info := utiltypes.RayJobInfo{JobId: id, SubmissionId: id, JobStatus: rayv1.JobStatusRunning, StartTime: start,
		Message: "simulated by berth: no " + DurationAnnotation + ", it runs until stopped"}
	raw, ok := annotations[DurationAnnotation]
	if !ok {
		return info
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		info.JobStatus, info.EndTime = rayv1.JobStatusFailed, start
		info.Message = fmt.Sprintf("simulated by berth: annotation %s: %q is not a duration such as 30s", DurationAnnotation, raw)
		return info
	}
	code := 0
	if c, ok := annotations[ExitCodeAnnotation]; ok {
		if code, err = strconv.Atoi(c); err != nil {
			info.JobStatus, info.EndTime = rayv1.JobStatusFailed, start
			info.Message = fmt.Sprintf("simulated by berth: annotation %s: %q is not a whole number", ExitCodeAnnotation, c)
			return info
		}
	}
	end := created.Add(d)
	if now.Before(end) {
		info.Message = fmt.Sprintf("simulated by berth: runs for %s", d)
		return info
	}
	info.EndTime = uint64(max(end.UnixMilli(), 0))
	if code != 0 {
		info.JobStatus, info.Message = rayv1.JobStatusFailed, fmt.Sprintf("simulated by berth: ended after %s with exit code %d", d, code)
		return info
	}
	info.JobStatus, info.Message = rayv1.JobStatusSucceeded, fmt.Sprintf("simulated by berth: ended after %s", d)
	return info
}
