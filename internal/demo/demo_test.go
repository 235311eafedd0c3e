package demo

import (
	"testing"
	"time"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/examples"
	"github.com/berth-dev/berth/internal/manifests"
)

// The demo's Jobs must land on the example queues and finish on the
// simulator's nodes; otherwise `berth up --demo` would wait forever.
func TestDemoJobsUseTheExampleQueuesAndFinish(t *testing.T) {
	jobs, err := demoJobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) == 0 {
		t.Fatal("examples/demo-jobs.yaml has no Jobs")
	}
	queues, err := manifests.Decode(examples.Queues)
	if err != nil {
		t.Fatal(err)
	}
	localQueues := map[string]bool{}
	for _, q := range queues {
		if q.GetKind() == "LocalQueue" {
			localQueues[q.GetNamespace()+"/"+q.GetName()] = true
		}
	}
	for _, j := range jobs {
		if q := j.Namespace + "/" + j.Labels[berthv1.QueueNameLabel]; !localQueues[q] {
			t.Errorf("Job %s/%s: LocalQueue %s is not in examples/queues.yaml", j.Namespace, j.Name, q)
		}
		if j.Labels[Label] != "true" {
			t.Errorf("Job %s/%s: not labelled %s", j.Namespace, j.Name, Label)
		}
		d, err := time.ParseDuration(j.Spec.Template.Annotations["berth.dev/sim-duration"])
		if err != nil || d <= 0 || d > 30*time.Second {
			t.Errorf("Job %s/%s: berth.dev/sim-duration %q: want a duration up to 30s (%v)", j.Namespace, j.Name,
				j.Spec.Template.Annotations["berth.dev/sim-duration"], err)
		}
	}
}
