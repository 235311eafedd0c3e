package dashboard

import (
	"errors"
	"fmt"
	"strings"

	"github.com/berth-dev/berth/internal/bench/plot"
	"github.com/berth-dev/berth/internal/whatif"
)

// WhatIfRequest is what the What-if page sends: a trace and the two plans
// to replay it against, as `berth whatif --config A --config B` does.
type WhatIfRequest struct {
	// Trace is a trace file's text (docs/whatif.md); TraceName its name.
	Trace     string `json:"trace,omitempty"`
	TraceName string `json:"traceName,omitempty"`
	// History, instead of a trace, replays the cluster's own finished
	// workloads, as berth trace record --names records them.
	History bool         `json:"history,omitempty"`
	Plans   []WhatIfPlan `json:"plans"`
	// FairSharing replays as berth controller --fair-sharing does.
	FairSharing bool `json:"fairSharing"`
}

// WhatIfPlan is a queue configuration: a file's YAML (docs/whatif.md), or
// the cluster's queues as the dashboard sees them (ThisCluster).
type WhatIfPlan struct {
	Name        string `json:"name"`
	YAML        string `json:"yaml,omitempty"`
	ThisCluster bool   `json:"thisCluster,omitempty"`
}

// WhatIfView is the answer: the comparison `berth whatif` prints, and
// its chart's lines.
type WhatIfView struct {
	Workloads int `json:"workloads"`
	// Left counts the workloads of the cluster's history left out of the
	// replay, by why (whatif.Recording.Skipped).
	Left       map[string]int    `json:"left,omitempty"`
	Comparison whatif.Comparison `json:"comparison"`
	Chart      plot.Chart        `json:"chart"`
}

// whatIfTop is how many of the workloads whose wait changed most are listed.
const whatIfTop = 20

// WhatIfCluster reads what a request may ask of the cluster the dashboard
// is served from: its queues, and its history (a recording of its
// Workloads, with its nodes where it places by topology).
type WhatIfCluster struct {
	Queues  func() (*whatif.Config, error)
	History func() (whatif.Recording, error)
}

// WhatIf replays the request's trace (or the cluster's history) against its
// two plans; a plan of the cluster's queues replays the part of them the
// trace reaches (whatif.Config.Reached).
func WhatIf(req WhatIfRequest, cluster WhatIfCluster) (*WhatIfView, error) {
	traceName := req.TraceName
	if traceName == "" {
		traceName = "the trace"
	}
	hasTrace := strings.TrimSpace(req.Trace) != ""
	switch {
	case hasTrace && req.History:
		return nil, errors.New("trace: either a trace file or this cluster's history, not both")
	case !hasTrace && !req.History:
		return nil, errors.New("trace: required, a trace file as berth trace record or berth trace generate writes it (docs/whatif.md), or this cluster's history")
	case len(req.Plans) != 2:
		return nil, fmt.Errorf("plans: two to compare (%d given)", len(req.Plans))
	}
	var (
		header whatif.Header
		trace  []whatif.Workload
		left   map[string]int
		err    error
	)
	if req.History {
		rec, err := cluster.History()
		if err != nil {
			return nil, fmt.Errorf("reading this cluster's history: %w", err)
		}
		if len(rec.Workloads) == 0 {
			return nil, errors.New("this cluster's history has no workload that ran to its end yet: nothing to replay")
		}
		header, trace, left = whatif.Header{Start: rec.Start, Nodes: rec.Nodes}, rec.Workloads, rec.Skipped
	} else if header, trace, err = whatif.ReadTrace(strings.NewReader(req.Trace)); err != nil {
		return nil, fmt.Errorf("%s: %w", traceName, err)
	}
	var results [2]*whatif.Result
	for i, p := range req.Plans {
		var cfg *whatif.Config
		switch {
		case p.ThisCluster && p.YAML != "":
			return nil, fmt.Errorf("plan %d (%s): either this cluster's queues or a file, not both", i+1, p.Name)
		case p.ThisCluster:
			all, err := cluster.Queues()
			if err != nil {
				return nil, fmt.Errorf("plan %d (%s): %w", i+1, whatif.ThisCluster, err)
			}
			cfg = all.Reached(trace)
			if err := cfg.Check(); err != nil {
				return nil, fmt.Errorf("plan %d: %w", i+1, err)
			}
		case strings.TrimSpace(p.YAML) == "":
			return nil, fmt.Errorf("plan %d (%s): a configuration file, or this cluster's queues", i+1, p.Name)
		default:
			name := p.Name
			if name == "" {
				name = fmt.Sprintf("plan %d", i+1)
			}
			if cfg, err = whatif.ParseConfig(name, []byte(p.YAML)); err != nil {
				return nil, fmt.Errorf("plan %d: %w", i+1, err)
			}
		}
		if results[i], err = whatif.Replay(cfg, header.Start, trace, whatif.Options{FairSharing: req.FairSharing, Nodes: header.Nodes}); err != nil {
			return nil, fmt.Errorf("plan %d: %w", i+1, err)
		}
	}
	if results[0].Config == results[1].Config {
		// The page tells the plans apart by name.
		results[0].Config += " (A)"
		results[1].Config += " (B)"
	}
	return &WhatIfView{Workloads: len(trace), Left: left, Comparison: whatif.Compare(results[0], results[1], whatIfTop),
		Chart: whatif.Chart(results[0], results[1])}, nil
}
