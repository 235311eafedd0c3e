// Command doctor is `berth doctor` without building berth (and so
// Kubernetes) first: `make test` runs it with --for tests --fix before the
// tests, so that a fresh machine gets what they need, or is told what it
// lacks and how to get it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/berth-dev/berth/internal/doctor"
)

func main() {
	purposes := flag.String("for", "tests", "what to check for: up, real-node, tests (comma-separated)")
	fix := flag.Bool("fix", false, "as root, install the missing Debian packages and raise the inotify limit first")
	flag.Parse()
	ps, err := doctor.ParsePurposes(*purposes)
	if err == nil {
		err = doctor.Run(os.Stdout, ps, doctor.DataDir(), os.TempDir(), *fix)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
