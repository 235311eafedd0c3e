package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/chaos"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/localcluster"
)

// pauseFor is how long a paused leader stays paused: past its lease
// (15 s), so that the other replica takes over.
const pauseFor = 20 * time.Second

// setUpChaos plans a chaos run's faults and returns what injects them. When
// the instance's controller runs with leader election, the plan pauses the
// leader too, and a second controller replica runs beside the instance's
// until stop.
func setUpChaos(ctx context.Context, log io.Writer, dir string, cfg *rest.Config, seed uint64, faults int, span time.Duration) (
	inject func(context.Context, time.Time, func() chaos.Progress) []chaos.Result, plan []chaos.Fault, stop func(), err error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	pause, err := leaderElected(ctx, dir, kube)
	if err != nil {
		return nil, nil, nil, err
	}
	policy := controlplane.DefaultRestartPolicy()
	perKind := policy.Limit - 1
	plan, err = chaos.Plan(seed, chaos.Kinds(pause), faults, span, perKind)
	if err == nil && chaos.ControllerExits(plan) > perKind {
		err = fmt.Errorf("%d of them would end the controller's process (kills and leader pauses), at most %d in one run", chaos.ControllerExits(plan), perKind)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--faults %d: %w (berth up gives up on a component after %d exits in %s)", faults, err, policy.Limit, policy.Window)
	}
	fmt.Fprintf(log, "chaos: seed %d (replay with --seed %d), %d faults over %.0fs\n", seed, seed, len(plan), span.Seconds())
	if !pause {
		fmt.Fprintln(log, "chaos: the controller runs without leader election, so no leader pauses (berth up --controller-flag=--leader-elect adds them)")
		return instanceChaos(dir, plan, log, nil), plan, func() {}, nil
	}
	r, err := startReplica(dir, log)
	if err != nil {
		return nil, nil, nil, err
	}
	return instanceChaos(dir, plan, log, &leaders{kube: kube, second: r}), plan, r.stop, nil
}

// leaderElected reports whether the instance's controller runs with leader
// election (its command line says so: the last --leader-elect wins), and
// then waits until it holds the lease: it may still be electing itself.
func leaderElected(ctx context.Context, dir string, kube kubernetes.Interface) (bool, error) {
	st, err := controlplane.ReadState(controlplane.Layout{Dir: dir})
	if err != nil || st == nil {
		return false, fmt.Errorf("the instance's state: %v", err)
	}
	on := false
	for _, c := range st.Components {
		if c.Name != chaos.Components[0] {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.Process.PID))
		if err != nil {
			return false, fmt.Errorf("the controller's command line: %w", err)
		}
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			switch arg {
			case "--leader-elect", "--leader-elect=true":
				on = true
			case "--leader-elect=false":
				on = false
			}
		}
	}
	for deadline := time.Now().Add(time.Minute); on; {
		l, err := kube.CoordinationV1().Leases("berth-system").Get(ctx, "berth-controller", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("the controller runs with leader election but holds no lease after a minute (%v)", err)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return on, nil
}

// replica is a second controller replica a chaos run keeps running (it is
// started again whenever it exits) until stop.
type replica struct {
	metrics string
	mu      sync.Mutex
	pid     int
	done    chan struct{}
	stopped chan struct{}
}

func startReplica(dir string, log io.Writer) (*replica, error) {
	l := controlplane.Layout{Dir: dir}
	ports := make([]int, 3)
	for i := range ports {
		p, err := controlplane.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	health, metrics, webhook := ports[0], ports[1], ports[2]
	logf, err := os.OpenFile(l.LogFile("berth-controller-2"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append(localcluster.ControllerArgs(l, health, metrics, webhook, "webhook-certs-2"), "--leader-elect")
	r := &replica{metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics), done: make(chan struct{}), stopped: make(chan struct{})}
	start := func() (*exec.Cmd, error) {
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.pid = cmd.Process.Pid
		r.mu.Unlock()
		return cmd, nil
	}
	cmd, err := start()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting a second controller replica: %w", err)
	}
	fmt.Fprintf(log, "chaos: a second controller replica runs beside the instance's (pid %d, log %s)\n", cmd.Process.Pid, logf.Name())
	go func() {
		defer close(r.stopped)
		defer logf.Close()
		for {
			exited := make(chan struct{})
			go func() {
				_ = cmd.Wait()
				close(exited)
			}()
			select {
			case <-r.done:
				_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
				return
			case <-exited:
			}
			// It exits when it finds it lost the lease; a kubelet would
			// start it again.
			time.Sleep(time.Second)
			var err error
			if cmd, err = start(); err != nil {
				fmt.Fprintf(log, "chaos: the second controller replica did not start again: %v\n", err)
				return
			}
		}
	}()
	return r, nil
}

func (r *replica) stop() {
	close(r.done)
	<-r.stopped
}

func (r *replica) currentPID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
}

// leaders finds which controller replica leads, and pauses it.
type leaders struct {
	kube   kubernetes.Interface
	second *replica
}

// leads reports whether the replica serving metricsURL leads now (its
// leader-election metric says so); a paused or starting replica does not
// answer, and does not lead.
func leads(metricsURL string) error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(metricsURL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), `leader_election_master_status{name="berth-controller"} 1`) {
		return fmt.Errorf("does not lead")
	}
	return nil
}

