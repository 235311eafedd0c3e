package integration_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/integration"
)

func TestParseSet(t *testing.T) {
	s, err := integration.ParseSet([]string{"batch/job", " pod"})
	if err != nil {
		t.Fatal(err)
	}
	on, off := s.Split()
	if !slices.Equal(on, []string{"batch/job", "pod"}) || !slices.Equal(off, []string{"deployment", "statefulset", "jobset.x-k8s.io/jobset", "leaderworkerset.x-k8s.io/leaderworkerset", "trainer.kubeflow.org/trainjob"}) {
		t.Errorf("on %v, off %v", on, off)
	}
	all, err := integration.ParseSet(integration.All)
	if _, off := all.Split(); err != nil || len(off) != 0 {
		t.Errorf("all: %v, off %v", err, off)
	}
	for names, want := range map[string]string{
		"batch/job,kubeflow.org/mpijob":            `"kubeflow.org/mpijob" is not one berth has (batch/job, pod, deployment, statefulset, jobset.x-k8s.io/jobset, leaderworkerset.x-k8s.io/leaderworkerset, trainer.kubeflow.org/trainjob)`,
		"deployment":                               "deployment needs pod",
		"statefulset":                              "statefulset needs pod",
		"leaderworkerset.x-k8s.io/leaderworkerset": "leaderworkerset.x-k8s.io/leaderworkerset needs pod",
	} {
		if _, err := integration.ParseSet(strings.Split(names, ",")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", names, err, want)
		}
	}
}

func TestWithoutSwitchesOneOff(t *testing.T) {
	s, err := integration.ParseSet(integration.All)
	if err != nil {
		t.Fatal(err)
	}
	less := s.Without(integration.JobSet)
	if less.On(integration.JobSet) || !less.On(integration.BatchJob) || !s.On(integration.JobSet) {
		t.Errorf("without JobSet: %v; the set it came from: %v", less, s)
	}
}
