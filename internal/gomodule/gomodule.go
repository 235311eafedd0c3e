// Package gomodule finds a Go module's files: tests read what other projects
// publish (their CRDs) from the module the Go module proxy serves, rather
// than from a copy kept here.
package gomodule

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// Dir downloads mod ("path@version") into the module cache, if it is not
// there yet, and returns its directory.
func Dir(mod string) (string, error) {
	tmp, err := os.MkdirTemp("", "gomodule-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = tmp // outside any module: no go.mod is touched
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory in %s", mod, out)
	}
	return info.Dir, nil
}
