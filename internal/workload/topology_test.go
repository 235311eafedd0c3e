package workload

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/topology"
)

// Every conversion of a topology request and of a placement round-trips
// losslessly, through the API types and their JSON as stored (lesson 1: a
// conversion that drops levels must be caught here, not by a crash).
func FuzzTopologyRoundTrip(f *testing.F) {
	f.Add(uint8(0), "topology.berth.dev/rack", "kubernetes.io/hostname", int32(4), "b1", "r3", int32(8))
	f.Add(uint8(2), "", "", int32(0), "", "", int32(0))
	f.Fuzz(func(t *testing.T, mode uint8, level, sliceLevel string, sliceSize int32, v1, v2 string, count int32) {
		for _, s := range []string{level, sliceLevel, v1, v2} {
			if !utf8.ValidString(s) {
				t.Skip("labels and their values are UTF-8 (the API server checks them)")
			}
		}
		req := &topology.Request{Mode: []topology.Mode{topology.Required, topology.Preferred, topology.Unconstrained}[mode%3]}
		if req.Mode != topology.Unconstrained {
			req.Level = level
		}
		if sliceSize != 0 {
			req.SliceLevel, req.SliceSize = sliceLevel, sliceSize
		}
		var api berthv1.TopologyRequest
		roundTripJSON(t, APITopologyRequest(req), &api)
		if got := TopologyRequestOf(&api); !reflect.DeepEqual(got, req) {
			t.Fatalf("request %+v came back as %+v", req, got)
		}

		a := &topology.Assignment{Levels: []string{level, sliceLevel},
			Domains: []topology.Domain{{Values: []string{v1, v2}, Count: count}, {Values: []string{v2, v1}, Count: count / 2}}}
		var stored berthv1.TopologyAssignment
		roundTripJSON(t, TopologyAssignmentOf(a), &stored)
		if !reflect.DeepEqual(stored.Levels, a.Levels) || !reflect.DeepEqual(DomainsOf(&stored), a.Domains) {
			t.Fatalf("assignment %+v came back as %+v", a, stored)
		}
	})
}

func roundTripJSON(t *testing.T, in, out any) {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

// A repair is written only over the placement it started from: a Workload
// repaired, evicted or placed anew since is left as it is.
func TestApplyRepair(t *testing.T) {
	levels := []string{"rack", "kubernetes.io/hostname"}
	admitted := func(domains ...berthv1.TopologyDomainAssignment) *berthv1.Workload {
		return &berthv1.Workload{Status: berthv1.WorkloadStatus{Admission: &berthv1.Admission{ClusterQueue: "cq",
			PodSetAssignments: []berthv1.PodSetAssignment{{Name: "main", Count: 4,
				TopologyAssignment: &berthv1.TopologyAssignment{Levels: levels, Domains: domains}}}}}}
	}
	h0 := berthv1.TopologyDomainAssignment{Values: []string{"r0", "h0"}, Count: 2}
	h1 := berthv1.TopologyDomainAssignment{Values: []string{"r0", "h1"}, Count: 2}
	h2 := berthv1.TopologyDomainAssignment{Values: []string{"r0", "h2"}, Count: 2}
	r := core.Repair{Key: "ns/w",
		Before:  map[string][]topology.Domain{"main": DomainsOf(&berthv1.TopologyAssignment{Domains: []berthv1.TopologyDomainAssignment{h0, h1}})},
		PodSets: map[string][]topology.Domain{"main": DomainsOf(&berthv1.TopologyAssignment{Domains: []berthv1.TopologyDomainAssignment{h1, h2}})}}

	w := admitted(h0, h1)
	if !ApplyRepair(w, r) {
		t.Fatal("a repair of the placement it started from was refused")
	}
	if got := w.Status.Admission.PodSetAssignments[0].TopologyAssignment; !reflect.DeepEqual(got.Domains, []berthv1.TopologyDomainAssignment{h1, h2}) ||
		!reflect.DeepEqual(got.Levels, levels) {
		t.Errorf("after the repair: %+v", got)
	}
	if ApplyRepair(w, r) {
		t.Error("a repair was written twice")
	}
	evicted := admitted(h0, h1)
	evicted.Status.Admission = nil
	if ApplyRepair(evicted, r) {
		t.Error("a repair was written into a Workload without an admission")
	}
}
