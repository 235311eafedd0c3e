package stage

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

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
		stages, err := Parse(data, p)
		out = append(out, stages...)
		return err
	})
	return out, err
}

// LoadFiles reads stages from files, or from every .yaml/.yml/.json file in
// a directory.
func LoadFiles(paths ...string) ([]*kwokv1.Stage, error) {
	var out []*kwokv1.Stage
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		files := []string{p}
		if info.IsDir() {
			files = nil
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, err
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
				return nil, err
			}
			stages, err := Parse(data, f)
			if err != nil {
				return nil, err
			}
			out = append(out, stages...)
		}
	}
	return out, nil
}

// Parse reads the Stage documents of a YAML or JSON stream; source names
// it in errors. Documents of other kinds are an error: a stage file holds stages.
func Parse(data []byte, source string) ([]*kwokv1.Stage, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*kwokv1.Stage
	for i := 0; ; i++ {
		var s kwokv1.Stage
		err := dec.Decode(&s)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
		if s.APIVersion == "" && s.Kind == "" && s.Name == "" {
			continue // an empty document
		}
		if s.APIVersion != kwokv1.GroupVersion.String() || s.Kind != "Stage" {
			return nil, fmt.Errorf("%s: document %d (%s): apiVersion %q kind %q; want %s Stage",
				source, i+1, s.Name, s.APIVersion, s.Kind, kwokv1.GroupVersion)
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
