package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/whatif"
)

// MaxWhatIfBody bounds a What-if request: a trace of a few hundred
// thousand workloads. Longer ones are for berth whatif.
const MaxWhatIfBody = 64 << 20

// whatIfReadTimeout bounds the reading of a What-if request.
const whatIfReadTimeout = time.Minute

func (s *Server) whatIf(w http.ResponseWriter, r *http.Request) {
	// Only JSON: a form another site's page posts here (no preflight)
	// is refused before it costs a replay.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "Content-Type: application/json only (a WhatIfRequest)", http.StatusUnsupportedMediaType)
		return
	}
	// A replay takes the CPU it needs; one at a time.
	if !s.replaying.TryLock() {
		http.Error(w, "another replay is running; try again once it is done", http.StatusTooManyRequests)
		return
	}
	defer s.replaying.Unlock()
	// A client that sends its body slowly holds the replay back from others
	// for this long at most.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(whatIfReadTimeout))
	var req WhatIfRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxWhatIfBody)).Decode(&req); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("the request is over %d MiB: replay a trace this long with berth whatif", MaxWhatIfBody>>20), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	view, err := WhatIf(req, WhatIfCluster{
		Queues:  func() (*whatif.Config, error) { return whatif.ReadConfig(r.Context(), s.cache) },
		History: func() (whatif.Recording, error) { return s.recording(r.Context()) },
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	data, err := json.Marshal(view)
	if err != nil {
		http.Error(w, "the replay's answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// recording records the cluster's Workloads that ran to their end, as berth
// trace record --names does, with its nodes where it places by topology
// (read from the API server: the dashboard does not watch nodes).
func (s *Server) recording(ctx context.Context) (whatif.Recording, error) {
	var (
		wls  berthv1.WorkloadList
		tops berthv1.TopologyList
	)
	if err := s.cache.List(ctx, &wls); err != nil {
		return whatif.Recording{}, err
	}
	if err := s.cache.List(ctx, &tops); err != nil {
		return whatif.Recording{}, err
	}
	rec := whatif.FromWorkloads(wls.Items, time.Time{}, true)
	if len(tops.Items) > 0 {
		var nodes corev1.NodeList
		if err := s.api.List(ctx, &nodes); err != nil {
			return whatif.Recording{}, fmt.Errorf("listing nodes: %w", err)
		}
		rec.Nodes = whatif.NodesOf(nodes.Items)
	}
	return rec, nil
}
