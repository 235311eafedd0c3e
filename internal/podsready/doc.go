// Package podsready decides what happens to an admitted workload whose pods
// do not all become Ready (berth controller --wait-for-pods-ready): a gang
// that cannot start whole gives its quota back instead of holding it, is
// queued again after a backoff, and is deactivated after a number of tries.
// It reads and changes Workload objects only; the controller beside it
// (internal/controller/podsready) writes them, and the Job integration
// (internal/integration/jobs) records when the pods are all Ready.
package podsready
