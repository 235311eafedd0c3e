package version

import (
	"runtime/debug"
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
