package devicequota

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// template is a ResourceClaimTemplate asking, per request, for count
// devices of a class (count 0: the API server's default, one).
func template(name string, reqs ...resourcev1.DeviceRequest) *resourcev1.ResourceClaimTemplate {
	t := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{Finalizer}}}
	t.Spec.Spec.Devices.Requests = reqs
	return t
}

func exactly(name, class string, count int64) resourcev1.DeviceRequest {
	return resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}
}

func fromTemplate(claim, tmpl string) corev1.PodResourceClaim {
	return corev1.PodResourceClaim{Name: claim, ResourceClaimTemplateName: ptr.To(tmpl)}
}

func lookup(ts ...*resourcev1.ResourceClaimTemplate) Templates {
	return func(name string) (*resourcev1.ResourceClaimTemplate, bool) {
		for _, t := range ts {
			if t.Name == name {
				return t, true
			}
		}
		return nil, false
	}
}

func TestParse(t *testing.T) {
	m, err := Parse("example.com/gpu=gpu.example.com, big-gpu.example.com; example.com/nic=nic.example.com")
	if err != nil {
		t.Fatal(err)
	}
	want := Mappings{"gpu.example.com": "example.com/gpu", "big-gpu.example.com": "example.com/gpu", "nic.example.com": "example.com/nic"}
	if len(m) != len(want) {
		t.Fatalf("got %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s maps to %q, want %q", k, m[k], v)
		}
	}
	if got := m.String(); got != "example.com/gpu=big-gpu.example.com,gpu.example.com;example.com/nic=nic.example.com" {
		t.Errorf("String() = %q", got)
	}
	if again, err := Parse(m.String()); err != nil || again.String() != m.String() {
		t.Errorf("String does not parse back: %v, %v", again, err)
	}
	if m, err := Parse(""); err != nil || len(m) != 0 {
		t.Errorf("empty: %v, %v", m, err)
	}
	for in, wantErr := range map[string]string{
		"example.com/gpu":                                 "is not RESOURCE=CLASS",
		"=gpu.example.com":                                "is not RESOURCE=CLASS",
		"example.com/gpu=":                                "is not RESOURCE=CLASS",
		"a/b/c=gpu.example.com":                           `resource "a/b/c"`,
		"example.com/gpu=GPU_class":                       `DeviceClass "GPU_class"`,
		"a.com/x=gpu.example.com;b.com/y=gpu.example.com": "mapped to both a.com/x and b.com/y",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", in, err, wantErr)
		}
	}
}

func TestRequestsCountEveryDeviceOfEveryClaim(t *testing.T) {
	m := Mappings{"gpu.example.com": "example.com/gpu", "nic.example.com": "example.com/nic"}
	ts := lookup(
		template("two-gpus", exactly("gpus", "gpu.example.com", 2)),
		template("gpu-and-nic", exactly("gpu", "gpu.example.com", 0), exactly("nic", "nic.example.com", 1)),
	)
	got, err := m.Requests([]corev1.PodResourceClaim{
		fromTemplate("a", "two-gpus"), fromTemplate("b", "two-gpus"), fromTemplate("c", "gpu-and-nic"),
	}, ts)
	if err != nil {
		t.Fatal(err)
	}
	// Each claim is a claim of its own, even from the same template; a
	// count left out is one.
	if got["example.com/gpu"] != 5 || got["example.com/nic"] != 1 || len(got) != 2 {
		t.Errorf("got %v, want 5 example.com/gpu and 1 example.com/nic", got)
	}
}

func TestWithoutMappingsNothingIsCountedOrRefused(t *testing.T) {
	got, err := Mappings{}.Requests([]corev1.PodResourceClaim{{Name: "shared", ResourceClaimName: ptr.To("x")}}, lookup())
	if err != nil || got != nil {
		t.Errorf("got %v, %v; want nothing", got, err)
	}
}

