package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261126011500-165114dabcde+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "165114dabcdef0123456789abcdef0123456789a"},
			{Key: "vcs.time", Value: "2026-11-26T01:15:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name                  string
		bi                    *debug.BuildInfo
		version, commit, date string
		want                  Info
		wantLine              string
	}{{
		name: "stamped by the toolchain", bi: stamped,
		want: Info{Version: "v0.0.0-20261126011500-165114dabcde+dirty", Commit: "165114dabcdef0123456789abcdef0123456789a",
			Date: "2026-11-26T01:15:00Z", Modified: true, GoVersion: "go1.26.8"},
		wantLine: "berth v0.0.0-20261126011500-165114dabcde+dirty, commit 165114d+ of 2026-11-26T01:15:00Z, go1.26.8",
	}, {
		name: "a release, set at link time", bi: stamped, version: "v0.4.0", commit: "abcdef0123", date: "2026-12-01T00:00:00Z",
		want:     Info{Version: "v0.4.0", Commit: "abcdef0123", Date: "2026-12-01T00:00:00Z", Modified: true, GoVersion: "go1.26.8"},
		wantLine: "berth v0.4.0, commit abcdef0+ of 2026-12-01T00:00:00Z, go1.26.8",
	}, {
		name: "built outside version control", bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
		want:     Info{Version: "devel", GoVersion: "go1.26.8"},
		wantLine: "berth devel, commit unknown, go1.26.8",
	}, {
		name: "installed from the module proxy", bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}},
		want:     Info{Version: "v0.4.0", GoVersion: "go1.26.8"},
		wantLine: "berth v0.4.0, commit unknown, go1.26.8",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := from(tc.bi, tc.version, tc.commit, tc.date)
			if got != tc.want {
				t.Errorf("from = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.wantLine {
				t.Errorf("String() = %q, want %q", got.String(), tc.wantLine)
			}
		})
	}
}

func TestPseudoAndLDFlags(t *testing.T) {
	at := time.Date(2026, 11, 26, 1, 15, 0, 0, time.FixedZone("CET", 3600))
	if got, want := Pseudo("165114dabcdef0123456789abcdef0123456789a", at), "v0.0.0-20261126001500-165114dabcde"; got != want {
		t.Errorf("Pseudo = %q, want %q (the commit's time in UTC, 12 characters of it)", got, want)
	}
	i := Info{Version: "v0.4.0", Commit: "abc", Date: "2026-12-01T00:00:00Z", Modified: true}
	want := "-X github.com/berth-dev/berth/internal/version.version=v0.4.0 -X github.com/berth-dev/berth/internal/version.commit=abc" +
		" -X github.com/berth-dev/berth/internal/version.date=2026-12-01T00:00:00Z -X github.com/berth-dev/berth/internal/version.modified=true"
	if got := LDFlags(i); got != want {
		t.Errorf("LDFlags = %q\nwant %q", got, want)
	}
}

// A build that stamped no commit (go run, -buildvcs=false) says what git
// says of the checkout it was compiled from, and that it read it at run
// time; outside a git work tree it stays "devel".
func TestUnstampedBuildReadsItsCheckout(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com",
			"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com",
			"GIT_AUTHOR_DATE=2026-11-26T01:15:00Z", "GIT_COMMITTER_DATE=2026-11-26T01:15:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	unstamped := Info{Version: "devel", GoVersion: "go1.26.8"}
	if got := orCheckout(unstamped, dir); got != unstamped {
		t.Errorf("outside a git work tree: %+v, want it unchanged", got)
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+modulePath+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "go.mod")
	git("commit", "-q", "-m", "first")
	head := git("rev-parse", "HEAD")

	got := orCheckout(unstamped, dir)
	want := Info{Version: "v0.0.0-20261126011500-" + head[:12], Commit: head, Date: "2026-11-26T01:15:00Z", GoVersion: "go1.26.8", Checkout: dir}
	if got != want {
		t.Errorf("in a checkout: %+v\nwant %+v", got, want)
	}
	line := "berth " + want.Version + ", commit " + head[:7] + " of 2026-11-26T01:15:00Z, go1.26.8 (read from git in " + dir + " at run time: the build stamped no commit)"
	if got.String() != line {
		t.Errorf("String() = %q\nwant %q", got.String(), line)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := orCheckout(unstamped, dir); !got.Modified || !strings.HasSuffix(got.Version, "+dirty") {
		t.Errorf("with a changed work tree: %+v, want it marked modified", got)
	}
}

// The test binary is built from this checkout without -trimpath, as go run
// builds berth: checkout finds the module's root.
func TestCheckoutIsWhereThisWasCompiled(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got := checkout(); got != root && !strings.Contains(os.Getenv("GOFLAGS"), "-trimpath") {
		t.Errorf("checkout() = %q, want %q", got, root)
	}
}
