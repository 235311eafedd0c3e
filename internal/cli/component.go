package cli

import (
	"fmt"
	"os"

	"github.com/berth-dev/berth/internal/kubeservers"
)

// componentCommand is how the supervisor re-executes berth as one component:
// berth component <name> <component flags...>. It is not meant for users.
const componentCommand = "component"

func runComponent(args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "usage: berth component <%v> [flags]\n", kubeservers.Names())
		return 2
	}
	return kubeservers.Run(args[0], args[1:], os.Stderr)
}
