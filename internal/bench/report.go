package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/chaos"
)

// Record is what a run saw of one workload.
type Record struct {
	Name, Class string
	// Cohort is the index of the cohort its queue is in.
	Cohort int
	// Offsets from the start of the run; Admitted is the first admission.
	Created, Admitted, Finished time.Duration
	WasAdmitted, WasFinished    bool
	Evictions                   int
	// Released are the moments the run saw an admission end without a
	// finish (an eviction), Readmitted those it saw the next ones begin.
	Released, Readmitted []time.Duration
}

// Results is results.json.
type Results struct {
	Scenario  string    `json:"scenario"`
	Scale     float64   `json:"scale"`
	Date      time.Time `json:"date"`
	Version   string    `json:"version"`
	Workloads int       `json:"workloads"`
	Finished  int       `json:"finished"`
	Evictions int       `json:"evictions"`
	// WallSeconds runs from the first workload's arrival to the last one's
	// finish; LowerBoundSeconds is what the quota allows at best.
	WallSeconds       float64 `json:"wallSeconds"`
	LowerBoundSeconds float64 `json:"lowerBoundSeconds"`
	WallOverBound     float64 `json:"wallOverBound"`
	QuotaUtilisation  float64 `json:"quotaUtilisation"` // cpu-seconds run / (nominal cpu x wall)
	// QuotaTime says what the quota not used was doing.
	QuotaTime *QuotaTime    `json:"quotaTime,omitempty"`
	Classes   []ClassResult `json:"classes"`
	// From the processes of a berth instance, when the run had one.
	APIServerCPUSeconds       *float64 `json:"apiServerCPUSeconds,omitempty"`
	APIServerCPUMsPerWorkload *float64 `json:"apiServerCPUMsPerWorkload,omitempty"`
	ControllerPeakRSSMiB      *float64 `json:"controllerPeakRSSMiB,omitempty"`
	// The private part of it: RSS less the shared pages of the berth binary.
	ControllerPeakAnonMiB *float64 `json:"controllerPeakAnonMiB,omitempty"`
	// CPU time berth's controller used during the run.
	ControllerCPUSeconds *float64 `json:"controllerCPUSeconds,omitempty"`
	// Throughput: admissions per second once the queues are released,
	// against status writes per second by a client alone.
	AdmissionsPerSecond      float64      `json:"admissionsPerSecond,omitempty"`
	RawStatusWritesPerSecond float64      `json:"rawStatusWritesPerSecond,omitempty"`
	AdmissionsOverRawWrites  float64      `json:"admissionsOverRawWrites,omitempty"`
	Audit                    *AuditResult `json:"audit,omitempty"`
	// Cost is CPU per process, writes by client and profiles.
	Cost Cost `json:"cost"`
	// Faults injected (berth bench chaos), and each kind's recovery.
	Faults   []chaos.Result  `json:"faults,omitempty"`
	Recovery []chaos.Summary `json:"recovery,omitempty"`
}

// ClassResult is one class's times to admission, from arrival.
type ClassResult struct {
	Name                      string  `json:"name"`
	Count                     int     `json:"count"` // admitted
	Planned                   int     `json:"planned"`
	AvgTimeToAdmissionSeconds float64 `json:"avgTimeToAdmissionSeconds"`
	MaxTimeToAdmissionSeconds float64 `json:"maxTimeToAdmissionSeconds"`
	// AvgHeldPastRuntimeSeconds is how long, on average, a workload held
	// its quota beyond its runtime: from the run seeing it admitted to
	// seeing it finished, less the runtime (workloads never evicted only).
	// It is the finishing write and the watches' delay, quota no one uses.
	AvgHeldPastRuntimeSeconds float64 `json:"avgHeldPastRuntimeSeconds"`
}

