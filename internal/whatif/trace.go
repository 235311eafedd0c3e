package whatif

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Trace format: JSON Lines. The first line is a Header; each other line one
// Workload, or one node ({"node": Node}), in any order. Version 2 added the
// nodes and the pod sets' topology requests; version 1 traces are read as
// they are.
const (
	Format  = "berth.dev/trace"
	Version = 2
)

// Header is a trace's first line.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Start is the wall time arrivals count from.
	Start time.Time `json:"start"`
	// Source says where the trace came from (a cluster, a generator).
	Source string `json:"source,omitempty"`
	// Nodes are the cluster's nodes, for replaying topology-aware
	// placement: written and read as lines of their own.
	Nodes []Node `json:"-"`
}

// Node is one node of the cluster a trace was recorded on: what
// topology-aware placement reads of it.
type Node struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Allocatable, as quantities ("8", "32Gi", "110"); the replay places
	// pods in it as if only placed pods ran there.
	Allocatable   map[string]string `json:"allocatable"`
	Taints        []corev1.Taint    `json:"taints,omitempty"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
}

// nodeLine is how a Node is written: a line a Workload never is.
type nodeLine struct {
	Node *Node `json:"node"`
}

// Workload is one workload of a trace: what the replay needs, nothing of
// its object's contents.
type Workload struct {
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	LocalQueue string `json:"localQueue"`
	Priority   int32  `json:"priority,omitempty"`
	// Arrival is seconds after the header's start.
	Arrival float64 `json:"arrival"`
	// Run is how many seconds it runs once admitted (from its start to its
	// end, not to its deletion).
	Run     float64  `json:"run"`
	PodSets []PodSet `json:"podSets"`
	// Admitted is when it was last admitted as recorded, seconds after the
	// header's start: what happened, to compare a replay with
	// (Recorded). A generated trace has none.
	Admitted *float64 `json:"admitted,omitempty"`
	// Evicted is how many times it was evicted (preempted, or sent back
	// for another reason), as recorded; the replay makes its own.
	Evicted int32 `json:"evicted,omitempty"`
}

// PodSet is a group of identical pods of a workload.
type PodSet struct {
	Name  string `json:"name"`
	Count int32  `json:"count"`
	// Requests of one pod, as quantities ("500m", "2Gi").
	Requests map[string]string `json:"requests"`
	// Topology is the placement its pods asked for, if any.
	Topology *berthv1.TopologyRequest `json:"topology,omitempty"`
}

// Key is the workload's namespace/name.
func (w *Workload) Key() string { return w.Namespace + "/" + w.Name }

// ReadTrace reads a trace; an error names the line and the field.
func ReadTrace(r io.Reader) (Header, []Workload, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var h Header
	var out []Workload
	seen := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if h.Format == "" {
			if err := dec.Decode(&h); err != nil {
				return h, nil, fmt.Errorf("line %d: the header: %w", line, err)
			}
			if h.Format != Format || h.Version < 1 || h.Version > Version {
				return h, nil, fmt.Errorf("line %d: the header says format %q version %d; this berth reads %q versions 1 to %d", line, h.Format, h.Version, Format, Version)
			}
			continue
		}
		if strings.Contains(text, `"node"`) {
			// A node's line, or a workload that mentions one.
			var nl nodeLine
			if json.Unmarshal([]byte(text), &nl) == nil && nl.Node != nil {
				strict := json.NewDecoder(strings.NewReader(text))
				strict.DisallowUnknownFields()
				if err := strict.Decode(&nl); err != nil {
					return h, nil, fmt.Errorf("line %d: %w", line, err)
				}
				if err := nl.Node.check(); err != nil {
					return h, nil, fmt.Errorf("line %d: node %s: %w", line, nl.Node.Name, err)
				}
				if at, dup := seen["node "+nl.Node.Name]; dup {
					return h, nil, fmt.Errorf("line %d: node %s: already on line %d", line, nl.Node.Name, at)
				}
				seen["node "+nl.Node.Name] = line
				h.Nodes = append(h.Nodes, *nl.Node)
				continue
			}
		}
		var w Workload
		if err := dec.Decode(&w); err != nil {
			return h, nil, fmt.Errorf("line %d: %w", line, err)
		}
		if err := w.check(); err != nil {
			return h, nil, fmt.Errorf("line %d: workload %s: %w", line, w.Key(), err)
		}
		if at, dup := seen[w.Key()]; dup {
			return h, nil, fmt.Errorf("line %d: workload %s: already on line %d", line, w.Key(), at)
		}
		seen[w.Key()] = line
		out = append(out, w)
	}
	if err := sc.Err(); err != nil {
		return h, nil, err
	}
	if h.Format == "" {
		return h, nil, errors.New("the trace is empty: its first line is a header")
	}
	return h, out, nil
}

func (n *Node) check() error {
	if n.Name == "" {
		return errors.New("name: required")
	}
	for r, q := range n.Allocatable {
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("allocatable[%s]: %w", r, err)
		}
	}
	return nil
}

func (w *Workload) check() error {
	switch {
	case w.Name == "" || w.Namespace == "":
		return errors.New("name and namespace: required")
	case w.LocalQueue == "":
		return errors.New("localQueue: required")
	case w.Arrival < 0:
		return fmt.Errorf("arrival: %v is before the trace's start", w.Arrival)
	case w.Run < 0:
		return fmt.Errorf("run: %v is negative", w.Run)
	case w.Evicted < 0:
		return fmt.Errorf("evicted: %d is negative", w.Evicted)
	case w.Admitted != nil && *w.Admitted < w.Arrival:
		return fmt.Errorf("admitted: %v is before its arrival (%v)", *w.Admitted, w.Arrival)
	case len(w.PodSets) == 0:
		return errors.New("podSets: at least one")
	}
	for i, ps := range w.PodSets {
		if ps.Name == "" || ps.Count < 1 {
			return fmt.Errorf("podSets[%d]: a name and a count of at least 1 are required", i)
		}
		for r, q := range ps.Requests {
			if _, err := resource.ParseQuantity(q); err != nil {
				return fmt.Errorf("podSets[%d].requests[%s]: %w", i, r, err)
			}
		}
		if t := ps.Topology; t != nil {
			modes := 0
			for _, set := range []bool{t.Required != nil, t.Preferred != nil, t.Unconstrained != nil && *t.Unconstrained} {
				if set {
					modes++
				}
			}
			switch {
			case modes != 1:
				return fmt.Errorf("podSets[%d].topology: set one of required, preferred and unconstrained", i)
			case (t.SliceRequiredLevel == nil) != (t.SliceSize == nil):
				return fmt.Errorf("podSets[%d].topology: sliceRequiredLevel and sliceSize go together", i)
			case t.SliceSize != nil && (*t.SliceSize < 1 || ps.Count%*t.SliceSize != 0):
				return fmt.Errorf("podSets[%d].topology.sliceSize: %d does not divide the count %d", i, *t.SliceSize, ps.Count)
			}
		}
	}
	return nil
}

// WriteTrace writes a trace: the header, its nodes, then each workload on
// its line.
func WriteTrace(w io.Writer, h Header, ws []Workload) error {
	h.Format, h.Version = Format, Version
	enc := json.NewEncoder(w)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for i := range h.Nodes {
		if err := enc.Encode(nodeLine{Node: &h.Nodes[i]}); err != nil {
			return err
		}
	}
	for i := range ws {
		if err := enc.Encode(&ws[i]); err != nil {
			return err
		}
	}
	return nil
}
