package doctor

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// ready is a machine that has everything every purpose needs.
func ready() Machine {
	m := Machine{OS: "linux", Root: true, Go: "go1.26.8", Cgroup: "v1", Found: map[string]bool{},
		InotifyInstances: 512, OpenFiles: 1 << 20, DataDir: "/root/.berth", TempDir: "/tmp",
		FreeDisk: map[string]uint64{"/root/.berth": 50 << 30, "/tmp": 50 << 30}, Loopback: true, AptGet: true}
	for _, n := range Looked() {
		m.Found[n] = true
	}
	return m
}

func checks(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Check)
	}
	return out
}

func TestReadyMachineLacksNothing(t *testing.T) {
	for _, ps := range [][]Purpose{{Up}, {RealNode}, {Tests}, Purposes} {
		if miss := Missing(Examine(ready(), ps)); len(miss) > 0 {
			t.Errorf("for %v: missing %v", ps, checks(miss))
		}
	}
}

// What a fresh Debian machine lacks, for each purpose: berth up needs none
// of the real node's tools, the tests need all of them.
func TestFreshMachine(t *testing.T) {
	fresh := ready()
	fresh.Found = map[string]bool{"git": true}
	fresh.InotifyInstances = 128
	for _, tc := range []struct {
		ps   []Purpose
		want []string
	}{
		{[]Purpose{Up}, nil},
		{[]Purpose{RealNode}, []string{"containerd", "ctr", "runc", "ip", "iptables", "CNI plugins"}},
		{[]Purpose{Tests}, []string{"inotify instances", "containerd", "ctr", "runc", "ip", "iptables", "CNI plugins", "chromium", "npm"}},
	} {
		if got := checks(Missing(Examine(fresh, tc.ps))); !slices.Equal(got, tc.want) {
			t.Errorf("for %v: missing %v, want %v", tc.ps, got, tc.want)
		}
	}
}

// As root with apt-get, the packages are installed (each once) and the
// inotify limit raised; what no package fixes is left to the user, with
// its command. Without root, all of it is left.
func TestPlanFixes(t *testing.T) {
	m := ready()
	m.Found = map[string]bool{"git": true, "ip": true}
	m.InotifyInstances = 128
	m.OpenFiles = 1024
	miss := Missing(Examine(m, []Purpose{Tests}))

	p := PlanFixes(m, miss)
	if want := []string{"containerd", "runc", "iptables", "containernetworking-plugins", "chromium", "npm"}; !slices.Equal(p.Packages, want) {
		t.Errorf("packages %v, want %v", p.Packages, want)
	}
	if p.Inotify != 512 {
		t.Errorf("inotify %d, want 512", p.Inotify)
	}
	if got := checks(p.Left); !slices.Equal(got, []string{"open files"}) || !strings.Contains(p.Left[0].Fix, "ulimit -Hn") {
		t.Errorf("left %v (%+v), want open files with its ulimit command", got, p.Left)
	}

	m.Root = false
	p = PlanFixes(m, miss)
	if len(p.Packages) > 0 || p.Inotify != 0 || len(p.Left) != len(miss) {
		t.Errorf("not root: plan %+v, want everything left to the user", p)
	}
	var out bytes.Buffer
	Report(&out, p.Left)
	for _, want := range []string{"MISSING  chromium", "fix: apt-get install chromium", "fix: sysctl fs.inotify.max_user_instances=512"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRealNodeNeedsLinuxRootAndCgroups(t *testing.T) {
	m := ready()
	m.OS, m.Root, m.Cgroup = "darwin", false, ""
	if got, want := checks(Missing(Examine(m, []Purpose{RealNode}))), []string{"linux", "root", "cgroups"}; !slices.Equal(got, want) {
		t.Errorf("missing %v, want %v", got, want)
	}
	if miss := Missing(Examine(m, []Purpose{Up})); len(miss) > 0 {
		t.Errorf("berth up needs none of it; missing %v", checks(miss))
	}
}

func TestLimitsAndDisk(t *testing.T) {
	m := ready()
	m.FreeDisk["/root/.berth"] = 512 << 20
	m.OpenFiles = 1024
	m.Loopback = false
	if got, want := checks(Missing(Examine(m, []Purpose{Up}))), []string{"loopback", "disk (data)", "open files"}; !slices.Equal(got, want) {
		t.Errorf("missing %v, want %v", got, want)
	}
}

func TestGoVersion(t *testing.T) {
	for _, tc := range []struct {
		v    string
		miss bool
	}{{"go1.26.8", false}, {"go1.26", false}, {"go1.27rc1", false}, {"go1.25.3", true}, {"", true}} {
		m := ready()
		m.Go = tc.v
		miss := slices.Contains(checks(Missing(Examine(m, []Purpose{Tests}))), "go")
		if miss != tc.miss {
			t.Errorf("go %q: missing %v, want %v", tc.v, miss, tc.miss)
		}
	}
}

func TestParsePurposes(t *testing.T) {
	if ps, err := ParsePurposes("up,real-node"); err != nil || !slices.Equal(ps, []Purpose{Up, RealNode}) {
		t.Errorf("ParsePurposes = %v, %v", ps, err)
	}
	if _, err := ParsePurposes("up,gpu"); err == nil || !strings.Contains(err.Error(), `"gpu"`) {
		t.Errorf("an unknown purpose: %v, want an error naming it", err)
	}
}