// Summarize computes the results of a run from its records.
func Summarize(s *Scenario, scale float64, records []Record, bound time.Duration) Results {
	r := Results{Scenario: s.Name, Scale: scale, Workloads: len(records), LowerBoundSeconds: bound.Seconds()}
	var first, last time.Duration = -1, 0
	work := 0.0
	cpu := map[string]*Class{}
	for i := range s.Classes {
		cpu[s.Classes[i].Name] = &s.Classes[i]
	}
	sums := map[string]*ClassResult{}
	held := map[string]int{} // how many workloads AvgHeldPastRuntimeSeconds sums
	for _, c := range s.Classes {
		sums[c.Name] = &ClassResult{Name: c.Name}
	}
	for _, rec := range records {
		if first < 0 || rec.Created < first {
			first = rec.Created
		}
		r.Evictions += rec.Evictions
		if rec.WasFinished {
			r.Finished++
			last = max(last, rec.Finished)
			if c := cpu[rec.Class]; c != nil {
				work += float64(c.CPU) * c.Runtime.Seconds()
			}
		}
		if cr := sums[rec.Class]; cr != nil {
			cr.Planned++
			if c := cpu[rec.Class]; rec.WasAdmitted && rec.WasFinished && rec.Evictions == 0 {
				cr.AvgHeldPastRuntimeSeconds += (rec.Finished - rec.Admitted - c.Runtime).Seconds()
				held[rec.Class]++
			}
		}
		if cr := sums[rec.Class]; cr != nil && rec.WasAdmitted {
			wait := (rec.Admitted - rec.Created).Seconds()
			cr.Count++
			cr.AvgTimeToAdmissionSeconds += wait
			cr.MaxTimeToAdmissionSeconds = max(cr.MaxTimeToAdmissionSeconds, wait)
		}
	}
	if first >= 0 && last > first {
		r.WallSeconds = (last - first).Seconds()
	}
	if r.WallSeconds > 0 {
		r.QuotaUtilisation = work / (float64(int64(s.Cohorts*s.QueuesPerCohort)*s.NominalCPU) * r.WallSeconds)
		qt := quotaTime(s, records, first, last)
		r.QuotaTime = &qt
	}
	if r.LowerBoundSeconds > 0 {
		r.WallOverBound = r.WallSeconds / r.LowerBoundSeconds
	}
	for _, c := range s.Classes {
		cr := sums[c.Name]
		if cr.Count > 0 {
			cr.AvgTimeToAdmissionSeconds /= float64(cr.Count)
		}
		if held[c.Name] > 0 {
			cr.AvgHeldPastRuntimeSeconds /= float64(held[c.Name])
		}
		r.Classes = append(r.Classes, *cr)
	}
	return r
}

func controllerMemoryRows(b *strings.Builder, rss, anon *float64) {
	if rss != nil {
		fmt.Fprintf(b, "| berth controller peak RSS | %.0f MiB |\n", *rss)
	}
	if anon != nil {
		fmt.Fprintf(b, "| berth controller peak private memory | %.0f MiB |\n", *anon)
	}
}

