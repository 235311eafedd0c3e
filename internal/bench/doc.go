// Package bench runs berth's benchmark scenarios against a cluster and
// reports on them: `berth bench <scenario>`.
//
// A Scenario (scenario.go) is data: queues, their quota, and classes of
// workloads arriving on a schedule. What the quota allows at best
// (LowerBound) and the report (Summarize, Markdown) are pure; Run
// (run.go) does the API calls: it clears the last run's objects, makes the
// queues, submits the workloads on schedule, marks each finished once it has
// run for its class's runtime after admission, and records when each was
// created, admitted and finished.
package bench
