// Package integrations tests switching integrations off (berth controller
// --integrations): its control plane's controller queues Jobs and JobSets
// only, so a Pod or a Deployment with a queue label is left alone, as Kueue
// leaves the objects of a framework it was not asked to manage; and an
// integration whose CRD is installed after berth started (JobSet's) turning
// on. The control plane is the package's own, for that flag and that CRD.
package integrations
