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
	if !slices.Equal(on, []string{"batch/job", "pod"}) || !slices.Equal(off, []string{"deployment"}) {
		t.Errorf("on %v, off %v", on, off)
	}
	all, err := integration.ParseSet(integration.All)
	if _, off := all.Split(); err != nil || len(off) != 0 {
		t.Errorf("all: %v, off %v", err, off)
	}
	for names, want := range map[string]string{
		"batch/job,jobset.x-k8s.io/jobset": `"jobset.x-k8s.io/jobset" is not one berth has (batch/job, pod, deployment)`,
		"deployment":                       "deployment needs pod",
	} {
		if _, err := integration.ParseSet(strings.Split(names, ",")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", names, err, want)
		}
	}
}
