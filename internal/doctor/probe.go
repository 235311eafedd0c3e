package doctor

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Probe looks at this machine: dataDir is where instances keep their data
// (it, or its nearest existing parent, is measured), tempDir where tests do.
func Probe(dataDir, tempDir string) Machine {
	m := Machine{OS: runtime.GOOS, Root: os.Geteuid() == 0, Found: map[string]bool{}, FreeDisk: map[string]uint64{},
		DataDir: dataDir, TempDir: tempDir}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	switch fs := statfsType("/sys/fs/cgroup"); {
	case fs == 0x63677270: // CGROUP2_SUPER_MAGIC
		m.Cgroup = "v2"
	case fs != 0:
		if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
			m.Cgroup = "v1"
		}
	}
	for _, name := range Looked() {
		if strings.HasPrefix(name, "/") {
			_, err := os.Stat(name)
			m.Found[name] = err == nil
		} else {
			_, err := exec.LookPath(name)
			m.Found[name] = err == nil
		}
	}
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances"); err == nil {
		m.InotifyInstances, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		m.OpenFiles = int(min(lim.Max, 1<<30))
	}
	for _, d := range []string{dataDir, tempDir} {
		if d != "" {
			m.FreeDisk[d] = freeDisk(d)
		}
	}
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		m.Loopback = true
		l.Close()
	}
	_, err := exec.LookPath("apt-get")
	m.AptGet = err == nil
	return m
}

func statfsType(path string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0
	}
	return int64(st.Type)
}

// freeDisk is the space free to users on dir's file system, measured at
// its nearest existing parent (a data directory may not exist yet).
func freeDisk(dir string) uint64 {
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err == nil {
			return st.Bavail * uint64(st.Bsize)
		}
		parent := dir[:max(strings.LastIndex(dir, "/"), 1)]
		if parent == dir {
			return 0
		}
		dir = parent
	}
}

// Report writes one line per finding: "ok" or "MISSING", the check, what
// there is, and for what is missing what it needs and the fix.
func Report(w io.Writer, fs []Finding) {
	for _, f := range fs {
		purposes := make([]string, len(f.For))
		for i, p := range f.For {
			purposes[i] = string(p)
		}
		if f.OK {
			fmt.Fprintf(w, "ok       %-17s %s\n", f.Check, f.Have)
			continue
		}
		fmt.Fprintf(w, "MISSING  %-17s for %s: needs %s (has %s)\n         fix: %s\n",
			f.Check, strings.Join(purposes, ", "), f.Need, f.Have, f.Fix)
	}
}

// Fix carries out what can be fixed of the plan (as root: apt-get install,
// the inotify limit), saying each step on w.
func Fix(w io.Writer, p Plan) error {
	if len(p.Packages) > 0 {
		fmt.Fprintf(w, "installing: %s\n", strings.Join(p.Packages, " "))
		env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq"}, p.Packages...)} {
			cmd := exec.Command("apt-get", args...)
			cmd.Env, cmd.Stdout, cmd.Stderr = env, w, w
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
			}
		}
	}
	if p.Inotify > 0 {
		if err := os.WriteFile("/proc/sys/fs/inotify/max_user_instances", []byte(strconv.Itoa(p.Inotify)), 0o600); err != nil {
			return fmt.Errorf("raising fs.inotify.max_user_instances to %d: %w", p.Inotify, err)
		}
		fmt.Fprintf(w, "fs.inotify.max_user_instances raised to %d\n", p.Inotify)
	}
	return nil
}

// Run checks this machine for purposes and, with fix, first fixes what it
// can (see PlanFixes) and checks again. It reports every check on w and
// returns an error naming what is still missing.
func Run(w io.Writer, purposes []Purpose, dataDir, tempDir string, fix bool) error {
	m := Probe(dataDir, tempDir)
	fs := Examine(m, purposes)
	if fix {
		if p := PlanFixes(m, Missing(fs)); len(p.Packages) > 0 || p.Inotify > 0 {
			if err := Fix(w, p); err != nil {
				return err
			}
			m = Probe(dataDir, tempDir)
			fs = Examine(m, purposes)
		}
	}
	Report(w, fs)
	missing := Missing(fs)
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, f := range missing {
		names[i] = f.Check
	}
	hint := ""
	if !fix {
		hint = "; as root, --fix installs the packages and raises the limits it can"
	}
	return fmt.Errorf("this machine lacks %s: run the fixes above%s", strings.Join(names, ", "), hint)
}

// DataDir is where instances keep their data by default: $BERTH_DATA_DIR,
// else ~/.berth.
func DataDir() string {
	if d := os.Getenv("BERTH_DATA_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return os.TempDir()
	}
	return home + "/.berth"
}