// pause stops the leader (SIGSTOP) and lets it go on (SIGCONT) after
// pauseFor.
func (l *leaders) pause(instanceController func() (*controlplane.ComponentStatus, error)) error {
	pid := 0
	// A busy replica may be slow to answer, and the lease may be changing
	// hands: look again for a while.
	for deadline := time.Now().Add(time.Minute); pid == 0; {
		c, err := instanceController()
		if err == nil {
			if err = leads(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.Port)); err == nil {
				pid = c.PID
				break
			}
		}
		errSecond := leads(l.second.metrics)
		if errSecond == nil {
			pid = l.second.currentPID()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no controller replica says it leads (the instance's: %v; the second: %v)", err, errSecond)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	time.AfterFunc(pauseFor, func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	return nil
}

// transitions is how often the lease changed hands, and whether a replica
// holds it now (its renewal is fresh).
func (l *leaders) transitions() (int, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := l.kube.CoordinationV1().Leases("berth-system").Get(ctx, "berth-controller", metav1.GetOptions{})
	if err != nil {
		return 0, false, err
	}
	n := 0
	if lease.Spec.LeaseTransitions != nil {
		n = int(*lease.Spec.LeaseTransitions)
	}
	held := lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" &&
		lease.Spec.RenewTime != nil && time.Since(lease.Spec.RenewTime.Time) < 10*time.Second
	return n, held, nil
}

// instanceChaos injects the plan's faults into the instance in dir; leader
// pauses need l.
func instanceChaos(dir string, plan []chaos.Fault, log io.Writer, l *leaders) func(context.Context, time.Time, func() chaos.Progress) []chaos.Result {
	component := func(name string) (*controlplane.ComponentStatus, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := controlplane.ReadStatus(ctx, dir)
		if err != nil {
			return nil, err
		}
		for i := range st.Components {
			if st.Components[i].Name == name {
				return &st.Components[i], nil
			}
		}
		return nil, fmt.Errorf("the instance has no component %s", name)
	}
	return func(ctx context.Context, start time.Time, progress func() chaos.Progress) []chaos.Result {
		in := chaos.Injector{Plan: plan, Progress: progress, Log: log,
			Kill: func(name string) error {
				if name == chaos.LeaderPause {
					return l.pause(func() (*controlplane.ComponentStatus, error) { return component(chaos.Components[0]) })
				}
				c, err := component(name)
				if err != nil {
					return err
				}
				if !c.Running || c.PID == 0 {
					return fmt.Errorf("%s is not running", name)
				}
				return syscall.Kill(c.PID, syscall.SIGKILL)
			},
			Up: func(name string) (int, bool, error) {
				if name == chaos.LeaderPause {
					return l.transitions()
				}
				c, err := component(name)
				if err != nil {
					return 0, false, err
				}
				return c.Restarts, c.Running && c.Health == "ok", nil
			}}
		return in.Run(ctx, start)
	}
}

// chaosVerdict fails a chaos run that broke a promise, or that ended
// before every fault was injected and recovered from.
func chaosVerdict(r *bench.Results, planned int) error {
	if r.Audit != nil && r.Audit.Violations > 0 {
		return fmt.Errorf("the auditor found %d broken promises: %v", r.Audit.Violations, r.Audit.First)
	}
	if len(r.Faults) < planned {
		return fmt.Errorf("the run ended after %d of %d faults; give it more work (--scale) or fewer faults", len(r.Faults), planned)
	}
	for _, f := range r.Faults {
		if f.Error != "" {
			return fmt.Errorf("%s killed at %.1fs: %s", f.Component, f.KilledAt.Seconds(), f.Error)
		}
	}
	return nil
}

// chaosReady refuses a run on an instance that is not healthy, or whose
// components exited within the supervisor's crash-loop window: their exits
// count towards giving up, and this run's kills could stop the instance.
func chaosReady(ctx context.Context, dir string, now time.Time) error {
	st, err := controlplane.ReadStatus(ctx, dir)
	if err != nil {
		return err
	}
	if !st.Healthy() {
		return fmt.Errorf("the instance is not healthy (see berth status); chaos needs every component up to begin")
	}
	window := controlplane.DefaultRestartPolicy().Window
	for _, c := range st.Components {
		if c.LastExit != nil && now.Sub(c.LastExit.At) < window {
			return fmt.Errorf("%s exited %s ago: berth up gives up on a component that exits %d times in %s, so this run's kills "+
				"could stop the instance; wait until %s, or start a fresh instance",
				c.Name, now.Sub(c.LastExit.At).Round(time.Second), controlplane.DefaultRestartPolicy().Limit, window,
				c.LastExit.At.Add(window).Format(time.TimeOnly))
		}
	}
	return nil
}
