package addon_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berth-dev/berth/internal/addon"
	"github.com/berth-dev/berth/internal/manifests"
)

func TestParse(t *testing.T) {
	got, err := addon.Parse([]string{"jobset", " jobset,"})
	if err != nil || len(got) != 1 || got[0].Component != "jobset-controller" {
		t.Errorf("jobset twice: %+v, %v; want it once", got, err)
	}
	if got, err := addon.Parse([]string{"jobset,leaderworkerset"}); err != nil || len(got) != 2 || got[1].Component != "leaderworkerset-controller" {
		t.Errorf("jobset,leaderworkerset: %+v, %v; want both", got, err)
	}
	if _, err := addon.Parse([]string{"jobset,kubeflow"}); err == nil || !strings.Contains(err.Error(), `--with: "kubeflow" is not an addon berth has (jobset, leaderworkerset, ray, trainer, training-operator)`) {
		t.Errorf("an unknown addon: %v", err)
	}
	// Trainer runs its TrainJobs as JobSets: JobSet's controller comes too,
	// and first.
	if got, err := addon.Parse([]string{"trainer"}); err != nil || len(got) != 2 || got[0].Name != "jobset" || got[1].Name != "trainer" {
		t.Errorf("trainer: %+v, %v; want jobset, then trainer", got, err)
	}
	if got, err := addon.Parse([]string{"trainer,jobset"}); err != nil || len(got) != 2 {
		t.Errorf("trainer,jobset: %+v, %v; want each once", got, err)
	}
}

// What an addon installs decodes, CRDs first, and binds its role to the
// user it runs as.
func TestManifestsBindTheAddonsIdentity(t *testing.T) {
	for _, a := range addon.Known {
		docs, err := a.Manifests()
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifests.Decode(docs...)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) < 3 || objs[0].GetKind() != "CustomResourceDefinition" {
			t.Fatalf("%s: %d objects, the first a %s; want its CRDs first", a.Name, len(objs), objs[0].GetKind())
		}
		last := objs[len(objs)-1]
		subjects, _, _ := unstructured.NestedSlice(last.Object, "subjects")
		if last.GetKind() != "ClusterRoleBinding" || len(subjects) != 1 || subjects[0].(map[string]any)["name"] != a.Identity.User {
			t.Errorf("%s: the last object, %s %s, does not bind its role to user %s", a.Name, last.GetKind(), last.GetName(), a.Identity.User)
		}
	}
}
