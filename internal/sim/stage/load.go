package stage

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
)

//go:embed defaults/*.yaml
var defaults embed.FS

// Defaults returns berth's default stages: nodes become Ready, bound pods
// Running and Ready, pods carrying berth.dev/sim-duration finish after it
// (failing with berth.dev/sim-exit-code when that is not 0), and deleted
// pods go away.
func Defaults() ([]*kwokv1.Stage, error) {
	var out []*kwokv1.Stage
	err := fs.WalkDir(defaults, "defaults", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := defaults.ReadFile(p)
		if err != nil {
			return err
		}
		stages, _, err := Parse(data, p)
		out = append(out, stages...)
		return err
	})
	return out, err
}

// LoadFiles reads stages from files, or from every .yaml/.yml/.json file in
// a directory; skipped lists the documents that are not Stages (a stage
// directory may hold a StorageClass beside its volume stages).
func LoadFiles(paths ...string) (out []*kwokv1.Stage, skipped []string, err error) {
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		files := []string{p}
		if info.IsDir() {
			files = nil
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, nil, err
			}
			for _, e := range entries {
				switch filepath.Ext(e.Name()) {
				case ".yaml", ".yml", ".json":
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
			sort.Strings(files)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, nil, err
			}
			stages, skip, err := Parse(data, f)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, stages...)
			skipped = append(skipped, skip...)
		}
	}
	return out, skipped, nil
}

// Parse reads the Stage documents of a YAML or JSON stream; source names
// it in errors. Documents of other kinds are skipped and listed in skipped
// ("file: document 2 (storage.k8s.io/v1 StorageClass standard)"): a stage
// directory may hold what its stages need beside them. A document that does
// not parse is an error.
func Parse(data []byte, source string) (out []*kwokv1.Stage, skipped []string, err error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 0; ; i++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, skipped, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
		var head metav1.PartialObjectMetadata
		if len(raw) == 0 || string(raw) == "null" {
			continue // an empty document
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
		if head.APIVersion == "" && head.Kind == "" && head.Name == "" {
			continue
		}
		if head.APIVersion != kwokv1.GroupVersion.String() || head.Kind != "Stage" {
			skipped = append(skipped, fmt.Sprintf("%s: document %d (%s %s %s)", source, i+1, head.APIVersion, head.Kind, head.Name))
			continue
		}
		var s kwokv1.Stage
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, nil, fmt.Errorf("%s: document %d (%s): %w", source, i+1, head.Name, err)
		}
		out = append(out, &s)
	}
}

// CompileAll compiles stages, reporting every stage that fails.
func CompileAll(stages []*kwokv1.Stage) ([]*Stage, error) {
	var out []*Stage
	var errs []error
	seen := map[string]bool{}
	for _, s := range stages {
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("stage %q is defined twice", s.Name))
			continue
		}
		seen[s.Name] = true
		c, err := Compile(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	SortByName(out)
	return out, errors.Join(errs...)
}
