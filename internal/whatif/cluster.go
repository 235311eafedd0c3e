package whatif

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// ThisCluster is the name a configuration read from a cluster goes by.
const ThisCluster = "this cluster"

// ReadConfig reads a cluster's queue configuration: its ResourceFlavors,
// Cohorts, ClusterQueues, LocalQueues, Topologies and Namespaces, named
// ThisCluster. A replay takes the part of it a trace reaches (Reached),
// checked (Check): a cluster holds queues a trace never touches, some of
// them of what a replay refuses.
func ReadConfig(ctx context.Context, r client.Reader) (*Config, error) {
	var (
		rfs  berthv1.ResourceFlavorList
		cos  berthv1.CohortList
		cqs  berthv1.ClusterQueueList
		lqs  berthv1.LocalQueueList
		tops berthv1.TopologyList
		nss  corev1.NamespaceList
	)
	for _, l := range []client.ObjectList{&rfs, &cos, &cqs, &lqs, &tops, &nss} {
		if err := r.List(ctx, l); err != nil {
			return nil, fmt.Errorf("reading the cluster's queues: %w", err)
		}
	}
	return &Config{Name: ThisCluster, Flavors: rfs.Items, Cohorts: cos.Items, ClusterQueues: cqs.Items,
		LocalQueues: lqs.Items, Topologies: tops.Items, Namespaces: nss.Items}, nil
}
