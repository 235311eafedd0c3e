package fromkueue_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/fromkueue"
)

// importConfiguration reads a file of testdata holding one Kueue
// Configuration and imports it.
func importConfiguration(t *testing.T, file string) fromkueue.Settings {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, err := fromkueue.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || !fromkueue.IsConfiguration(docs[0]) {
		t.Fatalf("%s: want one Kueue Configuration", file)
	}
	s, err := fromkueue.ImportConfiguration(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each Kueue Configuration in testdata imports to the chart values and the
// list of what was left behind in its .golden file.
func TestImportConfigurationGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/configuration-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s := importConfiguration(t, file)
			data, err := yaml.Marshal(s.Values)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.Write(data)
			for _, d := range s.Dropped {
				fmt.Fprintf(&b, "# not carried over: %s: %s\n", d.Field, d.Why)
			}
			for _, n := range s.Notes {
				fmt.Fprintf(&b, "# check: %s\n", n)
			}
			matchGolden(t, file, b.Bytes())
		})
	}
}

// What is not a Configuration berth reads is refused, saying why.
func TestImportConfigurationRefuses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"apiVersion: config.kueue.x-k8s.io/v1alpha1\nkind: Configuration", "berth reads config.kueue.x-k8s.io v1beta1 and v1beta2"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  controller_manager_config.yaml: 'kind: Other'", "is not a Kueue Configuration"},
	} {
		var in map[string]any
		if err := yaml.Unmarshal([]byte(tc.in), &in); err != nil {
			t.Fatal(err)
		}
		if _, err := fromkueue.ImportConfiguration(in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
	var cm map[string]any
	_ = yaml.Unmarshal([]byte("apiVersion: v1\nkind: ConfigMap\ndata: {other: x}"), &cm)
	if fromkueue.IsConfiguration(cm) {
		t.Error("a ConfigMap without Kueue's key taken for a Configuration")
	}
}
