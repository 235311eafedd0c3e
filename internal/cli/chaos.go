package cli

import (
	"context"
	"errors"
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
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/localcluster"
)

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
	el, err := leaderElected(ctx, dir, kube)
	if err != nil {
		return nil, nil, nil, err
	}
	plan = chaos.Plan(seed, chaos.Kinds(el.on), faults, span)
	fmt.Fprintf(log, "chaos: seed %d (replay with --seed %d), %d faults over %.0fs\n", seed, seed, len(plan), span.Seconds())
	if !el.on {
		fmt.Fprintln(log, "chaos: the controller runs without leader election, so no leader pauses (berth up --controller-flag=--leader-elect adds them)")
		return instanceChaos(dir, plan, log, nil), plan, func() {}, nil
	}
	r, err := startReplica(dir, log, el.flags)
	if err != nil {
		return nil, nil, nil, err
	}
	l := &leaders{kube: kube, second: r, lease: el.lease, pauseFor: pauseFor(el.lease)}
	fmt.Fprintf(log, "chaos: leader pauses last %s (the lease is %s)\n", l.pauseFor, el.lease)
	return instanceChaos(dir, plan, log, l), plan, r.stop, nil
}

// pauseFor is how long a paused leader stays paused: past its lease, so
// that the other replica takes over, and long enough that its exit when it
// resumes is not taken for a crash (controlplane.RestartPolicy).
func pauseFor(lease time.Duration) time.Duration {
	return max(lease+5*time.Second, controlplane.DefaultRestartPolicy().Stable+time.Second)
}

// election is how the instance's controller elects its leader, as its
// command line says.
type election struct {
	on    bool
	lease time.Duration
	// flags are its lease timing flags, for the second replica.
	flags []string
}

// electionOf reads a controller's command line: the last --leader-elect
// wins, and the lease timings are kept for a second replica.
func electionOf(args []string) (election, error) {
	el := election{lease: controller.DefaultLease().Duration}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch arg {
		case "--leader-elect", "--leader-elect=true":
			el.on = true
			continue
		case "--leader-elect=false":
			el.on = false
			continue
		}
		for _, timing := range []string{"--leader-elect-lease-duration", "--leader-elect-renew-deadline", "--leader-elect-retry-period"} {
			value, ok := strings.CutPrefix(arg, timing+"=")
			if arg == timing && i+1 < len(args) {
				value, ok = args[i+1], true
				i++
			}
			if !ok {
				continue
			}
			el.flags = append(el.flags, timing+"="+value)
			if timing == "--leader-elect-lease-duration" {
				d, err := time.ParseDuration(value)
				if err != nil {
					return el, fmt.Errorf("the controller's %s: %w", timing, err)
				}
				el.lease = d
			}
		}
	}
	return el, nil
}

