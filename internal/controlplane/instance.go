package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configure Start.
type Options struct {
	// Name of the instance; it appears in the kubeconfig context (berth-<name>).
	Name string
	// DataDir holds everything the instance keeps; see Layout.
	DataDir string
	// Binary is the berth executable that components re-execute; default: this one.
	Binary string
	// Port for the API server; 0 reuses the previous run's port when free, else any free port.
	Port int
	// Plan tunes the core components.
	Plan PlanOptions
	// AfterCore runs once the core components are healthy, before Extra
	// components start: installing CRDs and RBAC, for instance.
	AfterCore func(ctx context.Context, l Layout) error
	// Extra returns components to run after the core (simulator, berth controller).
	Extra func(l Layout, p Ports) ([]Component, error)
	// AfterStop, when set, runs once every component has stopped, to undo
	// what they set up outside their processes (a real node's mounts and
	// network); what it reports is printed, not fatal.
	AfterStop func(l Layout) error
	// Identities are client identities to issue certificates and kubeconfigs
	// for (see Layout.ComponentKubeconfig), beside the core components'.
	Identities []Identity
	// Progress receives one line per step of start-up and shutdown; nil discards them.
	Progress io.Writer
	// Restart says how components that exit on their own are restarted;
	// zero is DefaultRestartPolicy.
	Restart RestartPolicy
}

// Instance is a running control plane, supervised by this process.
type Instance struct {
	layout   Layout
	opts     Options
	state    State
	spawner  *spawner
	lock     *dirLock
	health   *http.Client
	comps    []Component // started so far, in start order; procs[k] runs comps[k]
	procs    []*process
	progress io.Writer

	mu       sync.Mutex
	stopOnce sync.Once
	stopReq  chan struct{}
	killReq  chan struct{}
	killOnce sync.Once
	done     chan struct{}
	err      error
}

// Start brings up etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler (and any extra components) and returns once every one is
// healthy. On any failure it stops whatever it started, records the failure in
// instance.json and returns an error naming the component with the end of its
// log. Cancelling ctx aborts start-up the same way.
func Start(ctx context.Context, o Options) (*Instance, error) {
	if err := ValidateName(o.Name); err != nil {
		return nil, err
	}
	if o.DataDir == "" {
		return nil, errors.New("no data directory given")
	}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the berth binary: %w", err)
		}
	}
	o.Plan = o.Plan.WithDefaults()
	if o.Restart == (RestartPolicy{}) {
		o.Restart = DefaultRestartPolicy()
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	l := Layout{Dir: dir}
	// The flex volume directory is made here, owner-only, before
	// kube-controller-manager would make it open to all.
	for _, d := range []string{l.LogDir(), l.FlexVolumeDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("data directory %s: %w", dir, err)
		}
	}
	if err := ownerOnly(dir); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}

	lock, err := lockDir(l)
	if errors.Is(err, errLocked) {
		return nil, inUseError(l)
	}
	if err != nil {
		return nil, fmt.Errorf("data directory %s: locking: %w", dir, err)
	}
	for attempt := 1; ; attempt++ {
		inst, err := start(ctx, l, o, lock, progress)
		if err == nil {
			return inst, nil
		}
		lock.release()
		// Ports are free when picked, and bound by the component a moment
		// later; another process may take one meanwhile. Start again on
		// other ports, a few times.
		var ce *ComponentError
		if attempt >= portRetries || !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.LogTail, "\n"), "address already in use") {
			return nil, err
		}
		fmt.Fprintf(progress, "%s found its port taken by another process; starting again on other ports\n", ce.Component)
		if lock, err = lockDir(l); err != nil {
			if errors.Is(err, errLocked) {
				return nil, inUseError(l)
			}
			return nil, fmt.Errorf("data directory %s: locking: %w", dir, err)
		}
	}
}

func inUseError(l Layout) error {
	msg := fmt.Sprintf("data directory %s is in use by a running berth", l.Dir)
	if s, err := ReadState(l); err == nil && s != nil {
		msg += fmt.Sprintf(" (instance %q, supervisor pid %d)", s.Name, s.Supervisor.PID)
	}
	return fmt.Errorf("%s; stop it with: berth down --data-dir %s", msg, l.Dir)
}

