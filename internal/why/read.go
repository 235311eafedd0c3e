package why

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Read reads what Explain needs of the cluster (all but the Workload
// itself), from the API server or a cache: `berth why` and the dashboard
// both. Explain only reads the workloads, so a cache need not copy them.
func Read(ctx context.Context, r client.Reader) (Input, error) {
	in := Input{Now: time.Now(), NamespaceLabel: map[string]labels.Set{}}
	var (
		lqs     berthv1.LocalQueueList
		cqs     berthv1.ClusterQueueList
		cohorts berthv1.CohortList
		rfs     berthv1.ResourceFlavorList
		checks  berthv1.AdmissionCheckList
		wls     berthv1.WorkloadList
		nss     corev1.NamespaceList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"LocalQueues", &lqs, nil}, {"ClusterQueues", &cqs, nil}, {"Cohorts", &cohorts, nil},
		{"ResourceFlavors", &rfs, nil}, {"AdmissionChecks", &checks, nil}, {"Namespaces", &nss, nil},
		{"Workloads", &wls, []client.ListOption{client.UnsafeDisableDeepCopy}},
	} {
		if err := r.List(ctx, l.list, l.opts...); err != nil {
			return in, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	in.LocalQueues, in.ClusterQueues, in.Cohorts, in.Flavors = lqs.Items, cqs.Items, cohorts.Items, rfs.Items
	in.Checks, in.Workloads = checks.Items, wls.Items
	for _, ns := range nss.Items {
		in.NamespaceLabel[ns.Name] = ns.Labels
	}
	return in, nil
}
