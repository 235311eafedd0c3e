package standin

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/manifests"
	"github.com/berth-dev/berth/internal/testenv"
)

// InstallCRD applies the CRD in file (established before it returns), and
// waits until berth's webhook configuration has hook: berth's controller
// has turned the kind on.
func InstallCRD(t *testing.T, env *testenv.Env, file, hook string) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := manifests.ApplyEstablished(ctx, env.Config, objs...); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "berth"}, &cfg); err != nil {
			return err
		}
		if !slices.ContainsFunc(cfg.Webhooks, func(h admissionregistrationv1.MutatingWebhook) bool { return h.Name == hook }) {
			return fmt.Errorf("berth's webhook configuration has no %s yet: the kind is not on", hook)
		}
		return nil
	})
}

// MPIJobCRD is the stand-in MPIJob CRD of examples/configured, from a test
// package's directory, and the hook berth adds once it queues MPIJobs.
const (
	MPIJobCRD  = "../../examples/configured/mpijob-crd.yaml"
	MPIJobHook = "mpijobs.kubeflow.org.berth.dev"
)
