// Command berth is a batch-workload control plane for Kubernetes. See README.md.
package main

import (
	"os"

	"github.com/berth-dev/berth/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
