// Command chart packages berth's Helm chart (charts/berth) for `make chart`:
// a .tgz stamped with berth's version read from git (version.FromGit, as
// make image labels the image), so that its appVersion, and the image tag
// it installs by default, name the same build.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/berth-dev/berth/internal/helmchart"
	"github.com/berth-dev/berth/internal/version"
)

func main() {
	dest := flag.String("output", "bin", "folder to write the chart's .tgz in")
	flag.Parse()
	v, ok, err := version.FromGit(".")
	if err == nil && !ok {
		err = fmt.Errorf("not in a git work tree: the chart is stamped with the commit's version")
	}
	if err == nil {
		var path string
		if path, err = helmchart.Package(helmchart.Dir, *dest, v.Version); err == nil {
			fmt.Printf("wrote %s (berth %s)\n", path, v.Version)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}
