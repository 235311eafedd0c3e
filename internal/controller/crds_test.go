package controller

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/trainjobs"
)

// TrainJobs are on only where both their CRD and JobSet's are served,
// since a TrainJob runs as a JobSet; each missing CRD is named.
func TestTrainJobsNeedJobSets(t *testing.T) {
	mapper := func(served ...schema.GroupVersionKind) meta.RESTMapper {
		m := meta.NewDefaultRESTMapper(nil)
		for _, gvk := range served {
			m.Add(gvk, meta.RESTScopeNamespace)
		}
		return m
	}
	all := integration.Set{integration.BatchJob: true, integration.JobSet: true, integration.TrainJob: true}
	for _, tc := range []struct {
		name    string
		served  []schema.GroupVersionKind
		off     []string
		trainer string // why TrainJobs are off
	}{
		{"both", []schema.GroupVersionKind{trainjobs.GVK, jobsets.GVK}, nil, ""},
		{"no JobSet", []schema.GroupVersionKind{trainjobs.GVK}, []string{integration.JobSet, integration.TrainJob},
			"the JobSet CRD (jobset.x-k8s.io/v1alpha2) is not installed, and TrainJobs run as JobSets"},
		{"no TrainJob", []schema.GroupVersionKind{jobsets.GVK}, []string{integration.TrainJob},
			"the TrainJob CRD (trainer.kubeflow.org/v1alpha1) is not installed"},
	} {
		on, inactive, err := installed(mapper(tc.served...), all)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !on.On(integration.BatchJob) {
			t.Errorf("%s: Jobs off", tc.name)
		}
		for _, name := range []string{integration.JobSet, integration.TrainJob} {
			_, want := inactive[name]
			if off := !on.On(name); off != want || off != slices.Contains(tc.off, name) {
				t.Errorf("%s: %s off %v, inactive %v; want off %v", tc.name, name, off, want, slices.Contains(tc.off, name))
			}
		}
		if got := inactive[integration.TrainJob]; got != tc.trainer {
			t.Errorf("%s: TrainJobs off because %q, want %q", tc.name, got, tc.trainer)
		}
	}
}
