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
	Trace     string       `json:"trace"`
	TraceName string       `json:"traceName"`
	Plans     []WhatIfPlan `json:"plans"`
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
	Workloads  int               `json:"workloads"`
	Comparison whatif.Comparison `json:"comparison"`
	Chart      plot.Chart        `json:"chart"`
}

// whatIfTop is how many of the workloads whose wait changed most are listed.
const whatIfTop = 20

// ThisCluster is the name a plan of the cluster's own queues goes by.
const ThisCluster = "this cluster"

// WhatIf replays the request's trace against its two plans; cluster reads
// the cluster's queues, for a plan that asks for them, of which the part
// the trace reaches is replayed (whatif.Config.Reached).
func WhatIf(req WhatIfRequest, cluster func() (*whatif.Config, error)) (*WhatIfView, error) {
	traceName := req.TraceName
	if traceName == "" {
		traceName = "the trace"
	}
	if strings.TrimSpace(req.Trace) == "" {
		return nil, errors.New("trace: required, a trace file as berth trace record or berth trace generate writes it (docs/whatif.md)")
	}
	if len(req.Plans) != 2 {
		return nil, fmt.Errorf("plans: two to compare (%d given)", len(req.Plans))
	}
	header, trace, err := whatif.ReadTrace(strings.NewReader(req.Trace))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", traceName, err)
	}
	var results [2]*whatif.Result
	for i, p := range req.Plans {
		var cfg *whatif.Config
		switch {
		case p.ThisCluster && p.YAML != "":
			return nil, fmt.Errorf("plan %d (%s): either this cluster's queues or a file, not both", i+1, p.Name)
		case p.ThisCluster:
			all, err := cluster()
			if err != nil {
				return nil, fmt.Errorf("plan %d (%s): reading the cluster's queues: %w", i+1, ThisCluster, err)
			}
			cfg = all.Reached(trace)
			cfg.Name = ThisCluster
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
	return &WhatIfView{Workloads: len(trace), Comparison: whatif.Compare(results[0], results[1], whatIfTop),
		Chart: whatif.Chart(results[0], results[1])}, nil
}
