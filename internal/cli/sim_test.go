package cli

import (
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/sim/nodepool"
)

func parsePool(t *testing.T, selector string, args ...string) (*nodepool.Pool, *pflag.FlagSet, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	var pf poolFlags
	pf.add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pf.pool(fs, sel)
	return p, fs, err
}

func TestPoolFlags(t *testing.T) {
	args := []string{"--nodes=4", "--node-capacity=cpu=8,memory=64Gi,nvidia.com/gpu=2",
		"--node-labels=team=a", "--node-taints=fake=yes:NoSchedule,gpu:NoExecute", "--nodes-per-rack=2"}
	p, fs, err := parsePool(t, "pool=x,berth.dev/sim-node", args...)
	if err != nil {
		t.Fatal(err)
	}
	if p.Count != 4 || p.Capacity.Name("nvidia.com/gpu", "").String() != "2" || p.Capacity.Memory().String() != "64Gi" {
		t.Errorf("pool %+v", p)
	}
	if want := map[string]string{"team": "a", "pool": "x", "berth.dev/sim-node": "true"}; !reflect.DeepEqual(p.Labels, want) {
		t.Errorf("labels %v, want %v (the selector's terms make the nodes managed)", p.Labels, want)
	}
	wantTaints := []corev1.Taint{{Key: "fake", Value: "yes", Effect: corev1.TaintEffectNoSchedule}, {Key: "gpu", Effect: corev1.TaintEffectNoExecute}}
	if !reflect.DeepEqual(p.Taints, wantTaints) {
		t.Errorf("taints %v", p.Taints)
	}
	// berth up passes exactly what was set on to its simulator.
	if got := forwardPoolFlags(fs); !reflect.DeepEqual(got, args) {
		t.Errorf("forwarded %v, want %v", got, args)
	}
	if p, _, _ := parsePool(t, "a=b"); p != nil {
		t.Errorf("without --nodes there is no pool to make, got %+v", p)
	}
}

func TestPoolFlagErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes=1", "--node-capacity=cpu=lots"}, `--node-capacity: cpu="lots"`},
		{[]string{"--nodes=1", "--node-labels=novalue"}, `--node-labels: "novalue" is not key=value`},
		{[]string{"--nodes=1", "--node-taints=k=v"}, `--node-taints: "k=v" is not key=value:Effect`},
		{[]string{"--nodes=-2"}, "fake nodes: nodes: -2 is negative"},
	} {
		_, _, err := parsePool(t, "a=b", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The simulator and the controller collect at gcPercent, unless GOGC in
// their environment says otherwise.
func TestDefaultGCYieldsToTheEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC") // t.Setenv restores the original afterwards
	defaultGC()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: collecting at %d, want %d", got, gcPercent)
	}
	t.Setenv("GOGC", "200")
	defaultGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=200 set: defaultGC changed the percent to %d", got)
	}
}