// portRetries is how often Start tries when a component finds its port
// taken.
const portRetries = 3

func start(ctx context.Context, l Layout, o Options, lock *dirLock, progress io.Writer) (*Instance, error) {
	prev, err := ReadState(l)
	if err != nil {
		// Only runtime state lives there; say so and start afresh.
		fmt.Fprintf(progress, "warning: ignoring %v\n", err)
		prev = nil
	}
	if prev != nil && prev.Name != "" && prev.Name != o.Name {
		return nil, fmt.Errorf("data directory %s belongs to instance %q, not %q; pass --name %s or another --data-dir",
			l.Dir, prev.Name, o.Name, prev.Name)
	}
	if err := ensurePKI(l.PKIDir(), time.Now(), o.Identities); err != nil {
		return nil, fmt.Errorf("certificates in %s: %w", l.PKIDir(), err)
	}
	previousPort := 0
	if prev != nil {
		previousPort = prev.Ports.APIServer
	}
	ports, err := allocatePorts(o.Port, previousPort)
	if err != nil {
		return nil, err
	}
	if o.Plan.AuditWrites {
		if err := os.WriteFile(l.AuditPolicy(), []byte(auditPolicy), 0o600); err != nil {
			return nil, fmt.Errorf("writing the audit policy: %w", err)
		}
	}
	if err := writeKubeconfigs(l, o.Name, ports.APIServer, o.Identities); err != nil {
		return nil, fmt.Errorf("writing kubeconfigs: %w", err)
	}
	health, err := healthClient(l)
	if err != nil {
		return nil, fmt.Errorf("certificates in %s: %w", l.PKIDir(), err)
	}
	comps := Plan(l, ports, o.Plan)
	var extra []Component
	if o.Extra != nil {
		if extra, err = o.Extra(l, ports); err != nil {
			return nil, err
		}
	}
	self, _ := procStartTime(os.Getpid())
	inst := &Instance{
		layout: l, opts: o, spawner: newSpawner(), lock: lock, health: health, progress: progress,
		stopReq: make(chan struct{}), killReq: make(chan struct{}), done: make(chan struct{}),
		state: State{
			Name: o.Name, Phase: PhaseStarting, Supervisor: ProcessRef{PID: os.Getpid(), StartTime: self},
			StartedAt: time.Now().UTC(), Kubeconfig: l.Kubeconfig(), Ports: ports,
			AuditWrites: o.Plan.AuditWrites,
		},
	}
	if err := writeState(l, &inst.state); err != nil {
		inst.spawner.close()
		return nil, fmt.Errorf("writing %s: %w", l.StateFile(), err)
	}
	if err := inst.startAll(ctx, comps, extra); err != nil {
		inst.shutdown(err)
		return nil, err
	}
	inst.update(func(s *State) { s.Phase = PhaseRunning })
	go inst.supervise()
	return inst, nil
}

// program is what runs c.
func (i *Instance) program(c Component) string {
	if c.Program != "" {
		return c.Program
	}
	return i.opts.Binary
}

// startAll starts the core, runs AfterCore, then starts the extra components.
func (i *Instance) startAll(ctx context.Context, core, extra []Component) error {
	if err := i.startStages(ctx, core); err != nil {
		return err
	}
	if i.opts.AfterCore != nil {
		if err := i.opts.AfterCore(ctx, i.layout); err != nil {
			return err
		}
	}
	return i.startStages(ctx, extra)
}

