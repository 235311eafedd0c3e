// Package bench runs berth's benchmark scenarios against a cluster and
// reports on them: `berth bench <scenario>`.
//
// A Scenario (scenario.go) is data: queues, their quota, and classes of
// workloads arriving on a schedule. What the quota allows at best
// (LowerBound) and the report (Summarize, Markdown) are pure; Run
// (run.go) does the API calls: it clears the last run's objects and makes
// the queues (setup.go), submits the workloads on schedule, marks each
// finished once it has run for its class's runtime after admission, and
// records when each was created, admitted and finished (tracker.go), while
// sampling the API server's CPU and the controller's memory (sampling.go).
// RunE2EJobs (jobs.go) and RunSimScale (simscale.go) are the other runners;
// all connect through clients.go.
package bench
