// Package guard is what the API server itself refuses of an object berth
// queued, unless berth asks: the ValidatingAdmissionPolicies that keep a
// namespace user (the edit role) from running pods past their queue's quota
// by editing their own objects after berth held them.
//
// Every kind berth queues is described once, as data (Kind: its resource,
// the field that holds it back, its gates and labels), and the policies are
// made from those descriptions, so a kind added later is guarded by saying
// what it is. The rules, for every queued object (one carrying a queue
// label, berth's or Kueue's), on every update by anyone but berth:
//
//   - its queue and priority labels change only while it is held back (a
//     suspended Job or JobSet); a kind never held as a whole (a Pod, a
//     Deployment) keeps them for life;
//   - what holds it back is let go only by berth: a Job is unsuspended, a
//     Pod's gates are lifted, by berth alone, once it is admitted;
//   - it is not made to run more pods at once unless the update holds it
//     back too (berth's webhook suspends a Job that grows, in the same write);
//   - the labels that tie it to berth's bookkeeping (a pod group, a prebuilt
//     Workload) do not change, and a queued Pod is not resized in place.
//
// A policy fails closed, runs in the API server (no call to berth, so it
// holds while berth is down), and is installed by `berth up` and by the
// chart from the same code (Policies).
package guard
