package dashboard

import (
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// workersListed is how many of a worker's workloads /api/workers?name= lists.
const workersListed = 100

func (s *Server) workers(w http.ResponseWriter, r *http.Request) {
	var (
		wcs  berthv1.WorkerClusterList
		mccs berthv1.MultiClusterConfigList
		wls  berthv1.WorkloadList
	)
	for _, l := range []client.ObjectList{&wcs, &mccs} {
		if err := s.cache.List(r.Context(), l); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	// Only the workloads dispatched to a worker (workerIndex), not all.
	names := map[string]bool{}
	for _, wc := range wcs.Items {
		names[wc.Name] = true
	}
	for _, mcc := range mccs.Items {
		for _, n := range mcc.Spec.Clusters {
			names[n] = true
		}
	}
	for n := range names {
		var on berthv1.WorkloadList
		if err := s.cache.List(r.Context(), &on, client.MatchingFields{workerIndex: n}, client.UnsafeDisableDeepCopy); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		wls.Items = append(wls.Items, on.Items...)
	}
	name := r.URL.Query().Get("name")
	out := Workers(wcs.Items, mccs.Items, wls.Items, name, workersListed)
	if name != "" && len(out) == 0 {
		http.Error(w, fmt.Sprintf("WorkerCluster %s: not found, and no MultiClusterConfig names it", name), http.StatusNotFound)
		return
	}
	writeJSON(w, out)
}
