package integration

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// A running Job whose user lowers its parallelism (an editor of its
// namespace, as anyone who runs Jobs) keeps running with the pods it keeps,
// never suspended, and its Workload gives back the quota of the others once
// they are gone: a Job waiting for that quota is admitted.
func TestLoweredParallelismGivesQuotaBackAtOnce(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	elastic := MakeJob("elastic", env.Namespace).Queue("main").Parallelism(4).Completions(40).Request("cpu", "1").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	env.Create(t, elastic)
	wlName := jobWorkload(t, env, elastic).Name
	waitAdmitted(t, env, env.Namespace, wlName)
	waitRunningPods(t, env, "elastic", 4)
	waiting := MakeJob("waiting", env.Namespace).Queue("main").Request("cpu", "2").Obj()
	env.Create(t, waiting)
	waitingWL := jobWorkload(t, env, waiting).Name
	waitPending(t, env, env.Namespace, waitingWL, "")

	editor := env.AsEditor(t, "dana")
	var j batchv1.Job
	if err := editor.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: "elastic"}, &j); err != nil {
		t.Fatal(err)
	}
	if err := editor.Patch(ctx, &j, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"parallelism":2}}`))); err != nil {
		t.Fatalf("an editor lowering their running Job's parallelism: %v", err)
	}

	waitAdmitted(t, env, env.Namespace, waitingWL)
	wl := waitAdmitted(t, env, env.Namespace, wlName)
	psa := wl.Status.Admission.PodSetAssignments[0]
	if psa.Count != 2 || psa.ResourceUsage.Cpu().String() != "2" || wl.Spec.PodSets[0].Count != 2 || workload.IsStopping(wl) {
		t.Fatalf("the elastic Job's Workload after its parallelism went 4 -> 2: %s, admitted %d pods, %s cpu", describe(wl), psa.Count, psa.ResourceUsage.Cpu())
	}
	waitRunningPods(t, env, "elastic", 2)
	got, err := getJob(env, env.Namespace, "elastic")
	if err != nil || jobs.Suspended(got) {
		t.Fatalf("the elastic Job was suspended (%v): it should have run on", err)
	}
	waitEvent(t, env, "elastic", "Shrunk", "runs 2 pods at once instead of 4")
}
