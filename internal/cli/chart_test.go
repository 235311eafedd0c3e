package cli

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/internal/admissionfairsharing"
	"github.com/berth-dev/berth/internal/helmchart"
	"github.com/berth-dev/berth/internal/manifests"
)

// chartArgs renders berth's chart with vals and returns the args of its
// Deployment name's container.
func chartArgs(t *testing.T, vals map[string]any, name string) []string {
	t.Helper()
	ch, err := helmchart.Load("../../" + helmchart.Dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := helmchart.Render(ch, "berth-system", vals)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Args
	}
	t.Fatalf("the chart rendered no Deployment %s", name)
	return nil
}

// Every flag berth's chart gives the controller, with every value set, is
// one `berth controller` has, with a value it takes: a value renamed on
// one side only fails here, not in a user's cluster.
func TestChartGivesTheControllerItsOwnFlags(t *testing.T) {
	args := chartArgs(t, map[string]any{
		"controller": map[string]any{"fairSharing": true, "manageJobsWithoutQueueName": true, "kubeAPIQPS": 100, "kubeAPIBurst": 200,
			"origin": "manager-1", "workerLostTimeout": "2m", "dispatchSpreadAfter": "0s", "nodeFailureDelay": "1m", "logLevel": "debug",
			"admissionFairSharing": map[string]any{"halfLife": "2h", "samplingInterval": "30s", "resourceWeights": map[string]any{"nvidia.com/gpu": 10, "cpu": 0.5}},
			"integrations":         []any{"batch/job", "pod"},
			"waitForPodsReady": map[string]any{"enabled": true, "timeout": "10m", "backoffBase": "30s", "backoffMax": "2h",
				"requeueLimit": 4, "blockAdmission": true},
			"leaderElection": map[string]any{"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "5s"}},
		"certManager": map[string]any{"enabled": true},
	}, "berth-controller")
	if len(args) == 0 || args[0] != "controller" {
		t.Fatalf("the chart runs berth %v; want berth controller", args)
	}
	if err := newControllerCommand().Flags().Parse(args[1:]); err != nil {
		t.Errorf("berth controller %v: %v", args[1:], err)
	}
	// A map of values becomes one flag the controller reads back.
	want := "--admission-fair-sharing-resource-weights=cpu=0.5,nvidia.com/gpu=10"
	if !slices.Contains(args, want) {
		t.Errorf("berth controller %v: no %s", args[1:], want)
	} else if w, err := admissionfairsharing.ParseWeights(strings.TrimPrefix(want, "--admission-fair-sharing-resource-weights=")); err != nil || w["cpu"] != 0.5 {
		t.Errorf("%s reads as %v, %v", want, w, err)
	}
}

// The chart's dashboard runs `berth dashboard` with flags it has.
func TestChartGivesTheDashboardItsOwnFlags(t *testing.T) {
	args := chartArgs(t, map[string]any{"dashboard": map[string]any{"enabled": true, "allowActions": true}}, "berth-dashboard")
	if len(args) == 0 || args[0] != "dashboard" {
		t.Fatalf("the chart runs berth %v; want berth dashboard", args)
	}
	if err := newDashboardCommand().Flags().Parse(args[1:]); err != nil {
		t.Errorf("berth dashboard %v: %v", args[1:], err)
	}
}
