// Package demo is what `berth up --demo` shows a newcomer: it applies the
// example queues, submits the example mix of Jobs and draws, until the Jobs
// are done, the queues' cohort tree as `berth top` shows it (internal/top)
// and each queue's pending, admitted and finished Jobs.
//
// The Jobs' view is computed by Summarize and drawn by Render, both pure;
// Run does the API calls around them.
package demo
