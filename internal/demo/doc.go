// Package demo is what `berth up --demo` shows a newcomer: it applies the
// example queues, submits the example mix of Jobs and draws each queue's
// pending, admitted, finished and borrowed work until the Jobs are done.
//
// The view is computed by Summarize and drawn by Render, both pure; Run does
// the API calls around them.
package demo
