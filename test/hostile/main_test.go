package hostile

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
)

// enforced labels the namespaces where the controller queues everything
// (--managed-jobs-namespace-selector): a test's own, once it says so.
const enforced = "hostile.berth.dev/queue-everything"

func TestMain(m *testing.M) {
	os.Exit(testenv.MainClusters(m, testenv.Cluster{Name: "testenv", With: []string{"jobset", "leaderworkerset", "trainer"},
		ControllerArgs: []string{"--manage-jobs-without-queue-name", "--managed-jobs-namespace-selector=" + enforced + "=true"}}))
}

const wait = 30 * time.Second

var ctx = context.Background()

// mallory is the namespace user every test here acts as.
const mallory = "mallory"

// refused fails t unless err is the API server's refusal (Forbidden, or
// Invalid) and its message names want.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: allowed, want refused with %q", what, want)
	case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
		t.Errorf("%s: %v, want refused by the API server with %q", what, err, want)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%s: refused with %q, want %q in it", what, err, want)
	}
}

// edit reads obj as c sees it, changes it with change, and writes it back as
// c: one update, as `kubectl edit` makes, tried again while another writer
// (the Job controller, berth) got there first.
func edit[T client.Object](c client.Client, obj T, change func(T)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(ctx, obj)
	})
}

// usage is what a ClusterQueue reports it has admitted: workloads, and the
// cpu in flavor.
func usage(env *testenv.Env, cq, flavor string) (int32, string, error) {
	var q berthv1.ClusterQueue
	if err := env.Client.Get(ctx, types.NamespacedName{Name: cq}, &q); err != nil {
		return 0, "", err
	}
	for _, f := range q.Status.FlavorsUsage {
		for _, r := range f.Resources {
			if f.Name == flavor && r.Name == "cpu" {
				return q.Status.AdmittedWorkloads, r.Total.String(), nil
			}
		}
	}
	return q.Status.AdmittedWorkloads, "0", nil
}

// holds waits until ClusterQueue cq has admitted n workloads using cpu of
// flavor.
func holds(t *testing.T, env *testenv.Env, cq, flavor string, n int32, cpu string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		got, used, err := usage(env, cq, flavor)
		if err != nil {
			return err
		}
		if got != n || used != cpu {
			return fmt.Errorf("ClusterQueue %s: %d workloads admitted using %s cpu, want %d using %s", cq, got, used, n, cpu)
		}
		return nil
	})
}