func TestRequestsRefuseWhatCannotBeCounted(t *testing.T) {
	m := Mappings{"gpu.example.com": "example.com/gpu"}
	all := exactly("all", "gpu.example.com", 0)
	all.Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	ts := lookup(
		template("other", exactly("x", "fpga.example.com", 1)),
		template("all", all),
		template("either", resourcev1.DeviceRequest{Name: "either", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "big", DeviceClassName: "gpu.example.com"}}}),
	)
	for name, c := range map[string]struct {
		claim corev1.PodResourceClaim
		want  string
	}{
		"shared claim":   {corev1.PodResourceClaim{Name: "s", ResourceClaimName: ptr.To("team-gpus")}, "resourceClaims[s]: resourceClaimName team-gpus: a ResourceClaim shared by name is not counted"},
		"unmapped class": {fromTemplate("f", "other"), "resourceClaims[f] (ResourceClaimTemplate other): spec.spec.devices.requests[x]: exactly.deviceClassName: DeviceClass fpga.example.com is not mapped"},
		"all devices":    {fromTemplate("a", "all"), "requests[all]: exactly.allocationMode: All is not counted"},
		"alternatives":   {fromTemplate("e", "either"), "requests[either]: firstAvailable"},
		"no source":      {corev1.PodResourceClaim{Name: "n"}, "resourceClaims[n]: names neither"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := m.Requests([]corev1.PodResourceClaim{c.claim}, ts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, %v; want an error saying %q", got, err, c.want)
			}
		})
	}
}

func TestAMissingTemplateIsToldApart(t *testing.T) {
	m := Mappings{"gpu.example.com": "example.com/gpu"}
	_, err := m.Requests([]corev1.PodResourceClaim{fromTemplate("g", "later")}, lookup())
	var missing *MissingTemplate
	if !errors.As(err, &missing) || missing.Name != "later" || missing.Claim != "g" {
		t.Fatalf("got %v, want a MissingTemplate for later", err)
	}
	if err.Error() != "resourceClaims[g]: ResourceClaimTemplate later does not exist" {
		t.Errorf("message: %q", err)
	}
}

func TestATemplateIsCountedOnceKept(t *testing.T) {
	m := Mappings{"gpu.example.com": "example.com/gpu"}
	tmpl := template("gpus", exactly("gpu", "gpu.example.com", 2))
	tmpl.Finalizers = nil
	_, err := m.Requests([]corev1.PodResourceClaim{fromTemplate("g", "gpus")}, lookup(tmpl))
	var unkept *Unkept
	if !errors.As(err, &unkept) || unkept.Name != "gpus" || !strings.Contains(err.Error(), "waiting for berth's finalizer "+Finalizer) {
		t.Fatalf("got %v, want Unkept for gpus", err)
	}
}

func TestTemplatesOfAndKeeps(t *testing.T) {
	wl := &berthv1.Workload{Spec: berthv1.WorkloadSpec{PodSets: []berthv1.PodSet{
		{Name: "a", ResourceClaims: []corev1.PodResourceClaim{fromTemplate("x", "t2"), fromTemplate("y", "t1"), {Name: "s", ResourceClaimName: ptr.To("shared")}}},
		{Name: "b", ResourceClaims: []corev1.PodResourceClaim{fromTemplate("x", "t2")}},
	}}}
	if got := TemplatesOf(wl); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Errorf("TemplatesOf = %v, want [t1 t2]", got)
	}
	if !Keeps(wl) {
		t.Error("a pending workload does not keep its templates")
	}
	wl.Status.Conditions = []metav1.Condition{{Type: berthv1.WorkloadFinished, Status: metav1.ConditionTrue}}
	if Keeps(wl) {
		t.Error("a finished workload keeps its templates")
	}
	wl.Status.Conditions = nil
	wl.DeletionTimestamp = &metav1.Time{}
	if Keeps(wl) {
		t.Error("a workload being deleted keeps its templates")
	}
}
