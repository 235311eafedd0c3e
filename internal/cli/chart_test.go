package cli

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/internal/helmchart"
	"github.com/berth-dev/berth/internal/manifests"
)

// Every flag berth's chart gives the controller, with every value set, is
// one `berth controller` has, with a value it takes: a value renamed on
// one side only fails here, not in a user's cluster.
func TestChartGivesTheControllerItsOwnFlags(t *testing.T) {
	ch, err := helmchart.Load("../../" + helmchart.Dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := helmchart.Render(ch, "berth-system", map[string]any{
		"controller": map[string]any{"fairSharing": true, "manageJobsWithoutQueueName": true, "kubeAPIQPS": 100, "kubeAPIBurst": 200,
			"origin": "manager-1", "workerLostTimeout": "2m", "logLevel": "debug",
			"integrations": []any{"batch/job", "pod"},
			"waitForPodsReady": map[string]any{"enabled": true, "timeout": "10m", "backoffBase": "30s", "backoffMax": "2h",
				"requeueLimit": 4, "blockAdmission": true},
			"leaderElection": map[string]any{"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "5s"}},
		"certManager": map[string]any{"enabled": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != "berth-controller" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		if len(args) == 0 || args[0] != "controller" {
			t.Fatalf("the chart runs berth %v; want berth controller", args)
		}
		if err := newControllerCommand().Flags().Parse(args[1:]); err != nil {
			t.Errorf("berth controller %v: %v", args[1:], err)
		}
		return
	}
	t.Fatal("the chart rendered no Deployment berth-controller")
}