// Markdown is the run's summary for people.
func Markdown(r Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# berth bench %s\n\n", r.Scenario)
	fmt.Fprintf(&b, "Scale %g, %s, berth %s.\n\n", r.Scale, r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Version)
	fmt.Fprintf(&b, "| measure | value |\n|---|---|\n")
	if r.RawStatusWritesPerSecond > 0 {
		admitted := 0
		for _, c := range r.Classes {
			admitted += c.Count
		}
		fmt.Fprintf(&b, "| workloads admitted | %d of %d |\n", admitted, r.Workloads)
		fmt.Fprintf(&b, "| admissions per second | %.0f |\n", r.AdmissionsPerSecond)
		fmt.Fprintf(&b, "| raw status writes per second | %.0f |\n", r.RawStatusWritesPerSecond)
		fmt.Fprintf(&b, "| admissions / raw writes | %.2f |\n", r.AdmissionsOverRawWrites)
	} else {
		fmt.Fprintf(&b, "| workloads finished | %d of %d |\n", r.Finished, r.Workloads)
		fmt.Fprintf(&b, "| wall time | %.1f s |\n", r.WallSeconds)
		fmt.Fprintf(&b, "| lower bound the quota allows | %.1f s |\n", r.LowerBoundSeconds)
		fmt.Fprintf(&b, "| wall time / lower bound | %.2f |\n", r.WallOverBound)
		fmt.Fprintf(&b, "| quota utilisation | %.0f %% |\n", 100*r.QuotaUtilisation)
		if q := r.QuotaTime; q != nil {
			fmt.Fprintf(&b, "| quota held past the runtime (finishing) | %.0f %% |\n", 100*q.HeldPastRuntime)
			fmt.Fprintf(&b, "| quota held by work then preempted | %.0f %% |\n", 100*q.Preempted)
			fmt.Fprintf(&b, "| quota idle, nothing waiting | %.0f %% |\n", 100*q.IdleNothingWaiting)
			fmt.Fprintf(&b, "| quota idle, waiting work would fit | %.0f %% |\n", 100*q.IdleWaitingFits)
			fmt.Fprintf(&b, "| quota idle, waiting work too large for it | %.0f %% |\n", 100*q.IdleWaitingTooBig)
		}
	}
	fmt.Fprintf(&b, "| evictions (preemptions) | %d |\n", r.Evictions)
	if r.APIServerCPUSeconds != nil {
		fmt.Fprintf(&b, "| kube-apiserver CPU | %.1f s |\n", *r.APIServerCPUSeconds)
	}
	if r.APIServerCPUMsPerWorkload != nil {
		fmt.Fprintf(&b, "| kube-apiserver CPU per workload | %.1f ms |\n", *r.APIServerCPUMsPerWorkload)
	}
	if r.ControllerCPUSeconds != nil {
		fmt.Fprintf(&b, "| berth controller CPU | %.1f s |\n", *r.ControllerCPUSeconds)
	}
	controllerMemoryRows(&b, r.ControllerPeakRSSMiB, r.ControllerPeakAnonMiB)
	costRows(&b, r.Cost, r.Workloads, "workload")
	auditRow(&b, r.Audit)
	for _, f := range r.Recovery {
		what := f.Component + " killed"
		if f.Component == chaos.LeaderPause {
			what = "leader paused past its lease"
		}
		fmt.Fprintf(&b, "| %s | %d (%d failed); recovered in median %.1f s, at most %.1f s |\n",
			what, f.Faults, f.Failed, f.Median.Seconds(), f.Max.Seconds())
	}
	fmt.Fprintf(&b, "\n| class | admitted | average time to admission | longest | quota held past the runtime |\n|---|---|---|---|---|\n")
	for _, c := range r.Classes {
		fmt.Fprintf(&b, "| %s | %d | %.2f s | %.2f s | %.2f s |\n", c.Name, c.Count, c.AvgTimeToAdmissionSeconds,
			c.MaxTimeToAdmissionSeconds, c.AvgHeldPastRuntimeSeconds)
	}
	perClass := map[string]int{}
	for _, c := range r.Classes {
		perClass[c.Name] = c.Planned
	}
	writesTable(&b, r.Cost, perClass, r.Workloads, "workload")
	return b.String()
}

// summaryHead starts a summary of the runs on the simulator: title, run,
// and the wall time against its bound.
func summaryHead(b *strings.Builder, scenario string, scale float64, date time.Time, version string, wall, bound float64) {
	fmt.Fprintf(b, "# berth bench %s\n\n", scenario)
	fmt.Fprintf(b, "Scale %g, %s, berth %s.\n\n", scale, date.UTC().Format("2006-01-02 15:04 MST"), version)
	fmt.Fprintf(b, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(b, "| wall time | %.1f s |\n| lower bound the quota allows | %.1f s |\n", wall, bound)
}

// summaryCosts ends such a summary with what the run cost: API server CPU,
// controller memory and API writes per pod, each when it was measured.
func summaryCosts(b *strings.Builder, apiCPU, rss, anon *float64, writes map[string]float64, pods int, audit *AuditResult, cost Cost) {
	if apiCPU != nil {
		fmt.Fprintf(b, "| kube-apiserver CPU | %.1f s |\n", *apiCPU)
	}
	controllerMemoryRows(b, rss, anon)
	writesRow(b, writes, pods)
	costRows(b, cost, pods, "pod")
	auditRow(b, audit)
	writesTable(b, cost, nil, pods, "pod")
}
