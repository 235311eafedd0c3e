package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// spawner starts child processes from one OS thread that stays alive for as
// long as the children may run. Children are started with Pdeathsig, which the
// kernel ties to the thread that forked them, not to the process: forking from
// an arbitrary goroutine's thread could kill a child when the Go runtime retires
// that thread.
type spawner struct {
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go func() {
		// Never unlocked: when this goroutine returns the thread exits with it,
		// which is what the children's Pdeathsig is tied to. close() is only
		// called once every child has exited.
		runtime.LockOSThread()
		for r := range s.reqs {
			r.done <- r.cmd.Start()
		}
	}()
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

func (s *spawner) close() { close(s.reqs) }

// process is one running component.
type process struct {
	name      string
	cmd       *exec.Cmd
	logPath   string
	logOffset int64 // where this run's output starts in the log
	startTime uint64
	started   time.Time
	done      chan struct{}
	waitErr   error // valid once done is closed
}

// startProcess runs binary with args, appending its output to logPath.
func startProcess(sp *spawner, name, binary string, args []string, logPath string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: opening log: %w", name, err)
	}
	defer logf.Close() // the child keeps its own descriptor
	fmt.Fprintf(logf, "==== berth: starting %s at %s\n", name, time.Now().Format(time.RFC3339))
	offset, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Die with the supervisor, whatever kills it.
		Pdeathsig: syscall.SIGKILL,
		// Own process group: a Ctrl-C in the terminal reaches only the
		// supervisor, which then stops components in order.
		Setpgid: true,
	}
	if err := sp.start(cmd); err != nil {
		return nil, fmt.Errorf("%s: starting %s: %w", name, binary, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logOffset: offset, started: time.Now(),
		done: make(chan struct{})}
	p.startTime, _ = procStartTime(cmd.Process.Pid)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitReason describes how the process ended, for error messages.
func (p *process) exitReason() string {
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs and waits for the exit.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// kill ends the process at once.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// logTail returns up to n of the last lines this run wrote to its log, with
// stack dumps left out: the reason a component died is in the lines before
// them, and twenty lines of goroutine frames would push it off the screen.
func (p *process) logTail(n int) []string {
	return lastN(withoutStacks(TailFile(p.logPath, p.logOffset, 400)), n)
}

var (
	goroutineHeader = regexp.MustCompile(`^goroutine \d+ \[`)
	zapStacktrace   = regexp.MustCompile(`,"stacktrace":"(?:[^"\\]|\\.)*"`)
)

// withoutStacks drops Go goroutine dumps (from a "goroutine N [" line up to the
// next blank line), zap "stacktrace" fields, and shortens very long lines.
func withoutStacks(lines []string) []string {
	const maxLine = 400
	var out []string
	inStack := false
	for _, l := range lines {
		switch {
		case goroutineHeader.MatchString(l):
			inStack = true
			continue
		case inStack && strings.TrimSpace(l) == "":
			inStack = false
			continue
		case inStack:
			continue
		}
		l = zapStacktrace.ReplaceAllString(l, "")
		if len(l) > maxLine {
			l = l[:maxLine] + " ..."
		}
		out = append(out, l)
	}
	return out
}

func lastN(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// TailFile returns the last n lines of path after offset, reading at most 64 KiB.
func TailFile(path string, offset int64, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil
	}
	const maxRead = 64 << 10
	start := max(offset, end-maxRead)
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// procStartTime reads a process's start time (clock ticks since boot) from
// /proc. Together with the pid it names one process for good: a pid recorded in
// instance.json is only ever signalled if its start time still matches, so a
// reused pid belonging to someone else is never touched.
func procStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces and parentheses; fields
	// after the last ')' are plain.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// sameProcessAlive reports whether pid is alive and is the process that started
// at startTime. Zombies count as gone.
func sameProcessAlive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := procStartTime(pid)
	if err != nil || st != startTime {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) && data[i+2] == 'Z' {
		return false
	}
	return true
}