// startStages starts components stage by stage, waiting for each stage to be healthy.
func (i *Instance) startStages(ctx context.Context, comps []Component) error {
	for idx := 0; idx < len(comps); {
		stage := comps[idx].Stage
		var batch []*process
		var batchComps []Component
		for ; idx < len(comps) && comps[idx].Stage == stage; idx++ {
			c := comps[idx]
			fmt.Fprintf(i.progress, "starting %s\n", c.Name)
			p, err := startProcess(i.spawner, c.Name, i.program(c), c.Args, i.layout.LogFile(c.Name))
			if err != nil {
				return err
			}
			i.procs = append(i.procs, p)
			i.comps = append(i.comps, c)
			i.update(func(s *State) {
				s.Components = append(s.Components, ComponentState{
					Name: c.Name, Process: ProcessRef{PID: p.pid(), StartTime: p.startTime},
					Port: c.Port, HealthURL: c.HealthURL, Log: p.logPath, Started: p.started.UTC(),
				})
			})
			batch = append(batch, p)
			batchComps = append(batchComps, c)
		}
		for k, p := range batch {
			if err := i.waitHealthy(ctx, batchComps[k], p); err != nil {
				return err
			}
			fmt.Fprintf(i.progress, "%s ready after %.1fs\n", p.name, time.Since(p.started).Seconds())
			if c := batchComps[k]; c.AfterReady != nil {
				if err := c.AfterReady(ctx); err != nil {
					return fmt.Errorf("%s: %w", c.Name, err)
				}
			}
		}
	}
	return nil
}

// waitHealthy polls the component's health URL until it answers 200, the
// process exits, its start timeout passes or ctx ends.
func (i *Instance) waitHealthy(ctx context.Context, c Component, p *process) error {
	deadline := time.NewTimer(c.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = checkHealth(cctx, i.health, c.HealthURL)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return &ComponentError{Component: c.Name, Problem: "exited during start-up (" + p.exitReason() + ")",
				Log: p.logPath, LogTail: p.logTail(20)}
		case <-deadline.C:
			return &ComponentError{Component: c.Name,
				Problem: fmt.Sprintf("was not ready within %s (last health check: %v)", c.StartTimeout, last),
				Log:     p.logPath, LogTail: p.logTail(20)}
		case <-ctx.Done():
			return fmt.Errorf("start-up of %s interrupted: %w", c.Name, ctx.Err())
		case <-i.killReq:
			return fmt.Errorf("start-up of %s interrupted", c.Name)
		case <-tick.C:
		}
	}
}

// supervise waits for a stop request or for a component to exit on its own.
// A component that exits is restarted after a backoff, the others left
// running, as a kubelet restarts a crashed container; one that keeps exiting
// (RestartPolicy) stops the whole instance, recording which component failed
// and why.
func (i *Instance) supervise() {
	exited := make(chan int, len(i.procs))
	restart := make(chan int)
	watch := func(k int, p *process) {
		go func() {
			<-p.done
			exited <- k
		}()
	}
	for k, p := range i.procs {
		watch(k, p)
	}
	crashes := make([][]time.Time, len(i.procs))
	for {
		select {
		case <-i.stopReq:
			i.shutdown(nil)
			return
		case <-i.killReq:
			i.shutdown(nil)
			return
		case k := <-exited:
			p, now := i.procs[k], time.Now()
			delay, ok, crash := i.opts.Restart.next(crashes[k], now, now.Sub(p.started))
			if crash {
				crashes[k] = append(crashes[k], now)
			}
			if !ok {
				ce := &ComponentError{Component: p.name, Log: p.logPath, LogTail: p.logTail(20),
					Problem: fmt.Sprintf("exited unexpectedly %d times within %s, each less than %s after it started, the last time with %s; not restarted again",
						i.opts.Restart.recent(crashes[k], now), i.opts.Restart.Window, i.opts.Restart.Stable, p.exitReason())}
				fmt.Fprintf(i.progress, "error: %v\n", ce)
				i.shutdown(ce)
				return
			}
			fmt.Fprintf(i.progress, "%s exited unexpectedly (%s); restarting it in %s\n", p.name, p.exitReason(), delay)
			i.update(func(s *State) { s.Components[k].LastExit = &Exit{Reason: p.exitReason(), At: now.UTC()} })
			time.AfterFunc(delay, func() {
				select {
				case restart <- k:
				case <-i.done:
				}
			})
		case k := <-restart:
			c := i.comps[k]
			p, err := startProcess(i.spawner, c.Name, i.program(c), c.Args, i.layout.LogFile(c.Name))
			if err != nil {
				ce := &ComponentError{Component: c.Name, Problem: "could not be restarted: " + err.Error(), Log: i.procs[k].logPath}
				fmt.Fprintf(i.progress, "error: %v\n", ce)
				i.shutdown(ce)
				return
			}
			i.procs[k] = p
			i.update(func(s *State) {
				s.Components[k].Process = ProcessRef{PID: p.pid(), StartTime: p.startTime}
				s.Components[k].Started = p.started.UTC()
				s.Components[k].Restarts++
			})
			fmt.Fprintf(i.progress, "%s restarted (pid %d)\n", c.Name, p.pid())
			watch(k, p)
		}
	}
}

