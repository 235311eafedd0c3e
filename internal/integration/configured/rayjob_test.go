package configured

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

func rayJobExample(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	return manifest(t, "rayjob.yaml", "uid-job")
}

func TestTheRayJobDescriptionFitsKubeRaysCRD(t *testing.T) {
	k := rayKind(t, "RayJob")
	if err := CheckSchema(*k.C, rayCRD(t, "rayjobs")); err != nil {
		t.Fatal(err)
	}
	wrong := k.C.Spec
	wrong.Finished.Field = "status.jobStatusInfo"
	c, err := Compile(wrong)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchema(c, rayCRD(t, "rayjobs")); err == nil || !strings.Contains(err.Error(), `finished.field: status.jobStatusInfo: the schema has no field "jobStatusInfo" at status`) {
		t.Errorf("a finished field the CRD lacks: %v", err)
	}
}

// A RayJob is its cluster's head and worker groups and, in K8sJobMode,
// its submitter: from its template, or KubeRay's default, whose requests
// count though berth cannot send its pod anywhere.
func TestARayJobCountsItsClusterAndItsSubmitter(t *testing.T) {
	k := rayKind(t, "RayJob")
	u := rayJobExample(t)
	_ = unstructured.SetNestedField(u.Object, "K8sJobMode", "spec", "submissionMode") // the CRD's default
	if why := k.Refuse(u); why != "" {
		t.Fatalf("the example is refused: %s", why)
	}
	names := func(ps []berthv1.PodSet) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Name)
		}
		return strings.Join(s, ",")
	}
	ps := k.PodSets(u)
	if names(ps) != "head,workers,submitter" || ps[1].Count != 2 || ps[2].Count != 1 || len(k.C.Unfollowed(u)) != 0 {
		t.Fatalf("pod sets %s %+v, unfollowed %v", names(ps), ps, k.C.Unfollowed(u))
	}
	unstructured.RemoveNestedField(u.Object, "spec", "submitterPodTemplate")
	ps = k.PodSets(u)
	cpu := ps[2].Requests[corev1.ResourceCPU]
	if names(ps) != "head,workers,submitter" || cpu.Cmp(resource.MustParse("500m")) != 0 || strings.Join(k.C.Unfollowed(u), ",") != "submitter" {
		t.Fatalf("default submitter: %s, cpu %s, unfollowed %v", names(ps), cpu.String(), k.C.Unfollowed(u))
	}
	// Started, the cluster's templates get the flavors; the default is
	// not written into the RayJob (it has no image: KubeRay takes the head's).
	flavors := map[string][]*berthv1.ResourceFlavor{"head": {{Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "a"}}}}}
	if err := k.Start(u, flavors); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "submitterPodTemplate"); found {
		t.Error("the default submitter was written into the RayJob")
	}
	if s, _, _ := unstructured.NestedString(u.Object, "spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "nodeSelector", "pool"); s != "a" {
		t.Errorf("head's node selector %q", s)
	}
	for _, mode := range []string{"HTTPMode", "InteractiveMode"} {
		u := rayJobExample(t)
		_ = unstructured.SetNestedField(u.Object, mode, "spec", "submissionMode")
		if got := names(k.PodSets(u)); got != "head,workers" || k.Refuse(u) != "" {
			t.Errorf("%s: pod sets %s, refused %q: no submitter runs", mode, got, k.Refuse(u))
		}
	}
}

// What KubeRay will not suspend, or berth would not count, is refused at
// once, naming the field; and those fields may not change on a queued
// RayJob.
func TestARayJobBerthCannotHoldIsRefused(t *testing.T) {
	k := rayKind(t, "RayJob")
	for _, tc := range []struct {
		edit func(u *unstructured.Unstructured)
		want string
	}{
		{func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "shutdownAfterJobFinishes")
		},
			"RayJob rayjob-small: spec.shutdownAfterJobFinishes: is not set; a queued RayJob has true (others are not supported yet)"},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, false, "spec", "shutdownAfterJobFinishes")
		}, "spec.shutdownAfterJobFinishes: is false; a queued RayJob has true"},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "SidecarMode", "spec", "submissionMode")
		},
			`spec.submissionMode: is "SidecarMode"; a queued RayJob has one of "K8sJobMode", "HTTPMode", "InteractiveMode"`},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"ray.io/cluster": "shared"}, "spec", "clusterSelector")
		}, "spec.clusterSelector: is set; berth does not follow it for a RayJob yet"},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, true, "spec", "rayClusterSpec", "enableInTreeAutoscaling")
		}, "spec.rayClusterSpec.enableInTreeAutoscaling: is set"},
	} {
		u := rayJobExample(t)
		_ = unstructured.SetNestedField(u.Object, "K8sJobMode", "spec", "submissionMode")
		tc.edit(u)
		if why := k.Refuse(u); !strings.Contains(why, tc.want) {
			t.Errorf("got %q, want %q", why, tc.want)
		}
	}
	g := k.C.Guard()
	for _, p := range []string{"spec.shutdownAfterJobFinishes", "spec.submissionMode"} {
		if !strings.Contains(strings.Join(g.Immutable, ","), p) {
			t.Errorf("%s may change on a queued RayJob: immutable %v", p, g.Immutable)
		}
	}
	if !strings.Contains(strings.Join(g.Fixed, ","), "spec.submitterPodTemplate") {
		t.Errorf("the submitter's template may change while it runs: fixed %v", g.Fixed)
	}
}

