package fromkueue_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/fromkueue"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// matchGolden checks got against the .golden file beside the testdata file
// it was made from; -update rewrites it.
func matchGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	golden := strings.TrimSuffix(file, ".yaml") + ".golden"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (go test ./internal/fromkueue -update rewrites it):\n%s", golden, got)
	}
}

// Each Kueue manifest in testdata imports to the berth objects and the
// list of what was left behind in its .golden file.
func TestImportGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/kueue-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			docs, err := fromkueue.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for _, d := range docs {
				o, err := fromkueue.Import(d)
				if err != nil {
					t.Fatal(err)
				}
				data, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "---\n%s", data)
				for _, d := range o.Dropped {
					fmt.Fprintf(&b, "# not carried over: %s: %s\n", d.Field, d.Why)
				}
			}
			matchGolden(t, file, b.Bytes())
		})
	}
}

func TestImportRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		doc  string
		want string
	}{
		"a Topology without levels": {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata: {name: dc}\nspec: {levels: []}",
			"Topology dc: spec.levels is empty"},
		"a kind berth lacks": {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata: {name: p}",
			"ProvisioningRequestConfig p: berth has no ProvisioningRequestConfig yet"},
		"a check of a Kueue controller berth lacks": {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: AdmissionCheck\nmetadata: {name: prov}\n" +
			"spec: {controllerName: kueue.x-k8s.io/provisioning-request}",
			"AdmissionCheck prov: spec.controllerName kueue.x-k8s.io/provisioning-request is a controller of Kueue's that berth has no equivalent of yet"},
		"a worker's kubeconfig as a file": {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: MultiKueueCluster\nmetadata: {name: w1}\n" +
			"spec: {kubeConfig: {locationType: Path, location: /etc/w1.kubeconfig}}",
			"MultiKueueCluster w1: spec.kubeConfig.locationType is Path: berth reads a worker's kubeconfig from a Secret only"},
		"a worker without a kubeconfig": {"apiVersion: kueue.x-k8s.io/v1beta1\nkind: MultiKueueCluster\nmetadata: {name: w1}",
			"MultiKueueCluster w1: spec.kubeConfig.location is empty"},
		"not Kueue's": {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ns}",
			`Job ns/j: apiVersion "batch/v1" is not Kueue's`},
		"an unknown version": {"apiVersion: kueue.x-k8s.io/v2\nkind: ClusterQueue\nmetadata: {name: q}",
			"Kueue API version v2 is not one berth imports"},
	} {
		t.Run(name, func(t *testing.T) {
			docs, err := fromkueue.ReadAll(strings.NewReader(tc.doc))
			if err != nil || len(docs) != 1 {
				t.Fatalf("%d docs, %v", len(docs), err)
			}
			if _, err := fromkueue.Import(docs[0]); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