// shutdown stops every started process in reverse start order (SIGTERM, then
// SIGKILL after the component's grace period), records the final state with the
// cause, if any, and releases the data directory.
func (i *Instance) shutdown(cause error) {
	i.update(func(s *State) { s.Phase = PhaseStopping })
	for k := len(i.procs) - 1; k >= 0; k-- {
		p := i.procs[k]
		if p.exited() {
			continue
		}
		if c := i.comps[k]; c.BeforeStop != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if err := c.BeforeStop(ctx); err != nil {
				fmt.Fprintf(i.progress, "warning: before stopping %s: %v\n", p.name, err)
			}
			cancel()
		}
		fmt.Fprintf(i.progress, "stopping %s\n", p.name)
		stopped := make(chan struct{})
		go func() {
			p.stop(i.comps[k].StopGrace)
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-i.killReq:
			i.killAll()
			<-stopped
		}
	}
	i.spawner.close()
	if i.opts.AfterStop != nil {
		if err := i.opts.AfterStop(i.layout); err != nil {
			fmt.Fprintf(i.progress, "warning: %v\n", err)
		}
	}
	i.update(func(s *State) {
		now := time.Now().UTC()
		s.StoppedAt = &now
		s.Phase = PhaseStopped
		if cause != nil {
			s.Phase = PhaseFailed
			s.Failure = &Failure{Message: cause.Error(), At: now}
			var ce *ComponentError
			if errors.As(cause, &ce) {
				s.Failure = &Failure{Component: ce.Component, Message: ce.Component + " " + ce.Problem,
					Log: ce.Log, LogTail: ce.LogTail, At: now}
			}
		}
		i.err = cause
	})
	i.lock.release()
	close(i.done)
}

func (i *Instance) killAll() {
	for _, p := range i.procs {
		if !p.exited() {
			p.kill()
		}
	}
}

// update changes the state and writes instance.json, under the lock that State and Err take.
func (i *Instance) update(change func(*State)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	change(&i.state)
	if err := writeState(i.layout, &i.state); err != nil {
		fmt.Fprintf(i.progress, "warning: writing %s: %v\n", i.layout.StateFile(), err)
	}
}

// Stop stops every component in order and waits until all have exited. It
// returns the failure that stopped the instance earlier, if any.
func (i *Instance) Stop() error {
	i.stopOnce.Do(func() { close(i.stopReq) })
	<-i.done
	return i.Err()
}

// Kill ends every component at once (SIGKILL), for a second Ctrl-C. It does not wait.
func (i *Instance) Kill() { i.killOnce.Do(func() { close(i.killReq) }) }

// Done is closed once the instance has stopped, on request or because a component failed.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Err is the failure that stopped the instance; nil while running or after a requested stop.
func (i *Instance) Err() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.err
}

// Kubeconfig is the admin kubeconfig path.
func (i *Instance) Kubeconfig() string { return i.layout.Kubeconfig() }

// Layout is the instance's data directory.
func (i *Instance) Layout() Layout { return i.layout }

// State is a copy of what instance.json holds.
func (i *Instance) State() State {
	i.mu.Lock()
	defer i.mu.Unlock()
	s := i.state
	s.Components = append([]ComponentState(nil), s.Components...)
	return s
}
