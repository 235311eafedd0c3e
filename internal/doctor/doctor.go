package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Purpose is what the machine is checked for.
type Purpose string

const (
	// Up is `berth up` (and `--with`, whose controllers are built into
	// berth): loopback ports, disk, file and inotify limits.
	Up Purpose = "up"
	// RealNode is `berth up --real-node`: Linux, root, cgroups, and the
	// distribution's containerd, runc, CNI plugins, ip and iptables.
	RealNode Purpose = "real-node"
	// Tests is the whole test suite (`make test`): all of the above, plus
	// Go, git, Chromium (the dashboard's browser test) and npm (the
	// dashboard's front-end packages), and more inotify instances, as test
	// packages run control planes side by side.
	Tests Purpose = "tests"
)

// Purposes are every Purpose, in the order they build on each other.
var Purposes = []Purpose{Up, RealNode, Tests}

// ParsePurposes reads a comma-separated list of purposes.
func ParsePurposes(s string) ([]Purpose, error) {
	var out []Purpose
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(Purposes, Purpose(p)) {
			return nil, fmt.Errorf("--for: %q is not one of up, real-node, tests", p)
		}
		out = append(out, Purpose(p))
	}
	return out, nil
}

// Machine is what Probe found.
type Machine struct {
	OS   string
	Root bool
	// Go is the version `go` on PATH reports ("go1.26.8"), "" without one.
	Go string
	// Cgroup is "v1", "v2" or "" (none mounted at /sys/fs/cgroup).
	Cgroup string
	// Found are the programs and files looked for, by name or path.
	Found map[string]bool
	// InotifyInstances is fs.inotify.max_user_instances; OpenFiles the
	// hard limit on open files (Go raises its soft limit to it).
	InotifyInstances, OpenFiles int
	// FreeDisk is the free space, in bytes, where instances keep their
	// data (DataDir) and where tests do (TempDir).
	FreeDisk map[string]uint64
	DataDir  string
	TempDir  string
	// Loopback says a TCP port could be opened on 127.0.0.1.
	Loopback bool
	// AptGet says apt-get is there to install the missing packages.
	AptGet bool
}

// Finding is one check's outcome.
type Finding struct {
	Check string
	For   []Purpose
	OK    bool
	// Have is what the machine has; Need, when not OK, what it lacks.
	Have, Need string
	// Fix is the command that gets it; Packages the Debian packages among
	// it, which Fix installs as root.
	Fix      string
	Packages []string
	// Inotify, when not zero, is the limit to raise
	// fs.inotify.max_user_instances to.
	Inotify int
}

// Wanted limits and space.
const (
	upInotify    = 128 // a control plane's components hold about 10
	testsInotify = 512 // test packages run several, two packages at a time
	openFiles    = 4096
	upDisk       = 1 << 30
	testsDisk    = 4 << 30
	goWant       = "go1.26"
)

// Tools the real node runs, and where Debian has them.
var realNodeTools = []struct{ check, name, pkg string }{
	{"containerd", "containerd", "containerd"}, {"ctr", "ctr", "containerd"}, {"runc", "runc", "runc"},
	{"ip", "ip", "iproute2"}, {"iptables", "iptables", "iptables"},
	{"CNI plugins", CNIBridge, "containernetworking-plugins"},
}

// Paths looked for besides commands.
const (
	CNIBridge = "/usr/lib/cni/bridge"
	Chromium  = "/usr/bin/chromium"
)

// Looked are the names Probe must look for: commands on PATH, or paths.
func Looked() []string {
	out := []string{"git", "npm", Chromium}
	for _, t := range realNodeTools {
		out = append(out, t.name)
	}
	return out
}

