// Command crdlimits bounds the length of every resource.Quantity in the
// generated CRDs (make generate runs it after controller-gen).
//
// The API server estimates the cost of each CEL rule from the largest value a
// field may hold. A Quantity is an int-or-string with no length limit, so any
// rule that reads one (nominalQuota must not be negative; lendingLimit must not
// exceed nominalQuota) is costed as if it parsed megabytes, and the CRD is
// refused. controller-gen cannot put maxLength on a Quantity field, hence this
// step. No quantity a user writes needs more than 40 characters.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

const maxLength = 40

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdlimits <directory of CRD YAML files>")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.yaml"))
	if err != nil || len(files) == 0 {
		fmt.Fprintf(os.Stderr, "crdlimits: no CRDs in %s (%v)\n", os.Args[1], err)
		os.Exit(1)
	}
	for _, f := range files {
		if err := limit(f); err != nil {
			fmt.Fprintf(os.Stderr, "crdlimits: %s: %v\n", f, err)
			os.Exit(1)
		}
	}
}

func limit(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	walk(doc)
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// walk sets maxLength on every int-or-string schema with a pattern (that is, a Quantity).
func walk(v any) {
	switch n := v.(type) {
	case map[string]any:
		if n["x-kubernetes-int-or-string"] == true && n["pattern"] != nil {
			n["maxLength"] = maxLength
		}
		for _, c := range n {
			walk(c)
		}
	case []any:
		for _, c := range n {
			walk(c)
		}
	}
}
