package configured

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/gomodule"
)

// The training operator's kinds, as config/addons/training-operator/kinds.yaml
// describes them, fit the CRDs it publishes: every path is there, with its
// type; and the example PyTorchJob reads as a master and two workers.
func TestTheTrainingOperatorsKindsFitItsPublishedCRDs(t *testing.T) {
	data, err := os.ReadFile("../../../config/addons/training-operator/kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := gomodule.Dir(TrainingOperator)
	if err != nil {
		t.Fatal(err)
	}
	crds := filepath.Join(dir, "manifests", "base", "crds")
	for i := range kinds {
		k := &kinds[i]
		raw, err := os.ReadFile(filepath.Join(crds, k.Group+"_"+k.Resource+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		if err := CheckSchema(*k, &crd); err != nil {
			t.Errorf("%s: %v", k.Kind, err)
		}
		// A replica type the operator does not have is refused.
		wrong := k.Spec
		wrong.PodSets = append([]PodSetSpec(nil), wrong.PodSets...)
		wrong.PodSets[0].Count = strings.Replace(wrong.PodSets[0].Count, ".replicas", ".replica", 1)
		c, err := Compile(wrong)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckSchema(c, &crd); err == nil || !strings.Contains(err.Error(), `no field "replica"`) {
			t.Errorf("%s with a count path it lacks: %v", k.Kind, err)
		}
	}

	raw, err := os.ReadFile("../../../examples/configured/pytorchjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	k := Kind{C: &kinds[0]}
	ps := k.PodSets(u)
	if len(ps) != 2 || ps[0].Name != "master" || ps[0].Count != 1 || ps[1].Name != "worker" || ps[1].Count != 2 || k.Refuse(u) != "" {
		t.Errorf("the example PyTorchJob: pod sets %+v, refused %q", ps, k.Refuse(u))
	}
}
