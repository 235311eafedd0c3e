package cli

import (
	"fmt"
	"os"

	"github.com/berth-dev/berth/internal/components"
)

// componentCommand is how the supervisor re-executes berth as one component:
// berth component <name> <component flags...>. It is not meant for users.
const componentCommand = "component"

func runComponent(args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "usage: berth component <%v> [flags]\n", components.Names())
		return 2
	}
	return components.Run(args[0], args[1:], os.Stderr)
}
