// Package jobset runs the JobSet controller (sigs.k8s.io/jobset, built from
// its Go module) as a component of a local berth instance: its reconcilers
// and its defaulting and validating webhooks, served on loopback with a
// certificate made at each start, and the webhook configurations that point
// the API server at them.
package jobset
