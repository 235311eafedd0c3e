// Package doctor says what this machine lacks for what berth is asked to
// do (berth up, berth up --real-node, the test suite) and the command that
// gets each: `berth doctor`, and `make test` before it runs the tests.
// What is checked and what fixes it are decided from a probed Machine
// (doctor.go, tested without a machine); probing and fixing are the I/O
// beside it (probe.go).
package doctor
