// Package addon runs other projects' controllers as components of a local
// berth instance (`berth up --with jobset`), so that the kinds they manage
// can be queued on a laptop: their CRDs and RBAC are installed with berth's,
// and their controller runs from the berth binary, supervised and restarted
// like the control plane's own components and shown by `berth status`.
package addon
