package integration_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

func TestLabelsAreReadOneWayForEveryKind(t *testing.T) {
	both := map[string]string{berthv1.QueueNameLabel: "b", berthv1.KueueQueueNameLabel: "k",
		berthv1.PriorityClassLabel: "bp", berthv1.KueuePriorityClassLabel: "kp"}
	if q := integration.QueueName(both); q != "b" {
		t.Errorf("queue %q: berth's label goes first", q)
	}
	if l, c := integration.PriorityClassLabel(both); l != berthv1.PriorityClassLabel || c != "bp" {
		t.Errorf("priority class %s=%s: berth's label goes first", l, c)
	}
	kueue := map[string]string{berthv1.KueueQueueNameLabel: "k", berthv1.KueuePriorityClassLabel: "kp"}
	if q := integration.QueueName(kueue); q != "k" {
		t.Errorf("queue %q from Kueue's label", q)
	}
	if l, c := integration.PriorityClassLabel(kueue); l != berthv1.KueuePriorityClassLabel || c != "kp" {
		t.Errorf("priority class %s=%s from Kueue's label", l, c)
	}
}

func TestWorkloadNameIsStableAndFitsAName(t *testing.T) {
	a := integration.WorkloadName("pod", "web", "uid-1")
	if a != integration.WorkloadName("pod", "web", "uid-1") || a == integration.WorkloadName("pod", "web", "uid-2") {
		t.Errorf("name %q: want the same for the same object, another for a new one", a)
	}
	long := integration.WorkloadName("job", strings.Repeat("x", 300), "u")
	if len(long) > 253 || !strings.HasPrefix(long, "job-") {
		t.Errorf("name of a long object: %d characters, %q...", len(long), long[:10])
	}
}

func TestInjectFlavorsAddsLabelsAndTolerationsOnce(t *testing.T) {
	spec := &corev1.PodSpec{NodeSelector: map[string]string{"team": "a"}}
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}
	rf := &berthv1.ResourceFlavor{Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "p"},
		Tolerations: []corev1.Toleration{spot}}}
	integration.InjectFlavors(spec, []*berthv1.ResourceFlavor{rf, rf})
	if spec.NodeSelector["team"] != "a" || spec.NodeSelector["pool"] != "p" || len(spec.Tolerations) != 1 {
		t.Errorf("node selector %v tolerations %v", spec.NodeSelector, spec.Tolerations)
	}
}

func TestTopologyRequestOf(t *testing.T) {
	rack, host := "topology.berth.dev/rack", "kubernetes.io/hostname"
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want string // the request as JSON, or the error
	}{
		{"none", nil, "null"},
		{"required", map[string]string{integration.RequiredTopologyAnnotation: rack}, `{"required":"topology.berth.dev/rack"}`},
		{"Kueue's preferred", map[string]string{"kueue.x-k8s.io/podset-preferred-topology": rack}, `{"preferred":"topology.berth.dev/rack"}`},
		{"unconstrained", map[string]string{integration.UnconstrainedTopologyAnnotation: "true"}, `{"unconstrained":true}`},
		{"slices", map[string]string{integration.RequiredTopologyAnnotation: rack, integration.SliceTopologyAnnotation: host, integration.SliceSizeAnnotation: "2"},
			`{"required":"topology.berth.dev/rack","sliceRequiredLevel":"kubernetes.io/hostname","sliceSize":2}`},
		{"two modes", map[string]string{integration.RequiredTopologyAnnotation: rack, "kueue.x-k8s.io/podset-preferred-topology": rack},
			"annotations berth.dev/podset-required-topology and kueue.x-k8s.io/podset-preferred-topology: set only one"},
		{"slice alone", map[string]string{integration.SliceTopologyAnnotation: host, integration.SliceSizeAnnotation: "2"},
			"annotation berth.dev/podset-slice-required-topology needs a required, preferred or unconstrained topology annotation too"},
		{"slice without size", map[string]string{integration.RequiredTopologyAnnotation: rack, integration.SliceTopologyAnnotation: host},
			"go together"},
		{"bad size", map[string]string{integration.RequiredTopologyAnnotation: rack, integration.SliceTopologyAnnotation: host, integration.SliceSizeAnnotation: "0"},
			`annotation berth.dev/podset-slice-size="0": want a whole number of pods, 1 or more`},
		{"empty level", map[string]string{integration.RequiredTopologyAnnotation: ""}, "annotation berth.dev/podset-required-topology is empty"},
		{"not a bool", map[string]string{integration.UnconstrainedTopologyAnnotation: "yes"}, `want true or false`},
	} {
		req, err := integration.TopologyRequestOf(tc.ann)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			raw, _ := json.Marshal(req)
			got = string(raw)
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s\nwant %s", tc.name, got, tc.want)
		}
		if (tc.ann != nil) != integration.HasTopologyAnnotations(tc.ann) {
			t.Errorf("%s: HasTopologyAnnotations %v", tc.name, integration.HasTopologyAnnotations(tc.ann))
		}
	}
}

// A topology request written as annotations reads back as itself: the first
// conversion of the placement path loses nothing.
func FuzzTopologyAnnotationsRoundTrip(f *testing.F) {
	f.Add(uint8(0), "topology.berth.dev/rack", "kubernetes.io/hostname", int32(2), false)
	f.Add(uint8(2), "", "", int32(0), true)
	f.Fuzz(func(t *testing.T, mode uint8, level, sliceLevel string, size int32, kueue bool) {
		if level == "" || sliceLevel == "" {
			t.Skip("levels are node labels, never empty")
		}
		want := berthv1.TopologyRequest{}
		ann := map[string]string{}
		prefix := "berth.dev/"
		if kueue {
			prefix = "kueue.x-k8s.io/"
		}
		switch mode % 3 {
		case 0:
			want.Required = &level
			ann[prefix+"podset-required-topology"] = level
		case 1:
			want.Preferred = &level
			ann[prefix+"podset-preferred-topology"] = level
		default:
			yes := true
			want.Unconstrained = &yes
			ann[prefix+"podset-unconstrained-topology"] = "true"
		}
		if size > 0 {
			want.SliceRequiredLevel, want.SliceSize = &sliceLevel, &size
			ann[prefix+"podset-slice-required-topology"] = sliceLevel
			ann[prefix+"podset-slice-size"] = strconv.Itoa(int(size))
		}
		got, err := integration.TopologyRequestOf(ann)
		if err != nil {
			t.Fatalf("annotations %v: %v", ann, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("annotations %v read as %+v, want %+v", ann, got, want)
		}
	})
}
