// Package e2e runs the berth binary the way users and scripts do and checks
// what they rely on: exit codes, output, and the processes and data left behind.
package e2e
