// Package raydashboard answers KubeRay's calls to the Ray dashboard of a
// cluster whose head pod runs on one of berth's simulated nodes. No Ray runs
// there, so, as a simulated pod's life is told by its annotations, a Ray
// job's is told by its RayJob's (which KubeRay copies onto the RayCluster
// it makes): berth.dev/sim-duration, how long the job runs from when its
// cluster was made, and berth.dev/sim-exit-code, non-zero for a job that
// fails. Without a duration the job runs until it is stopped. Ray Serve
// (a RayService's applications, and the proxy on each pod) is not
// simulated: asked, it says so, and is never ready. A head, or a pod, on a
// real node is called as KubeRay calls it.
//
// JobInfo is the decision, pure; Provider is the thin edge KubeRay's
// controllers are given.
package raydashboard
