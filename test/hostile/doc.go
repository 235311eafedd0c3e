// Package hostile attacks berth's promises as the parties it does not
// trust would, against the real control plane `berth up` runs: a namespace
// user holding only the edit role in their namespace (testenv.AsEditor),
// who edits their own objects after berth queued them. Each test is one
// attempt and says which promise of docs/security.md it attacks; the suite
// grows with every way past the quota found.
package hostile
