package dashboard

import (
	"fmt"
	"net/http"
)

func (s *Server) chart(w http.ResponseWriter, r *http.Request) {
	cq := r.URL.Query().Get("clusterQueue")
	if cq == "" {
		http.Error(w, "query parameter clusterQueue: required", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	var (
		c  Chart
		ok bool
	)
	if s.history != nil {
		c, ok = s.history.Of(cq)
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, fmt.Sprintf("ClusterQueue %s: no history (not there when last sampled)", cq), http.StatusNotFound)
		return
	}
	writeJSON(w, c)
}