// Examine says, for each check that one of purposes needs, whether m
// passes it and how to fix it when not.
func Examine(m Machine, purposes []Purpose) []Finding {
	wants := func(ps ...Purpose) []Purpose {
		var out []Purpose
		for _, p := range ps {
			if slices.Contains(purposes, p) {
				out = append(out, p)
			}
		}
		return out
	}
	var out []Finding
	add := func(f Finding) {
		if len(f.For) > 0 {
			out = append(out, f)
		}
	}
	found := func(name string) string {
		if m.Found[name] {
			return name
		}
		return ""
	}

	add(Finding{Check: "loopback", For: wants(Up, Tests), OK: m.Loopback, Have: yes(m.Loopback, "a port opens on 127.0.0.1"),
		Need: "a TCP port on 127.0.0.1 (every component listens on loopback only)", Fix: "bring the loopback interface up: ip link set lo up"})
	for _, d := range []struct {
		name, dir string
		need      uint64
		ps        []Purpose
	}{{"disk (data)", m.DataDir, upDisk, wants(Up, Tests)}, {"disk (tests)", m.TempDir, testsDisk, wants(Tests)}} {
		if d.dir == "" {
			continue
		}
		free := m.FreeDisk[d.dir]
		add(Finding{Check: d.name, For: d.ps, OK: free >= d.need, Have: gib(free) + " free in " + d.dir,
			Need: gib(d.need) + " free in " + d.dir, Fix: "free space in " + d.dir})
	}
	add(Finding{Check: "open files", For: wants(Up, Tests), OK: m.OpenFiles >= openFiles, Have: "hard limit " + strconv.Itoa(m.OpenFiles),
		Need: "a hard limit of " + strconv.Itoa(openFiles) + " open files", Fix: "ulimit -Hn " + strconv.Itoa(openFiles*16) + " (as root, in the shell that runs berth)"})
	inotify := func(need int, ps []Purpose) {
		add(Finding{Check: "inotify instances", For: ps, OK: m.InotifyInstances >= need,
			Have: "fs.inotify.max_user_instances " + strconv.Itoa(m.InotifyInstances),
			Need: "fs.inotify.max_user_instances " + strconv.Itoa(need) + " (a component past it fails with \"too many open files\")",
			Fix:  "sysctl fs.inotify.max_user_instances=" + strconv.Itoa(need), Inotify: need})
	}
	if ps := wants(Tests); len(ps) > 0 {
		inotify(testsInotify, ps)
	} else {
		inotify(upInotify, wants(Up))
	}

	add(Finding{Check: "linux", For: wants(RealNode, Tests), OK: m.OS == "linux", Have: m.OS,
		Need: "Linux: the real node runs containers with containerd and runc", Fix: "run on Linux"})
	add(Finding{Check: "root", For: wants(RealNode, Tests), OK: m.Root, Have: yes(m.Root, "root"),
		Need: "root: the real node mounts container file systems and sets up a bridge and iptables rules", Fix: "run as root"})
	add(Finding{Check: "cgroups", For: wants(RealNode, Tests), OK: m.Cgroup != "", Have: yes(m.Cgroup != "", "cgroup "+m.Cgroup),
		Need: "cgroups mounted at /sys/fs/cgroup (v1 or v2), for runc", Fix: "mount cgroups at /sys/fs/cgroup"})
	for _, t := range realNodeTools {
		add(tool(t.check, t.name, t.pkg, found(t.name), "the real node's", wants(RealNode, Tests)))
	}

	goOK := m.Go != "" && !older(m.Go, goWant)
	add(Finding{Check: "go", For: wants(Tests), OK: goOK, Have: yes(m.Go != "", m.Go),
		Need: "Go 1.26 (go.mod asks for it; an older go fetches it from the module proxy with GOTOOLCHAIN=auto)",
		Fix:  "install Go 1.26 from https://go.dev/dl/, or run with GOTOOLCHAIN=auto", Packages: pkgIf(m.Go == "", "golang-go")})
	add(tool("git", "git", "git", found("git"), "the version tests' and CI's", wants(Tests)))
	add(tool("chromium", Chromium, "chromium", found(Chromium), "the dashboard's browser test's", wants(Tests)))
	add(tool("npm", "npm", "npm", found("npm"), "the dashboard's front-end check's", wants(Tests)))
	return out
}

func tool(check, name, pkg, have, whose string, ps []Purpose) Finding {
	return Finding{Check: check, For: ps, OK: have != "", Have: yes(have != "", have),
		Need: name + " (" + whose + ")", Fix: "apt-get install " + pkg, Packages: []string{pkg}}
}

func yes(ok bool, what string) string {
	if ok {
		return what
	}
	return "none"
}

func pkgIf(cond bool, pkg string) []string {
	if cond {
		return []string{pkg}
	}
	return nil
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// older reports whether Go version v ("go1.25.3") is older than want
// ("go1.26").
func older(v, want string) bool {
	parse := func(s string) []int {
		var out []int
		for _, p := range strings.Split(strings.TrimPrefix(s, "go"), ".") {
			digits := p[:len(p)-len(strings.TrimLeft(p, "0123456789"))] // "27rc1": 27
			n, err := strconv.Atoi(digits)
			if err != nil {
				break
			}
			out = append(out, n)
		}
		return out
	}
	a, b := parse(v), parse(want)
	for len(a) < len(b) {
		a = append(a, 0)
	}
	return slices.Compare(a[:len(b)], b) < 0
}

// Missing are the findings that did not pass.
func Missing(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if !f.OK {
			out = append(out, f)
		}
	}
	return out
}

// Plan is what Fix would do for the missing findings on m: the Debian
// packages to install and the inotify limit to set, and what it cannot
// fix (which stay for the user, with their commands).
type Plan struct {
	Packages []string
	Inotify  int
	Left     []Finding
}

// PlanFixes is what can be fixed of missing on m: packages only as root
// with apt-get, the inotify limit only as root.
func PlanFixes(m Machine, missing []Finding) Plan {
	var p Plan
	for _, f := range missing {
		switch {
		case len(f.Packages) > 0 && m.Root && m.AptGet:
			for _, pkg := range f.Packages {
				if !slices.Contains(p.Packages, pkg) {
					p.Packages = append(p.Packages, pkg)
				}
			}
		case f.Inotify > 0 && m.Root:
			p.Inotify = max(p.Inotify, f.Inotify)
		default:
			p.Left = append(p.Left, f)
		}
	}
	return p
}
