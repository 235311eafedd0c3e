// Command berth is a batch-workload control plane for Kubernetes. See README.md.
package main

import (
	"os"
	"path/filepath"

	"github.com/berth-dev/berth/internal/cli"
)

// Installed as kubectl-berth, it is a kubectl plugin: `kubectl berth ...`.
func main() { os.Exit(cli.MainAs(filepath.Base(os.Args[0]), os.Args[1:])) }
