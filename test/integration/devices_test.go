package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/sim/devices"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// gpuClass is the DeviceClass the controller maps to gpuResource
// (TestMain's --device-class-mappings).
const (
	gpuClass    = "gpu.example.com"
	gpuResource = "example.com/gpu"
)

// A namespace user's Jobs claim GPUs through Dynamic Resource Allocation:
// the devices count against the ClusterQueue's example.com/gpu quota, the
// admitted Job's pods get them allocated on a simulated node that publishes
// its devices, and the next Job waits for the quota, not for the node's
// devices (4, twice the quota). A claim berth cannot count waits saying so,
// and a template counted cannot be made again asking for more.
func TestDevicesClaimedThroughDRACountAgainstQuota(t *testing.T) {
	env := testenv.New(t)
	if err := env.Client.Create(ctx, MakeDeviceClass(gpuClass, gpuClass)); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	node := env.CreateSimNode(t, env.Name("gpus"), nil)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, devices.Annotation, `{"`+gpuClass+`":4}`)
	if err := env.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		var s resourcev1.ResourceSlice
		if err := env.Client.Get(ctx, types.NamespacedName{Name: devices.SliceName(node.Name, gpuClass)}, &s); err != nil {
			return fmt.Errorf("the simulator has not published node %s's devices: %w", node.Name, err)
		}
		if len(s.Spec.Devices) != 4 || s.Spec.NodeName == nil || *s.Spec.NodeName != node.Name {
			return fmt.Errorf("ResourceSlice %s: %d devices on %v", s.Name, len(s.Spec.Devices), s.Spec.NodeName)
		}
		return nil
	})

	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "10").Resource(gpuResource, "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	editor := env.AsEditor(t, "erin")
	create := func(obj client.Object) {
		t.Helper()
		if err := editor.Create(ctx, obj); err != nil {
			t.Fatalf("an editor creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	create(MakeClaimTemplate("one-gpu", env.Namespace).Devices("gpu", gpuClass, 1).Obj())
	create(MakeClaimTemplate("fpga", env.Namespace).Devices("fpga", "fpga.example.com", 1).Obj())
	job := func(name, template string, pods int32) *JobWrapper {
		return MakeJob(name, env.Namespace).Queue("main").Parallelism(pods).Request("cpu", "100m").
			Claim("dev", template).Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "10m")
	}

	trains := job("trains", "one-gpu", 2).Obj()
	create(trains)
	trainsWL := waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, trains).Name)
	if used := trainsWL.Status.Admission.PodSetAssignments[0].ResourceUsage[gpuResource]; used.String() != "2" {
		t.Errorf("the admitted Job of 2 pods of one GPU each holds %s %s, want 2", used.String(), gpuResource)
	}
	waitRunningPods(t, env, "trains", 2)
	testenv.Eventually(t, wait, func() error {
		var claims resourcev1.ResourceClaimList
		if err := env.Client.List(ctx, &claims, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		allocated := 0
		for _, c := range claims.Items {
			if a := c.Status.Allocation; a != nil && len(a.Devices.Results) == 1 && a.Devices.Results[0].Pool == node.Name {
				allocated++
			}
		}
		if allocated != 2 {
			return fmt.Errorf("%d of the running pods' claims are allocated a device of node %s, want 2", allocated, node.Name)
		}
		return nil
	})

	// The template the admitted Job's pods claim through cannot be made
	// again asking for more: deleted, it stays (berth's finalizer) while
	// the Job may make pods, and the finalizer is berth's to take off.
	if err := editor.Delete(ctx, MakeClaimTemplate("one-gpu", env.Namespace).Obj()); err != nil {
		t.Fatal(err)
	}
	var kept resourcev1.ResourceClaimTemplate
	if err := editor.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: "one-gpu"}, &kept); err != nil || kept.DeletionTimestamp == nil {
		t.Fatalf("a counted template deleted by its user: %v, %+v", err, kept.ObjectMeta)
	}
	err := editor.Patch(ctx, &kept, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "metadata.finalizers: berth.dev/devices-counted is berth's to take off") {
		t.Fatalf("an editor taking berth's finalizer off a counted template: %v, want it refused", err)
	}
	if err := editor.Create(ctx, MakeClaimTemplate("one-gpu", env.Namespace).Devices("gpu", gpuClass, 8).Obj()); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("an editor making the counted template again with 8 GPUs: %v, want AlreadyExists", err)
	}

	waits := job("waits", "one-gpu", 1).Obj()
	create(waits)
	waitsWL := jobWorkload(t, env, waits).Name
	waitPending(t, env, env.Namespace, waitsWL, gpuResource)
	// What it waits for is written beside why, and berth why counts it.
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, waitsWL)
		if err != nil {
			return err
		}
		if rr := wl.Status.ResourceRequests; len(rr) != 1 || rr[0].Resources.Name(gpuResource, resource.DecimalSI).String() != "1" {
			return fmt.Errorf("status.resourceRequests of the waiting Job's Workload: %+v", rr)
		}
		return nil
	})
	out, err := berthCLI(t, env, "-n", env.Namespace)("why", "job", "waits")
	if err != nil || !strings.Contains(out, "right now: it waits:") || !strings.Contains(out, gpuResource) {
		t.Errorf("berth why job waits (%v): want it waiting for %s:\n%s", err, gpuResource, out)
	}

	fpga := job("fpga", "fpga", 1).Obj()
	create(fpga)
	waitPending(t, env, env.Namespace, jobWorkload(t, env, fpga).Name,
		"pod set main: resourceClaims[dev] (ResourceClaimTemplate fpga): spec.spec.devices.requests[fpga]: exactly.deviceClassName: DeviceClass fpga.example.com is not mapped to a quota resource")

	// A template no workload keeps is let go.
	if err := editor.Delete(ctx, fpga, client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		var t resourcev1.ResourceClaimTemplate
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: "fpga"}, &t); err != nil {
			return err
		}
		if slices.Contains(t.Finalizers, berthv1.DevicesCountedFinalizer) {
			return fmt.Errorf("template fpga keeps berth's finalizer after its only Job went")
		}
		return nil
	})

	// A template made after its Job is counted once it is there.
	later := job("later", "later-gpu", 1).Obj()
	create(later)
	laterWL := jobWorkload(t, env, later).Name
	waitPending(t, env, env.Namespace, laterWL, "resourceClaims[dev]: ResourceClaimTemplate later-gpu does not exist")
	create(MakeClaimTemplate("later-gpu", env.Namespace).Devices("gpu", gpuClass, 1).Obj())
	waitPending(t, env, env.Namespace, laterWL, gpuResource)

	// The GPUs given back, the Job that waited for them goes.
	if err := editor.Delete(ctx, trains, client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, waitsWL)
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace), client.MatchingLabels{"job-name": "fpga"}); err != nil || len(pods.Items) != 0 {
		t.Errorf("the Job whose devices cannot be counted has pods (%v): %d", err, len(pods.Items))
	}

	// The node's devices follow its annotation: more devices are a new
	// generation of its pool, and none leave no slice.
	slice := func(want func(*resourcev1.ResourceSlice, error) error) {
		t.Helper()
		testenv.Eventually(t, wait, func() error {
			var s resourcev1.ResourceSlice
			return want(&s, env.Client.Get(ctx, types.NamespacedName{Name: devices.SliceName(node.Name, gpuClass)}, &s))
		})
	}
	annotate := func(value string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, devices.Annotation, value)
		if err := env.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	annotate(fmt.Sprintf("%q", `{"`+gpuClass+`":6}`))
	slice(func(s *resourcev1.ResourceSlice, err error) error {
		if err != nil || len(s.Spec.Devices) != 6 || s.Spec.Pool.Generation < 2 {
			return fmt.Errorf("node %s's slice after it offers 6 GPUs: %v, %d devices, generation %d", node.Name, err, len(s.Spec.Devices), s.Spec.Pool.Generation)
		}
		return nil
	})
	annotate("null")
	slice(func(_ *resourcev1.ResourceSlice, err error) error {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s offers no devices, and its slice is still there (%v)", node.Name, err)
		}
		return nil
	})
}

// Devices are counted in the seam every kind shares: plain Pods' claims
// count against quota as a Job's do.
func TestAQueuedPodsDevicesCountAgainstQuota(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "10").Resource(gpuResource, "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeClaimTemplate("two-gpus", env.Namespace).Devices("gpu", gpuClass, 2).Obj())
	claiming := func(name string) *corev1.Pod {
		p := plainPod(name, env.Namespace, "100m", "10m", map[string]string{berthv1.QueueNameLabel: "main"})
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr("two-gpus")}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
		return p
	}
	first, second := claiming("first"), claiming("second")
	env.Create(t, first)
	wl := waitAdmitted(t, env, env.Namespace, pods.WorkloadName(first))
	if used := wl.Status.Admission.PodSetAssignments[0].ResourceUsage[gpuResource]; used.String() != "2" {
		t.Errorf("the admitted Pod of two GPUs holds %s %s", used.String(), gpuResource)
	}
	env.Create(t, second)
	waitPending(t, env, env.Namespace, pods.WorkloadName(second), gpuResource)
}
