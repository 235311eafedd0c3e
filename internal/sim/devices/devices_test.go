package devices

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func node(name, annotation string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "u1", Annotations: map[string]string{Annotation: annotation}}}
}

func TestSlicesOfANode(t *testing.T) {
	got, err := Slices(node("n1", `{"gpu.example.com": 3, "nic.example.com": 1, "none.example.com": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d slices, want one per driver with devices (2)", len(got))
	}
	gpu := got[0]
	if gpu.Name != "n1-gpu.example.com" || gpu.Spec.Driver != "gpu.example.com" || *gpu.Spec.NodeName != "n1" ||
		gpu.Spec.Pool.Name != "n1" || gpu.Spec.Pool.ResourceSliceCount != 1 || gpu.Labels[NodeLabel] != "n1" {
		t.Errorf("gpu slice: %+v", gpu)
	}
	if len(gpu.Spec.Devices) != 3 || gpu.Spec.Devices[2].Name != "device-2" || *gpu.Spec.Devices[2].Attributes["index"].IntValue != 2 {
		t.Errorf("gpu devices: %+v", gpu.Spec.Devices)
	}
	if ref := gpu.OwnerReferences; len(ref) != 1 || ref[0].Kind != "Node" || ref[0].UID != "u1" {
		t.Errorf("owner: %+v", ref)
	}
	if got[1].Spec.Driver != "nic.example.com" || len(got[1].Spec.Devices) != 1 {
		t.Errorf("nic slice: %+v", got[1])
	}
	if none, err := Slices(node("n2", "")); err != nil || len(none) != 0 {
		t.Errorf("no annotation: %v, %v", none, err)
	}
}

func TestBadDevicesAreRefused(t *testing.T) {
	for in, want := range map[string]string{
		`gpu.example.com: 3`:       "is not {\"driver\": count}",
		`{"GPU_X": 1}`:             `driver "GPU_X" must be a DNS subdomain`,
		`{"gpu.example.com": 129}`: "0 to 128 devices",
		`{"gpu.example.com": -1}`:  "0 to 128 devices",
	} {
		if _, err := Slices(node("n", in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", in, err, want)
		}
	}
	if _, err := ParseFlag("gpu.example.com"); err == nil || !strings.Contains(err.Error(), "--node-devices") {
		t.Errorf("ParseFlag without a count: %v", err)
	}
	d, err := ParseFlag("gpu.example.com=4, nic.example.com=2")
	if err != nil || d["gpu.example.com"] != 4 || d["nic.example.com"] != 2 {
		t.Errorf("ParseFlag: %v, %v", d, err)
	}
	if again, err := Parse(d.Annotate()); err != nil || len(again) != 2 || again["gpu.example.com"] != 4 {
		t.Errorf("Annotate does not parse back: %v, %v", again, err)
	}
}

func TestLongNamesStayValid(t *testing.T) {
	long := strings.Repeat("n", 250)
	name := SliceName(long, "gpu.example.com")
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Errorf("%q: %v", name, errs)
	}
	if SliceName(long, "a.example.com") == SliceName(long, "b.example.com") {
		t.Error("two drivers of one long-named node share a slice name")
	}
	if errs := validation.IsValidLabelValue(LabelOf(long)); len(errs) > 0 {
		t.Errorf("label %q: %v", LabelOf(long), errs)
	}
}
