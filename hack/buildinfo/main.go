// Command buildinfo prints the linker flags that stamp a berth build with
// its version, commit and commit date, read from git (version.FromGit):
// `go build -ldflags "$(go run ./hack/buildinfo)"`. Outside a git work tree
// it prints nothing, and berth says "devel".
package main

import (
	"fmt"
	"os"

	"github.com/berth-dev/berth/internal/version"
)

func main() {
	i, ok, err := version.FromGit(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildinfo:", err)
		os.Exit(1)
	}
	if ok {
		fmt.Println(version.LDFlags(i))
	}
}