// A RayJob has ended when KubeRay says its deployment is Complete or
// Failed; Running is not the end.
func TestARayJobEndsAsKubeRaySays(t *testing.T) {
	k := rayKind(t, "RayJob")
	for status, want := range map[string][2]bool{"": {}, "Running": {}, "Suspended": {}, "Complete": {true, false}, "Failed": {true, true}, "ValidationFailed": {true, true}} {
		u := rayJobExample(t)
		if status != "" {
			_ = unstructured.SetNestedField(u.Object, status, "status", "jobDeploymentStatus")
		}
		if f, failed := k.Finished(u); f != want[0] || failed != want[1] {
			t.Errorf("%q: finished %v failed %v, want %v", status, f, failed, want)
		}
	}
}

// The RayCluster KubeRay makes for a RayJob is queued with it: not on its
// own, however it is labelled; one whose controller is another group's
// RayJob is queued as any RayCluster.
func TestARayJobsClusterIsQueuedWithIt(t *testing.T) {
	k := rayCluster(t)
	u := rayExample(t)
	ctrl := true
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "rayjob-small", UID: "uid-job", Controller: &ctrl}})
	if k.QueueName(u) != "" || k.QueuingOwner(u) == nil || k.Refuse(u) != "" {
		t.Errorf("a RayJob's cluster: queue %q, owner %v, refused %q", k.QueueName(u), k.QueuingOwner(u), k.Refuse(u))
	}
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "RayJob", Name: "x", UID: "u", Controller: &ctrl}})
	if k.QueueName(u) != "main" || k.QueuingOwner(u) != nil {
		t.Errorf("another group's RayJob: queue %q, owner %v", k.QueueName(u), k.QueuingOwner(u))
	}
}

// The new words of the description are checked as the others are.
func TestParseRefusesABadOwnerWhenOrDefault(t *testing.T) {
	const good = `
kinds:
- group: example.com
  version: v1
  kind: Thing
  resource: things
  suspend: spec.suspend
  podSets:
  - {name: main, template: spec.template}
  - name: side
    template: spec.side
    when: {path: spec.mode, values: [Side]}
    default: {spec: {containers: [{name: c}]}}
  ownedBy: [Owner]
  finished: {field: status.phase, succeeded: [Done]}
- group: example.com
  version: v1
  kind: Owner
  resource: owners
  suspend: spec.suspend
  podSets:
  - {name: main, template: spec.template}
  controllers: [system:serviceaccount:x:y]
  requires: [{path: spec.keep, values: [true]}]
  finished: {never: true}
`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"ownedBy: [Owner]", "ownedBy: [Other]", "Thing: ownedBy[0]: Other.example.com is not configured here"},
		{"controllers: [system:serviceaccount:x:y]", "controllers: []", "Thing: ownedBy[0]: Owner.example.com names no controllers"},
		{"controllers: [system:serviceaccount:x:y]", "controllers: ['']", "Owner: controllers[0]: is empty"},
		{"ownedBy: [Owner]", "ownedBy: [Thing]", `Thing: ownedBy[0]: "Thing": want another configured kind`},
		{"values: [Side]", "values: []", "Thing: podSets[1].when.values: is empty"},
		{"when: {path: spec.mode,", "when: {path: status.mode,", `podSets[1].when.path: "status.mode": the fields berth reads and sets are under spec`},
		{"default: {spec: {containers: [{name: c}]}}", "default: {spec: {}}", "Thing: podSets[1].default.spec.containers: is empty"},
		{"field: status.phase", "field: spec.phase", `Thing: finished.field: "spec.phase": berth reads how an object ended from its status`},
		{"values: [true]", "values: [{a: b}]", "Owner: requires[0].values[0]: map[a:b] is not a string, boolean or number"},
	} {
		_, err := Parse([]byte(strings.Replace(good, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: got %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}

// berth up gives the kinds of an addon the user it runs the addon as.
func TestAnAddonsKindsNameTheControllerBerthUpRuns(t *testing.T) {
	data, err := os.ReadFile("../../../config/addons/ray/kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := WithControllers(data, "berth-ray")
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		want := ""
		if k.Kind == "RayJob" {
			want = "berth-ray"
		}
		if got := strings.Join(k.Controllers, ","); got != want {
			t.Errorf("%s: controllers %q, want %q", k.Kind, got, want)
		}
	}
	if len(kinds) != 2 || kinds[1].PodSets[2].Default == nil || kinds[1].FinishedField.String() != "status.jobDeploymentStatus" {
		t.Errorf("rewritten, the file lost what it said: %+v", kinds)
	}
}