// leaderElected reads how the instance's controller elects its leader and,
// when it does, waits until a replica holds the lease: it may still be
// electing itself.
func leaderElected(ctx context.Context, dir string, kube kubernetes.Interface) (election, error) {
	st, err := controlplane.ReadState(controlplane.Layout{Dir: dir})
	if err != nil || st == nil {
		return election{}, fmt.Errorf("the instance's state: %v", err)
	}
	var el election
	for _, c := range st.Components {
		if c.Name != chaos.Components[0] {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.Process.PID))
		if err != nil {
			return el, fmt.Errorf("the controller's command line: %w", err)
		}
		if el, err = electionOf(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")); err != nil {
			return el, err
		}
	}
	for deadline := time.Now().Add(time.Minute); el.on; {
		l, err := kube.CoordinationV1().Leases("berth-system").Get(ctx, "berth-controller", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			return el, fmt.Errorf("the controller runs with leader election but holds no lease after a minute (%v)", err)
		}
		select {
		case <-ctx.Done():
			return el, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return el, nil
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

func startReplica(dir string, log io.Writer, leaseFlags []string) (*replica, error) {
	l := controlplane.Layout{Dir: dir}
	ports, err := controlplane.FreePorts(3)
	if err != nil {
		return nil, err
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
	args = append(args, leaseFlags...)
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
	kube            kubernetes.Interface
	second          *replica
	lease, pauseFor time.Duration

	mu sync.Mutex
	// resumed: when each pause ended.
	resumed []time.Time
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
// l.pauseFor.
func (l *leaders) pause(instanceController func() (*controlplane.ComponentStatus, error)) error {
	pid := 0
	// A busy replica may be slow to answer, and the lease may be changing
	// hands: look again for a while. A replica that lost the lease (it
	// resumed from the last pause, say) says it leads until it finds out
	// and exits; while both say so, which leads is not known.
	// The one found may exit before the signal reaches it (killed, or
	// gone to start again): then look again.
	for deadline := time.Now().Add(time.Minute); pid == 0; {
		c, err := instanceController()
		if err == nil {
			err = leads(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.Port))
		}
		errSecond := leads(l.second.metrics)
		switch {
		case err == nil && errSecond != nil:
			pid = c.PID
		case err != nil && errSecond == nil:
			pid = l.second.currentPID()
		case time.Now().After(deadline):
			return fmt.Errorf("not one controller replica alone says it leads (the instance's: %v; the second: %v)", err, errSecond)
		}
		if pid != 0 {
			if err := syscall.Kill(pid, syscall.SIGSTOP); errors.Is(err, syscall.ESRCH) {
				pid = 0
			} else if err != nil {
				return err
			}
		}
		if pid == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.AfterFunc(l.pauseFor, func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		l.mu.Lock()
		l.resumed = append(l.resumed, time.Now())
		l.mu.Unlock()
	})
	return nil
}

// leader reports on the lease: whether a replica holds it now (its renewal
// is fresh), and as restarts, how often it changed hands plus how many
// pauses were followed by a renewal after they ended (when no replica took
// the lease meanwhile, the paused leader goes on). A leader may always be
// paused: the pause outlasts controlplane.RestartPolicy's Stable, so its
// exit when it resumes is never taken for a crash.
func (l *leaders) leader() (chaos.Victim, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := l.kube.CoordinationV1().Leases("berth-system").Get(ctx, "berth-controller", metav1.GetOptions{})
	if err != nil {
		return chaos.Victim{}, err
	}
	v := chaos.Victim{Settled: true}
	if lease.Spec.LeaseTransitions != nil {
		v.Restarts = int(*lease.Spec.LeaseTransitions)
	}
	v.Healthy = lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" &&
		lease.Spec.RenewTime != nil && time.Since(lease.Spec.RenewTime.Time) < l.lease
	l.mu.Lock()
	for _, at := range l.resumed {
		if lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(at) {
			v.Restarts++
		}
	}
	l.mu.Unlock()
	return v, nil
}

// killWait is how long a kill waits for a component that is not running
// (being restarted after another fault) to be back.
const killWait = 30 * time.Second

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
				// Another lane's fault may have it restarting right now (a
				// paused leader exits once resumed): it is killed once back,
				// rather than the fault counted as failed.
				deadline := time.Now().Add(killWait)
				for {
					c, err := component(name)
					if err != nil {
						return err
					}
					if c.Running && c.PID != 0 {
						// ESRCH: it exited between the status and the kill
						// (a paused leader, resumed): killed once back too.
						if err := syscall.Kill(c.PID, syscall.SIGKILL); !errors.Is(err, syscall.ESRCH) {
							return err
						}
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("%s is not running, and was not back within %s", name, killWait)
					}
					time.Sleep(200 * time.Millisecond)
				}
			},
			Up: func(name string) (chaos.Victim, error) {
				if name == chaos.LeaderPause {
					return l.leader()
				}
				c, err := component(name)
				if err != nil {
					return chaos.Victim{}, err
				}
				return chaos.Victim{Restarts: c.Restarts, Healthy: c.Running && c.Health == "ok",
					Settled: time.Since(c.Started) >= controlplane.DefaultRestartPolicy().Stable}, nil
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
		return fmt.Errorf("the run ended after %d of %d faults: it timed out, failed or was interrupted first", len(r.Faults), planned)
	}
	for _, f := range r.Faults {
		if f.Error != "" {
			return fmt.Errorf("%s killed at %.1fs: %s", f.Component, f.KilledAt.Seconds(), f.Error)
		}
	}
	return nil
}

// chaosReady refuses a run on an instance that is not healthy. The run
// hits only settled victims, so its kills never count towards berth up's
// crash-loop limit, whatever exits came before.
func chaosReady(ctx context.Context, dir string) error {
	st, err := controlplane.ReadStatus(ctx, dir)
	if err != nil {
		return err
	}
	if !st.Healthy() {
		return fmt.Errorf("the instance is not healthy (see berth status); chaos needs every component up to begin")
	}
	return nil
}
