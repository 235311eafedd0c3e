package dashboard

import (
	"context"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// tenantsRead is the virtual clusters, read for every page that asks
// within relatedTTL: their syncers' accounts and their pods are read from
// the API server, not watched.
type tenantsRead struct {
	at  time.Time
	vcs []VirtualCluster
	err error
}

func (s *Server) vclusters(w http.ResponseWriter, r *http.Request) {
	read := s.readTenants(r.Context())
	if read.err != nil {
		http.Error(w, read.err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, read.vcs)
}

func (s *Server) readTenants(ctx context.Context) tenantsRead {
	s.relatedMu.Lock()
	defer s.relatedMu.Unlock()
	if time.Since(s.tenants.at) < relatedTTL {
		return s.tenants
	}
	read := tenantsRead{vcs: []VirtualCluster{}}
	var (
		syncers corev1.ServiceAccountList
		pods    corev1.PodList
		lqs     berthv1.LocalQueueList
		wls     []berthv1.Workload
	)
	synced := client.HasLabels{translate.Label}
	read.err = s.api.List(ctx, &syncers, synced)
	if read.err == nil && len(syncers.Items) > 0 {
		read.err = s.api.List(ctx, &pods, synced)
	}
	if read.err == nil {
		read.err = s.cache.List(ctx, &lqs)
	}
	// Only the host namespaces' workloads.
	seen := map[string]bool{}
	for _, sa := range syncers.Items {
		if read.err != nil || seen[sa.Namespace] {
			continue
		}
		seen[sa.Namespace] = true
		var in berthv1.WorkloadList
		read.err = s.cache.List(ctx, &in, client.InNamespace(sa.Namespace), client.UnsafeDisableDeepCopy)
		wls = append(wls, in.Items...)
	}
	if read.err == nil {
		read.vcs = VirtualClusters(syncers.Items, lqs.Items, pods.Items, wls)
	}
	read.at = time.Now()
	s.tenants = read
	return read
}
