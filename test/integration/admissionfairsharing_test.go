package integration

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// In a ClusterQueue that orders by LocalQueue usage, quota freed by the
// busy team goes to the quiet team's newer Job before the busy team's
// older one (first come, first served would do the opposite); each
// LocalQueue's status says what it consumed; and a namespace editor cannot
// raise their LocalQueue's weight to jump the line.
func TestQuietTeamGoesBeforeBusyTeam(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).AdmissionFairSharing().ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("busy", env.Namespace, cq).Obj())
	env.Create(t, MakeLocalQueue("quiet", env.Namespace, cq).Weight("1").Obj())

	job := func(name, queue string) string {
		j := MakeJob(name, env.Namespace).Queue(queue).Request("cpu", "1").Obj()
		env.Create(t, j)
		return jobWorkload(t, env, j).Name
	}
	busy1 := job("busy-1", "busy")
	waitAdmitted(t, env, env.Namespace, busy1)
	waitAdmitted(t, env, env.Namespace, job("busy-2", "busy"))

	// The busy team's usage is sampled into its status.
	testenv.Eventually(t, wait, func() error {
		var lq berthv1.LocalQueue
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: "busy"}, &lq); err != nil {
			return err
		}
		fs := lq.Status.FairSharing
		if fs == nil || fs.AdmissionFairSharingStatus == nil || fs.AdmissionFairSharingStatus.ConsumedResources.Cpu().IsZero() {
			return fmt.Errorf("LocalQueue busy: status.fairSharing %+v, want cpu consumed", fs)
		}
		return nil
	})

	waitForMetrics(t, `berth_local_queue_weighted_usage{local_queue="`+env.Namespace+`/busy"} `)

	older := job("busy-3", "busy")
	waitPending(t, env, env.Namespace, older, "")
	newer := job("quiet-1", "quiet")
	waitPending(t, env, env.Namespace, newer, "")

	// The attacker: an editor of the namespace gives their queue weight 100.
	editor := env.AsEditor(t, "mallory")
	var lq berthv1.LocalQueue
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: "busy"}, &lq); err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"fairSharing":{"weight":"100"}}}`))
	if err := editor.Patch(ctx, &lq, patch); !apierrors.IsForbidden(err) {
		t.Fatalf("an editor set their LocalQueue's weight: %v, want forbidden", err)
	}

	if err := env.Client.Delete(ctx, MakeJob("busy-1", env.Namespace).Obj(), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, newer)
	wl, err := getWorkload(env, env.Namespace, older)
	if err != nil {
		t.Fatal(err)
	}
	if workload.HasQuota(wl) {
		t.Fatalf("the busy team's older Job was admitted with the quota busy-1 freed: %s", describe(wl))
	}
}
