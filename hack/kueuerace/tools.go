//go:build tools

// Package kueuerace pins the Kueue release whose scheduler-performance
// harness race.sh builds and runs beside berth bench baseline; it is a
// module of its own because Kueue's Kubernetes libraries are not berth's.
package kueuerace

import (
	_ "sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue"
	_ "sigs.k8s.io/kueue/test/performance/scheduler/runner"
)
