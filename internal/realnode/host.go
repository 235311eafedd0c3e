package realnode

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/sys/unix"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/image"
)

// Tools are the distribution's programs a real node needs.
type Tools struct{ Containerd, Ctr, Runc, IP, Iptables string }

// Check says whether this machine can run a real node, and finds its
// tools; the error says what is missing and how to get it.
func Check() (Tools, error) {
	if runtime.GOOS != "linux" {
		return Tools{}, fmt.Errorf("--real-node needs Linux (this is %s): it runs containers with containerd and runc", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return Tools{}, errors.New("--real-node needs root: it mounts container file systems and sets up a bridge network and iptables rules; run berth up as root")
	}
	var t Tools
	var missing []string
	for _, tool := range []struct {
		name string
		into *string
	}{{"containerd", &t.Containerd}, {"ctr", &t.Ctr}, {"runc", &t.Runc}, {"ip", &t.IP}, {"iptables", &t.Iptables}} {
		p, err := exec.LookPath(tool.name)
		if err != nil {
			missing = append(missing, tool.name)
			continue
		}
		*tool.into = p
	}
	if _, err := os.Stat(filepath.Join(CNIBinDir, "bridge")); err != nil {
		missing = append(missing, "the CNI plugins in "+CNIBinDir)
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("--real-node needs %s; on Debian or Ubuntu: apt-get install containerd runc containernetworking-plugins iproute2 iptables",
			strings.Join(missing, ", "))
	}
	return t, nil
}

// Prepare writes the node's configs and sets up its bridge with NodeIP, the
// kubelet's and the pods' gateway address.
func Prepare(l Layout, ctl controlplane.Layout, p Ports, t Tools) error {
	for _, d := range []string{filepath.Dir(l.ContainerdConfig()), l.CNIConfDir(), filepath.Dir(l.KubeletConfig()), l.KubeletRoot()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	files := map[string]string{
		l.ContainerdConfig(): ContainerdConfig(l, p),
		filepath.Join(l.CNIConfDir(), "10-berth.conflist"): CNIConfig(),
		l.KubeletConfig(): KubeletConfig(l, ctl, p),
		l.ProxyConfig():   ProxyConfig(ctl, p),
	}
	for path, data := range files {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			return err
		}
	}
	if err := recordSysctls(l); err != nil {
		return err
	}
	if !linkExists(Bridge) {
		if out, err := exec.Command(t.IP, "link", "add", Bridge, "type", "bridge").CombinedOutput(); err != nil {
			return fmt.Errorf("creating bridge %s: %v: %s", Bridge, err, out)
		}
	}
	if out, err := exec.Command(t.IP, "addr", "replace", NodeIP+"/24", "dev", Bridge).CombinedOutput(); err != nil {
		return fmt.Errorf("giving bridge %s address %s: %v: %s", Bridge, NodeIP, err, out)
	}
	if out, err := exec.Command(t.IP, "link", "set", Bridge, "up").CombinedOutput(); err != nil {
		return fmt.Errorf("bringing bridge %s up: %v: %s", Bridge, err, out)
	}
	return nil
}

// PauseArchive makes the image that holds pods' sandboxes: berth itself
// (bin), running `berth component pause`, with the libraries it needs if
// it was built with cgo. It is made again only when bin is newer.
func PauseArchive(l Layout, bin string) (string, error) {
	path := l.PauseArchive()
	made, err := os.Stat(path)
	if err == nil {
		if b, err := os.Stat(bin); err == nil && !b.ModTime().After(made.ModTime()) {
			return path, nil
		}
	}
	libs, err := sharedLibs(bin)
	if err != nil {
		return "", fmt.Errorf("the pause image: %w", err)
	}
	idx, err := image.Build(image.Spec{Binaries: map[string]string{runtime.GOOS + "/" + runtime.GOARCH: bin},
		Entrypoint: []string{"/berth", "component", "pause"}, Cmd: []string{}, Stored: true, Files: libs})
	if err != nil {
		return "", fmt.Errorf("the pause image: %w", err)
	}
	tmp := path + ".tmp"
	if err := image.WriteArchive(tmp, idx, PauseImage); err != nil {
		return "", fmt.Errorf("the pause image: %w", err)
	}
	return path, os.Rename(tmp, path)
}

// LoadImage imports an image archive (OCI or Docker) into the node's
// containerd, for its pods.
func LoadImage(ctx context.Context, l Layout, ctr, archive string) error {
	out, err := exec.CommandContext(ctx, ctr, "--address", l.Socket(), "--namespace", Namespace,
		"images", "import", "--all-platforms", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s into the real node's containerd: %v: %s", archive, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RemovePods stops and removes every pod sandbox of the node's containerd
// through the CRI, as the kubelet would: their containers stop, and the CNI
// plugins remove their addresses and iptables rules.
func RemovePods(ctx context.Context, l Layout) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rs, err := remote.NewRemoteRuntimeService(ctx, "unix://"+l.Socket(), 10*time.Second, noop.NewTracerProvider(), false)
	if err != nil {
		return fmt.Errorf("reaching containerd: %w", err)
	}
	pods, err := rs.ListPodSandbox(ctx, &criv1.PodSandboxFilter{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	var errs []error
	for _, p := range pods {
		if err := rs.StopPodSandbox(ctx, p.Id); err != nil {
			errs = append(errs, fmt.Errorf("stopping pod %s/%s: %w", p.Metadata.GetNamespace(), p.Metadata.GetName(), err))
			continue
		}
		if err := rs.RemovePodSandbox(ctx, p.Id); err != nil {
			errs = append(errs, fmt.Errorf("removing pod %s/%s: %w", p.Metadata.GetNamespace(), p.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// Teardown undoes on the host what the node set up, once its processes have
// stopped: mounts under its directory, kube-proxy's and the CNI plugins'
// iptables rules, the bridge, host-local's address records, and the pod log
// directories of its pods. bin is berth (for kube-proxy --cleanup).
func Teardown(l Layout, bin string, t Tools) error {
	var errs []error
	for _, m := range mountsUnder(l.Dir) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	if out, err := exec.Command(bin, "component", "kube-proxy", "--cleanup", "--proxy-mode=iptables").CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("kube-proxy --cleanup: %v: %s", err, lastLine(out)))
	}
	errs = append(errs, removeRules(t.Iptables))
	if linkExists(Bridge) {
		if out, err := exec.Command(t.IP, "link", "delete", Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %v: %s", Bridge, err, out))
		}
	}
	errs = append(errs, os.RemoveAll(filepath.Join("/var/lib/cni/networks", Network)))
	errs = append(errs, removePodLogs(l))
	errs = append(errs, removeCgroups())
	errs = append(errs, restoreSysctls(l))
	// containerd 1.6 keeps its shims' sockets and runc's state of its
	// containers here, whatever its state directory: empty once they are
	// gone.
	// So do the kubelet (its device plugins), the CNI plugins' caches and the
	// pods' logs, in fixed places.
	for _, d := range []string{"/run/containerd/runc/" + Namespace, "/run/containerd/runc", "/run/containerd/s", "/run/containerd",
		"/var/lib/kubelet/device-plugins", "/var/lib/kubelet", "/var/lib/cni/results", "/var/lib/cni/networks", "/var/lib/cni",
		"/var/log/containers", "/var/log/pods"} {
		_ = os.Remove(d) // only if empty: what else uses them stays
	}
	return errors.Join(errs...)
}

// cgroupsOf are the kubelet's cgroups for pods (kubepods, under each
// controller of cgroup v1, or at the root of v2) that exist.
func cgroupsOf() []string {
	var out []string
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		out = append(out, "/sys/fs/cgroup/kubepods")
	}
	controllers, _ := os.ReadDir("/sys/fs/cgroup")
	for _, c := range controllers {
		d := filepath.Join("/sys/fs/cgroup", c.Name(), "kubepods")
		if _, err := os.Stat(d); err == nil && c.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// removeCgroups removes the kubelet's pod cgroups, deepest first; a cgroup
// is removed whole with rmdir once no process is in it.
func removeCgroups() error {
	var errs []error
	for _, root := range cgroupsOf() {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for k := len(dirs) - 1; k >= 0; k-- {
			if err := os.Remove(dirs[k]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[k], err))
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what of the node is still on the host: mounts, the bridge,
// iptables chains, address records and pod logs; empty after Teardown.
func Leftovers(l Layout, t Tools) []string {
	var out []string
	for _, m := range mountsUnder(l.Dir) {
		out = append(out, "mount "+m)
	}
	if linkExists(Bridge) {
		out = append(out, "network link "+Bridge)
	}
	for _, c := range chains(t.Iptables) {
		out = append(out, "iptables chain "+c)
	}
	if _, err := os.Stat(filepath.Join("/var/lib/cni/networks", Network)); err == nil {
		out = append(out, "/var/lib/cni/networks/"+Network)
	}
	out = append(out, podLogDirs(l)...)
	if _, err := os.Stat(l.SysctlRecord()); err == nil {
		out = append(out, "kernel settings not restored (recorded in "+l.SysctlRecord()+")")
	}
	for _, c := range cgroupsOf() {
		out = append(out, "cgroup "+c)
	}
	if shims := shimsOf(l); len(shims) > 0 {
		out = append(out, fmt.Sprintf("%d containerd shim processes", len(shims)))
	}
	return out
}

// shimsOf are the containerd shims started for the node's containerd: their
// command lines name its socket.
func shimsOf(l Layout) []int {
	procs, _ := os.ReadDir("/proc")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), "containerd-shim") && strings.Contains(string(cmdline), l.Socket()) {
			out = append(out, pid)
		}
	}
	return out
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// The node's iptables chains are kube-proxy's and the kubelet's (KUBE-)
// and the CNI plugins' (CNI-), in these tables, for IPv4 and IPv6.
var (
	chainPrefixes = []string{"KUBE-", "CNI-"}
	tables        = []string{"nat", "filter", "mangle"}
)

func ours(chain string) bool {
	return slices.ContainsFunc(chainPrefixes, func(p string) bool { return strings.HasPrefix(chain, p) })
}

// iptablesTools are iptables and, where there is one, ip6tables.
func iptablesTools(iptables string) []string {
	out := []string{iptables}
	if ip6, err := exec.LookPath("ip6tables"); err == nil {
		out = append(out, ip6)
	}
	return out
}

// chains lists the node's iptables chains, as tool/table/chain.
func chains(iptables string) []string {
	var out []string
	for _, tool := range iptablesTools(iptables) {
		for _, table := range tables {
			data, err := exec.Command(tool, "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(data), "\n") {
				if name, ok := strings.CutPrefix(line, "-N "); ok && ours(name) {
					out = append(out, filepath.Base(tool)+"/"+table+"/"+name)
				}
			}
		}
	}
	return out
}

// removeRules removes the node's iptables chains and the rules that jump
// to them from other chains: what kube-proxy --cleanup leaves (the
// kubelet's), and what the CNI plugins left of pods not torn down through
// them (a sandbox lost with a crash).
func removeRules(iptables string) error {
	var errs []error
	for _, tool := range iptablesTools(iptables) {
		for _, table := range tables {
			data, err := exec.Command(tool, "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			var mine []string
			for _, line := range strings.Split(string(data), "\n") {
				if name, ok := strings.CutPrefix(line, "-N "); ok && ours(name) {
					mine = append(mine, name)
				}
			}
			for _, line := range strings.Split(string(data), "\n") {
				rule, ok := strings.CutPrefix(line, "-A ")
				if !ok {
					continue
				}
				f := splitRule(rule)
				if len(f) == 0 || ours(f[0]) || !slices.ContainsFunc(mine, func(c string) bool { return strings.Contains(rule, " -j "+c) }) {
					continue // emptied with its chain below, or none of ours
				}
				args := append([]string{"-t", table, "-D"}, f...)
				if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s %v: %v: %s", tool, args, err, out))
				}
			}
			for _, c := range mine {
				_ = exec.Command(tool, "-t", table, "-F", c).Run()
			}
			for _, c := range mine {
				if out, err := exec.Command(tool, "-t", table, "-X", c).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s -X %s: %v: %s", tool, table, c, err, out))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// splitRule splits a rule as iptables -S prints it into arguments: words,
// and double-quoted strings with backslash escapes (comments).
func splitRule(rule string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(rule); i++ {
		c := rule[i]
		switch {
		case quoted && c == '\\' && i+1 < len(rule):
			i++
			cur.WriteByte(rule[i])
		case c == '"':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// podLogDirs are the kubelet's log directories (/var/log/pods) of the pods
// it ran, named <namespace>_<name>_<uid> after the pods in its root.
func podLogDirs(l Layout) []string {
	entries, err := os.ReadDir(filepath.Join(l.KubeletRoot(), "pods"))
	if err != nil {
		return nil
	}
	uids := map[string]bool{}
	for _, e := range entries {
		uids[e.Name()] = true
	}
	logs, err := os.ReadDir("/var/log/pods")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range logs {
		if i := strings.LastIndex(e.Name(), "_"); i >= 0 && uids[e.Name()[i+1:]] {
			out = append(out, filepath.Join("/var/log/pods", e.Name()))
		}
	}
	return out
}

// removePodLogs removes the node's pods' log directories, and the links to
// their logs in /var/log/containers.
func removePodLogs(l Layout) error {
	dirs := podLogDirs(l)
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	links, _ := os.ReadDir("/var/log/containers")
	for _, e := range links {
		p := filepath.Join("/var/log/containers", e.Name())
		if target, err := os.Readlink(p); err == nil && slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(target, d+"/") }) {
			errs = append(errs, os.Remove(p))
		}
	}
	return errors.Join(errs...)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// libDirs are where a dynamically linked berth's libraries are looked for.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// sharedLibs are the files a dynamically linked binary needs to start (its
// interpreter and the libraries it names), by their path, from this
// machine: the pause image carries them when berth was built with cgo.
// A static binary needs none.
func sharedLibs(bin string) (map[string]string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", bin, err)
	}
	defer f.Close()
	out := map[string]string{}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			return nil, err
		}
		interp := strings.TrimRight(string(data), "\x00")
		out[interp] = interp
	}
	if len(out) == 0 {
		return nil, nil // static
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return nil, err
	}
	for _, lib := range needed {
		found := ""
		for _, d := range libDirs {
			if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
				found = filepath.Join(d, lib)
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("%s needs %s, which is in none of %v", bin, lib, libDirs)
		}
		out[found] = found
	}
	return out, nil
}

// sysctls are the kernel settings a real node changes: forwarding (the CNI
// bridge plugin, for pods' traffic), and bridged traffic through iptables
// (kube-proxy, for Services).
var sysctls = []string{"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables"}

// recordSysctls notes the settings as they were before the node first
// changed them; the record stays until Teardown has put them back.
func recordSysctls(l Layout) error {
	if _, err := os.Stat(l.SysctlRecord()); err == nil {
		return nil
	}
	was := map[string]string{}
	for _, k := range sysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			was[k] = strings.TrimSpace(string(v))
		}
	}
	data, err := json.Marshal(was)
	if err != nil {
		return err
	}
	return os.WriteFile(l.SysctlRecord(), data, 0o600)
}

// restoreSysctls puts back the settings recorded before the node changed
// them, and drops the record.
func restoreSysctls(l Layout) error {
	data, err := os.ReadFile(l.SysctlRecord())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var was map[string]string
	if err := json.Unmarshal(data, &was); err != nil {
		return fmt.Errorf("%s: %w", l.SysctlRecord(), err)
	}
	var errs []error
	for k, v := range was {
		if now, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil && strings.TrimSpace(string(now)) != v {
			if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o600); err != nil { // the mode is unused: the file exists
				errs = append(errs, fmt.Errorf("restoring %s to %s: %w", k, v, err))
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(l.SysctlRecord()))
	}
	return errors.Join(errs...)
}

// ForwardAPI makes the API server, which listens on 127.0.0.1 only,
// reachable from the node's pods: connections to NodeIP on its port are
// passed to 127.0.0.1 on the same port, as they are (TLS is end to end).
// The API server advertises NodeIP (controlplane.PlanOptions), so
// kube-proxy sends the kubernetes Service's traffic there. It serves until
// the returned function is called.
func ForwardAPI(port int) (stop func(), err error) {
	addr := net.JoinHostPort(NodeIP, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("forwarding the API server to the pods at %s: %w", addr, err)
	}
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return // closed
			}
			go func() {
				defer in.Close()
				out, err := net.DialTimeout("tcp", target, 10*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{}, 2)
				pipe := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					if tc, ok := dst.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
					done <- struct{}{}
				}
				go pipe(out, in)
				go pipe(in, out)
				<-done
				<-done
			}()
		}
	}()
	return func() { _ = ln.Close() }, nil
}
