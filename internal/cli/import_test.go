package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// runImport runs `berth import` with args, returning stdout, stderr and
// its error.
func runImport(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return runCommand(t, append([]string{"import"}, args...)...)
}

// Kueue's manager ConfigMap beside its queues: the queues go to stdout,
// the Configuration to the values file, with what was left behind said
// on stderr and in the file; without --values it is refused, naming the
// flag, and the queues are still written.
func TestImportWritesAKueueConfigurationAsChartValues(t *testing.T) {
	dir := t.TempDir()
	config, err := os.ReadFile("../fromkueue/testdata/configuration-v1beta1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "kueue.yaml")
	queue := "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: main, namespace: team}\nspec: {clusterQueue: cq}\n"
	if err := os.WriteFile(input, append(append(config, "\n---\n"...), queue...), 0o600); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(dir, "values.yaml")
	out, errOut, err := runImport(t, "-f", input, "--values", values)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "kind: LocalQueue") || strings.Contains(out, "Configuration") {
		t.Errorf("stdout is not the berth objects alone:\n%s", out)
	}
	for _, want := range []string{"Configuration: not carried over: featureGates:", "Configuration: check: configuredKinds: RayJob's controllers",
		"berth's chart values written to " + values} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	data, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	var vals struct {
		Controller struct {
			Integrations []string `json:"integrations"`
		} `json:"controller"`
	}
	if err := yaml.Unmarshal(data, &vals); err != nil || strings.Join(vals.Controller.Integrations, ",") != "batch/job,jobset.x-k8s.io/jobset,trainer.kubeflow.org/trainjob,pod" {
		t.Errorf("values file (%v):\n%s", err, data)
	}
	if !strings.Contains(string(data), "# not carried over: integrations.frameworks[sparkoperator.k8s.io/sparkapplication]") {
		t.Errorf("the values file does not say what was left behind:\n%s", data)
	}

	out, _, err = runImport(t, "-f", input)
	if err == nil || !strings.Contains(err.Error(), "give --values FILE") || !strings.Contains(out, "kind: LocalQueue") {
		t.Errorf("without --values: %v\n%s", err, out)
	}
}
