package bench

import (
	"context"
	"math"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// E2EJobSetsAt is e2e-jobsets: 1,000 JobSets at scale 1, each of 2
// replicated Jobs (a driver and a worker) of one pod of 1 cpu, on 100 cpu
// of quota. Kueue publishes no JobSet shape of its own; this is E2EJobs'
// with the pods of a unit in two Jobs. Parallelism counts the pods of one
// JobSet.
func E2EJobSetsAt(scale float64) E2EJobs {
	return E2EJobs{Jobs: max(2, int(math.Round(1000*scale))), Parallelism: 2, Nodes: 10, QuotaCPU: 100, Duration: 2 * time.Second}
}

// RunE2EJobSets runs e2e-jobsets as RunE2EJobs runs e2e-jobs; the instance
// must run the JobSet controller (berth up --with jobset).
func RunE2EJobSets(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, e E2EJobs, scale float64, o Options) (*JobResults, error) {
	return runE2E(ctx, cfg, kubeconfig, bin, e, scale, o, e2eKind{scenario: "e2e-jobsets", what: "JobSets", unitLabel: jobsetv1.JobSetNameKey,
		create: func(ctx context.Context, c client.Client, name string) error {
			return c.Create(ctx, benchJobSet(name, e.Parallelism, e.Duration))
		}})
}

// benchJobSet is a JobSet of the bench's in its queue: replicated Jobs
// (driver, worker-1, ...), one of each, of one pod like benchJob's.
func benchJobSet(name string, jobs int, d time.Duration) *jobsetv1.JobSet {
	js := &jobsetv1.JobSet{ObjectMeta: benchJob(name, jobsQueue, 1, d).ObjectMeta}
	js.Labels[berthv1.QueueNameLabel] = "bench"
	for i := range jobs {
		rj := "driver"
		if i > 0 {
			rj = "worker-" + strconv.Itoa(i)
		}
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, jobsetv1.ReplicatedJob{Name: rj, Replicas: 1,
			Template: batchv1.JobTemplateSpec{Spec: benchJob(name, jobsQueue, 1, d).Spec}})
	}
	return js
}
