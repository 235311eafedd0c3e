// Package integrations tests switching integrations off (berth controller
// --integrations): its control plane's controller queues Jobs only, so a
// Pod or a Deployment with a queue label is left alone, as Kueue leaves the
// objects of a framework it was not asked to manage. The control plane is
// the package's own, for that flag.
package integrations
