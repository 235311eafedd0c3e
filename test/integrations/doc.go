// Package integrations tests switching integrations off (berth controller
// --integrations): its control plane's controller queues Jobs and JobSets
// only, so a Pod or a Deployment with a queue label is left alone, as Kueue
// leaves the objects of a framework it was not asked to manage; and an
// integration whose CRD is installed after berth started (JobSet's) turning
// on; and a kind queued from configuration alone (--configured-kinds:
// MPIJob, with a stand-in for its operator that the test runs). The control
// plane is the package's own, for those flags and CRDs.
package integrations
