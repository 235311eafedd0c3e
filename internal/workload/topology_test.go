package workload

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
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
