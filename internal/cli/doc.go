// Package cli holds berth's user-facing commands. Each command parses flags,
// calls the package that does the work and prints the result; no behaviour
// lives here that a test would need to reach through the command line.
package cli
