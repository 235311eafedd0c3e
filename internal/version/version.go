// Package version says which berth this is: its version, the commit it was
// built from, and that commit's date. The same Info appears in `berth
// version`, the controller's first log line and its berth_build_info
// metric, so that a running controller can be matched to its source.
package version

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Set at link time by builds that know better than the Go toolchain (a
// release, the image), e.g. -ldflags "-X github.com/berth-dev/berth/internal/version.version=v0.4.0".
var version, commit, date, modified string

// Info is what a build says of itself.
type Info struct {
	// Version is the module version: a release tag (v0.4.0), or the
	// pseudo-version the Go toolchain stamps from the commit
	// (v0.0.0-20261126011500-165114dabcde, "+dirty" when the work tree had
	// changes); "devel" when the build knows none.
	Version string `json:"version"`
	// Commit is the full commit hash, "" when unknown.
	Commit string `json:"commit"`
	// Date is the commit's time (RFC 3339), not the build's, so that two
	// builds of one commit are the same bytes.
	Date string `json:"date"`
	// Modified says the work tree had uncommitted changes.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	// Checkout is the work tree the rest was read from with git when the
	// binary ran, because its build stamped no commit (`go run`, or `go
	// build` where GOFLAGS holds -buildvcs=false); "" when the build said.
	Checkout string `json:"checkout,omitempty"`
}

var (
	once sync.Once
	self Info
)

// Get is this binary's Info. A build that stamped no commit is read from
// git in the checkout it was compiled from, when that is still on disk.
func Get() Info {
	once.Do(func() {
		info, _ := debug.ReadBuildInfo()
		self = from(info, version, commit, date)
		if modified == "true" {
			self.Modified = true
		}
		if self.Commit == "" {
			self = orCheckout(self, checkout())
		}
	})
	return self
}

// checkout is the root of the berth module this file was compiled in, ""
// when the build trimmed its paths (a release, the image) or the tree has
// gone.
func checkout() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(string(mod), "\n")
	if strings.TrimSpace(first) != "module "+modulePath {
		return ""
	}
	return root
}

const modulePath = "github.com/berth-dev/berth"

// orCheckout is i as git tells it in dir, when dir is a git work tree;
// else i unchanged.
func orCheckout(i Info, dir string) Info {
	if dir == "" {
		return i
	}
	g, ok, err := FromGit(dir)
	if !ok || err != nil {
		return i
	}
	g.GoVersion = i.GoVersion
	g.Checkout = dir
	return g
}

// from works Info out of the build's own record, the link-time values
// winning where they are set.
func from(bi *debug.BuildInfo, linkedVersion, linkedCommit, linkedDate string) Info {
	i := Info{GoVersion: runtime.Version()}
	if bi != nil {
		i.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Date = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if linkedVersion != "" {
		i.Version = linkedVersion
	}
	if linkedCommit != "" {
		i.Commit = linkedCommit
	}
	if linkedDate != "" {
		i.Date = linkedDate
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	return i
}

// Short is the commit's first 7 characters, with "+" when the work tree
// had changes; "unknown" without a commit.
func (i Info) Short() string {
	c := i.Commit
	if c == "" {
		return "unknown"
	}
	if len(c) > 7 {
		c = c[:7]
	}
	if i.Modified && !strings.HasSuffix(c, "+") {
		c += "+"
	}
	return c
}

// String is the one line `berth version` prints.
func (i Info) String() string {
	s := "berth " + i.Version + ", commit " + i.Short()
	if i.Date != "" {
		s += " of " + i.Date
	}
	s += ", " + i.GoVersion
	if i.Checkout != "" {
		s += " (read from git in " + i.Checkout + " at run time: the build stamped no commit)"
	}
	return s
}

// Pseudo is the version Go gives a commit without a tag:
// v0.0.0-<commit time, UTC, yyyymmddhhmmss>-<its first 12 characters>.
func Pseudo(commit string, at time.Time) string {
	if len(commit) > 12 {
		commit = commit[:12]
	}
	return "v0.0.0-" + at.UTC().Format("20060102150405") + "-" + commit
}

// LDFlags are the linker flags that set a build's version, commit, date and
// whether the work tree was modified, for builds where the toolchain does
// not stamp them (-buildvcs=false) or to name a release.
func LDFlags(i Info) string {
	const pkg = "github.com/berth-dev/berth/internal/version"
	f := "-X " + pkg + ".version=" + i.Version + " -X " + pkg + ".commit=" + i.Commit + " -X " + pkg + ".date=" + i.Date
	if i.Modified {
		f += " -X " + pkg + ".modified=true"
	}
	return f
}
