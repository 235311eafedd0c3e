// Package kubeversion makes Kubernetes' servers built into berth report the
// version of the k8s.io/kubernetes module they are built from. Its own
// package, with no dependency but the version it sets, so that it is
// initialised before any of Kubernetes' packages reads that version.
package kubeversion

import (
	"runtime/debug"
	"strings"
	_ "unsafe" // for go:linkname

	"k8s.io/component-base/version"
)

// Kubernetes' servers report the version their build stamped with -X
// (kube-apiserver's /version, a kubelet's Node): without it, as under `go
// run`, they say v0.0.0-master, which a client checking the cluster's
// version (Helm's kubeVersion) refuses. The version of the k8s.io/kubernetes
// module they are built from is the true one; it is set here, once, unless
// a build stamped one.
//
//go:linkname gitVersion k8s.io/component-base/version.gitVersion
var gitVersion string

//go:linkname gitMajor k8s.io/component-base/version.gitMajor
var gitMajor string

//go:linkname gitMinor k8s.io/component-base/version.gitMinor
var gitMinor string

//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
var gitTreeState string

func init() {
	if !strings.HasPrefix(version.Get().GitVersion, "v0.0.0-master") {
		return
	}
	v := moduleVersion("k8s.io/kubernetes")
	major, rest, ok := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	if !ok || minor == "" {
		return
	}
	was := [4]string{gitVersion, gitMajor, gitMinor, gitTreeState}
	gitVersion, gitMajor, gitMinor, gitTreeState = v, major, minor, "clean"
	// Get reports the dynamic version, copied from gitVersion when the
	// version package was initialised; only one with gitVersion's own
	// version may replace it. One that is not semantic leaves all as it was.
	if version.SetDynamicVersion(v) != nil {
		gitVersion, gitMajor, gitMinor, gitTreeState = was[0], was[1], was[2], was[3]
	}
}

// moduleVersion is the version of module path this binary was built with,
// "" when it does not say.
func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range info.Deps {
		if m.Path == path {
			if m.Replace != nil && m.Replace.Version != "" {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}
