package version

import (
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// FromGit is the Info of a build of the work tree in dir, read from git:
// the commit checked out and its time, whether anything tracked is
// changed, and as version the tag on the commit (v*), else Go's
// pseudo-version for it; "+dirty" marks a changed work tree. ok is false
// outside a git work tree.
func FromGit(dir string) (i Info, ok bool, err error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return Info{}, false, nil
	}
	date, err := git("show", "-s", "--format=%cI", "HEAD")
	if err != nil {
		return Info{}, false, fmt.Errorf("git show: %w", err)
	}
	at, err := time.Parse(time.RFC3339, date)
	if err != nil {
		return Info{}, false, fmt.Errorf("the commit's date %q: %w", date, err)
	}
	status, err := git("status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return Info{}, false, fmt.Errorf("git status: %w", err)
	}
	i = Info{Commit: commit, Date: at.UTC().Format(time.RFC3339), Modified: status != ""}
	if tag, err := git("describe", "--tags", "--exact-match", "--match", "v*", "HEAD"); err == nil && tag != "" {
		i.Version = tag
	} else {
		i.Version = Pseudo(commit, at)
	}
	if i.Modified {
		i.Version += "+dirty"
	}
	return i, true, nil
}
