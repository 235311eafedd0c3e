package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/addon"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/demo"
	"github.com/berth-dev/berth/internal/localcluster"
	"github.com/berth-dev/berth/internal/realnode"
	"github.com/berth-dev/berth/internal/sim/nodepool"
	"github.com/berth-dev/berth/internal/vcluster/supervisor"
)

type upOptions struct {
	instanceFlags
	detach   bool
	demo     bool
	port     int
	noFsync  bool
	notifyFD int
	// serverArgs are flags for the control plane's servers, by component.
	serverArgs map[string]*[]string
	// auditWrites makes kube-apiserver log every write, for berth bench.
	auditWrites bool
	pool        poolFlags
	// simArgs are the pool flags set on the command line, for the simulator.
	simArgs []string
	// controllerFlags go to `berth controller` as they are.
	controllerFlags []string
	// workers is how many worker instances to start (--workers); started
	// are those started, to be wired once the manager is up.
	workers int
	started []worker
	// realNode adds a real node (containerd, kubelet, kube-proxy).
	realNode bool
	// noController leaves berth's controller out, to install it from its image.
	noController bool
	// configuredKinds is a --configured-kinds file for the controller.
	configuredKinds string
	// with names other projects' controllers to run too (package addon).
	with []string
}

func newUpCommand() *cobra.Command {
	o := &upOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local control plane with berth's controller and fake nodes",
		Long: `Start a local Kubernetes control plane on loopback (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler), install berth's CRDs, run the
simulator (see 'berth sim') and berth's controller, and write an admin
kubeconfig into the data directory. Objects survive 'berth down' and the next
'berth up'.

--nodes N makes exactly N fake nodes exist, sized and labelled by the other
node flags; without it the nodes of the last run stay as they are. Pods on
fake nodes run until deleted, or for the duration in their
berth.dev/sim-duration annotation.

Without --detach, berth runs in the foreground until Ctrl-C and then stops every
component in order (a second Ctrl-C kills them at once). With --detach it
returns once everything is ready and leaves the control plane running; stop it
with 'berth down'. Either way the last line on standard output is the path of
the kubeconfig.

--demo shows berth at work once it is up: it applies examples/queues.yaml (two
teams sharing a cohort), submits the Jobs of examples/demo-jobs.yaml, and shows
each queue's pending, admitted, finished and borrowed work until they finish;
the control plane keeps running afterwards. It implies --nodes 4 unless
--nodes is given.`,
		Example: `  berth up --demo
  berth up --detach --nodes 4
  berth kubectl get nodes
  berth down

  # 64 nodes labelled in racks of 8 and blocks of 2 racks
  berth up --nodes 64 --nodes-per-rack 8 --racks-per-block 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := o.resolve()
			if err != nil {
				return err
			}
			if _, err := o.pool.pool(cmd.Flags(), labels.SelectorFromSet(labels.Set{nodepool.OwnerLabel: "true"})); err != nil {
				return err // reported here rather than by the simulator once everything else is up
			}
			if _, err := addon.Parse(o.with); err != nil {
				return err
			}
			if o.configuredKinds != "" {
				if o.noController {
					return fmt.Errorf("--configured-kinds with --no-controller: the kinds are queued by berth's controller, which this instance would not run")
				}
				if _, err := readConfiguredKinds(o.configuredKinds); err != nil {
					return err
				}
				if o.configuredKinds, err = filepath.Abs(o.configuredKinds); err != nil {
					return err
				}
			}
			if o.noController && (o.demo || o.workers > 0) {
				return fmt.Errorf("--no-controller with --demo or --workers: both need berth's controller on this instance")
			}
			o.simArgs = forwardPoolFlags(cmd.Flags())
			if o.demo && !cmd.Flags().Changed("nodes") {
				o.simArgs = append(o.simArgs, "--nodes="+strconv.Itoa(demoNodes))
			}
			if o.workers > 0 {
				if err := o.startWorkers(cmd, dir); err != nil {
					return err
				}
			}
			if o.detach {
				return upDetached(cmd, o, dir)
			}
			return upForeground(cmd, o, dir)
		},
	}
	o.add(cmd)
	cmd.Flags().BoolVarP(&o.detach, "detach", "d", false, "return once ready and leave the control plane running in the background")
	cmd.Flags().BoolVar(&o.demo, "demo", false, "once up, run the example queues and Jobs and show each queue until they finish")
	cmd.Flags().IntVar(&o.port, "port", 0, "kube-apiserver port on 127.0.0.1 (0: the previous run's port if free, else any free port)")
	cmd.Flags().BoolVar(&o.noFsync, "etcd-unsafe-no-fsync", false, "run etcd without fsync: faster, but a machine crash may lose recent writes")
	cmd.Flags().StringArrayVar(&o.controllerFlags, "controller-flag", nil,
		"a flag for berth's controller, e.g. --controller-flag=--fair-sharing (repeatable; see 'berth controller --help')")
	cmd.Flags().IntVar(&o.workers, "workers", 0,
		"also start this many worker instances (NAME-worker1, ...; data under the manager's data directory), each with "+
			"the simulator's nodes, and make this instance their manager: WorkerClusters worker1..N, MultiClusterConfig "+
			workersConfigName+" and AdmissionCheck "+workersCheckName)
	o.serverArgs = map[string]*[]string{}
	example := map[string]string{"etcd": "--quota-backend-bytes=4294967296", "kube-apiserver": "--profiling=true",
		"kube-controller-manager": "--concurrent-job-syncs=20", "kube-scheduler": "--v=4"}
	for _, c := range controlplane.ArgsComponents {
		var args []string
		o.serverArgs[c] = &args
		flag := strings.TrimPrefix(c, "kube-") + "-arg"
		cmd.Flags().StringArrayVar(&args, flag, nil,
			fmt.Sprintf("a flag for %s, after berth's own so that it wins, e.g. --%s=%s (repeatable)", c, flag, example[c]))
	}
	cmd.Flags().BoolVar(&o.realNode, "real-node", false,
		"also run one real node, "+realnode.NodeName+" (labelled "+realnode.Label+"=true): containerd and runc from the distribution, "+
			"a CNI bridge network, a kubelet and kube-proxy; its pods run real containers, from images loaded with 'berth image load'. "+
			"Needs Linux and root; 'berth down' removes what it set up on the machine")
	cmd.Flags().BoolVar(&o.noController, "no-controller", false,
		"run no berth controller of its own and install nothing of berth's (only the simulator's CRDs and roles): a cluster to install berth in from its image and chart (docs/install.md)")
	cmd.Flags().StringVar(&o.configuredKinds, "configured-kinds", "",
		"a YAML file of kinds berth's controller queues from configuration alone (see 'berth controller --help' and docs/integrations.md); "+
			"the controller is granted what it needs for them: their objects, and the admission policies it applies for them")
	cmd.Flags().StringSliceVar(&o.with, "with", nil,
		"also run these controllers as components of the instance, built into berth from their Go modules, their CRDs installed: "+
			"jobset (sigs.k8s.io/jobset's controller and webhooks), so that JobSets can be queued; "+
			"leaderworkerset (sigs.k8s.io/lws's controller and webhooks), so that LeaderWorkerSets can be queued; "+
			"ray (KubeRay's operator: RayClusters, RayJobs, RayServices), its RayClusters and RayJobs queued as kinds from configuration (config/addons/ray/kinds.yaml, added to --configured-kinds), the Ray dashboard of a cluster on simulated nodes simulated; "+
			"trainer (Kubeflow Trainer's controller and TrainJob validation; jobset comes with it), so that TrainJobs can be queued; "+
			"training-operator (Kubeflow's training operator: PyTorchJobs, TFJobs, XGBoostJobs, PaddleJobs, JAXJobs), queued as kinds from configuration (config/addons/training-operator/kinds.yaml, added to --configured-kinds); "+
			"--workers instances run them too")
	cmd.Flags().BoolVar(&o.auditWrites, "audit-writes", false,
		"kube-apiserver logs every write (who, verb, object) to logs/writes.log in the data directory; "+
			"berth bench then reports the writes by client (it costs the API server some CPU)")
	cmd.Flags().IntVar(&o.notifyFD, "notify-fd", 0, "internal: file descriptor on which to report start-up to a detaching parent")
	_ = cmd.Flags().MarkHidden("notify-fd")
	o.pool.add(cmd.Flags())
	return cmd
}

// interrupts is how a foreground supervisor hears Ctrl-C and SIGTERM: the
// first cancels ctx (start-up is abandoned, or an orderly stop begins), and
// sigs delivers the second (kill everything at once; see stopWhenAsked).
func interrupts() (ctx context.Context, sigs <-chan os.Signal, release func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, ch, func() {
		signal.Stop(ch)
		cancel()
	}
}

// stopWhenAsked stops inst in order once ctx ends (after saying so with
// say), and kills it at once on a second signal; it returns when inst has
// stopped, whichever way.
func stopWhenAsked(ctx context.Context, sigs <-chan os.Signal, inst *controlplane.Instance, say func()) {
	select {
	case <-ctx.Done():
		say()
		go func() {
			select {
			case <-sigs:
				inst.Kill()
			case <-inst.Done():
			}
		}()
		_ = inst.Stop() // a failure that stopped it is the caller's to report, from inst.Err()
	case <-inst.Done():
	}
}

// notice is one line of the start-up protocol between `berth up --detach` and
// the background supervisor it starts.
type notice struct {
	Progress string `json:"progress,omitempty"`
	Ready    string `json:"ready,omitempty"`
	Error    string `json:"error,omitempty"`
}

// reporter writes progress to a log and, until start-up ends, relays it as
// notices to the detaching parent.
type reporter struct {
	mu     sync.Mutex
	out    io.Writer
	notify *os.File // nil when not detached, or once start-up has been reported
}

func (r *reporter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.notify != nil {
		enc := json.NewEncoder(r.notify)
		for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
			_ = enc.Encode(notice{Progress: line})
		}
	}
	return r.out.Write(p)
}

// finish sends the final notice (ready or error) and closes the pipe.
func (r *reporter) finish(n notice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.notify != nil {
		_ = json.NewEncoder(r.notify).Encode(n)
		r.notify.Close()
		r.notify = nil
	}
}

func upForeground(cmd *cobra.Command, o *upOptions, dir string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	progress := &reporter{out: stderr}
	detached := o.notifyFD > 0
	if detached {
		progress.notify = os.NewFile(uintptr(o.notifyFD), "notify")
	}

	ctx, sigs, release := interrupts()
	defer release()

	with, err := addon.Parse(o.with)
	if err != nil {
		progress.finish(notice{Error: err.Error()})
		return err
	}
	began := time.Now()
	inst, err := controlplane.Start(ctx, localcluster.Options(localcluster.Config{
		Name: o.name, DataDir: dir, Port: o.port, Progress: progress, Plan: planOptions(o), SimArgs: o.simArgs,
		ControllerArgs: o.controllerFlags, ConfiguredKinds: o.configuredKinds, RealNode: o.realNode, NoController: o.noController, With: with,
	}))
	if err != nil {
		if ce := (*controlplane.ComponentError)(nil); errors.As(err, &ce) {
			// A component that would not start is most often the machine's doing.
			err = fmt.Errorf("%w\n'berth doctor%s' says what this machine lacks, if anything", err, doctorFor(o))
		}
		progress.finish(notice{Error: err.Error()})
		return err
	}
	st := inst.State()
	fmt.Fprintf(stderr, "ready after %.1fs\n", time.Since(began).Seconds())
	fmt.Fprintf(stdout, "berth %q is up: kube-apiserver at https://127.0.0.1:%d, data in %s\n", o.name, st.Ports.APIServer, dir)
	fmt.Fprintf(stdout, "  use it:   berth kubectl %s get nodes    (or kubectl --kubeconfig %s ...)\n", o.selector(dir), inst.Kubeconfig())
	if detached {
		fmt.Fprintf(stdout, "  stop it:  berth down %s\n", o.selector(dir))
	} else {
		fmt.Fprintf(stdout, "  stop it:  Ctrl-C\n")
	}
	if err := o.wireWorkers(cmd, inst.Kubeconfig()); err != nil {
		_ = inst.Stop() // err is the failure to report
		progress.finish(notice{Error: err.Error()})
		return err
	}
	_ = os.Remove(filepath.Join(dir, dashboardURLFile)) // an earlier supervisor's
	if !o.noController {
		// A page of the queues, live; served by this supervisor while the
		// instance runs. Without it the instance still works.
		if url, err := serveDashboard(ctx, inst.Kubeconfig(), dir, stderr); err != nil {
			fmt.Fprintf(stderr, "the dashboard did not start: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "  watch it: %s    (the dashboard: the queues, live)\n", url)
		}
	}
	supervisor.StartAll(dir, progress, startDetached)
	fmt.Fprintln(stdout, inst.Kubeconfig())
	progress.finish(notice{Ready: inst.Kubeconfig()})

	go stopWhenAsked(ctx, sigs, inst, func() { fmt.Fprintln(stderr, "stopping (Ctrl-C again to kill at once)") })
	if o.demo && !detached {
		demoCtx, stopDemo := context.WithCancel(ctx)
		go func() {
			<-inst.Done()
			stopDemo()
		}()
		if err := showDemo(demoCtx, cmd, o, dir, inst.Kubeconfig()); err != nil && demoCtx.Err() == nil {
			fmt.Fprintf(stderr, "demo: %v\n", err)
		}
		stopDemo()
		if ctx.Err() == nil {
			fmt.Fprintln(stdout, "  stop it:  Ctrl-C")
			fmt.Fprintln(stdout, inst.Kubeconfig())
		}
	}
	<-inst.Done()
	if len(o.started) > 0 {
		if err := stopWorkers(context.Background(), o.name, dir, stderr); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
		}
	}
	if err := inst.Err(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "berth %q stopped\n", o.name)
	return nil
}

// startWorkers starts the --workers instances; the manager then runs no
// nodes of its own, since its Jobs run on the workers.
func (o *upOptions) startWorkers(cmd *cobra.Command, dir string) error {
	if o.demo {
		return fmt.Errorf("--demo with --workers is not supported yet: the demo's queues run their Jobs on this instance")
	}
	workers, err := workersOf(o.name, dir, o.workers)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "starting %d worker instances\n", len(workers))
	if err := startWorkers(context.Background(), workers, cmd.ErrOrStderr(), append(o.planFlags(), o.simArgs...)); err != nil {
		_ = stopWorkers(context.Background(), o.name, dir, cmd.ErrOrStderr())
		return err
	}
	o.started = workers
	o.simArgs = []string{"--nodes=0"}
	return nil
}

// wireWorkers makes the started workers known to the manager.
func (o *upOptions) wireWorkers(cmd *cobra.Command, kubeconfig string) error {
	if len(o.started) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := wireWorkers(ctx, kubeconfig, o.started); err != nil {
		return fmt.Errorf("adding the workers to the manager: %w", err)
	}
	for _, w := range o.started {
		fmt.Fprintf(cmd.OutOrStdout(), "  worker:   %s (berth kubectl --name %s --data-dir %s ...)\n", w.name, w.instance, w.dir)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "  Jobs (and JobSets, with --with jobset) of a ClusterQueue with admissionChecks [%s] run on the workers; see docs/multicluster.md\n", workersCheckName)
	return nil
}

// planFlags are the command-line flags of planOptions and --with: a
// detached supervisor and the worker instances are started with them.
func (o *upOptions) planFlags() []string {
	var args []string
	if o.noFsync {
		args = append(args, "--etcd-unsafe-no-fsync")
	}
	if o.auditWrites {
		args = append(args, "--audit-writes")
	}
	for _, c := range controlplane.ArgsComponents {
		for _, a := range *o.serverArgs[c] {
			args = append(args, "--"+strings.TrimPrefix(c, "kube-")+"-arg="+a)
		}
	}
	// Workers run the same addons, so that what the manager queues of
	// theirs (a JobSet) can run there.
	for _, w := range o.with {
		args = append(args, "--with="+w)
	}
	return args
}

func planOptions(o *upOptions) controlplane.PlanOptions {
	p := controlplane.DefaultPlanOptions()
	p.EtcdUnsafeNoFsync = o.noFsync
	p.AuditWrites = o.auditWrites
	p.Args = map[string][]string{}
	for c, args := range o.serverArgs {
		if len(*args) > 0 {
			p.Args[c] = *args
		}
	}
	return p
}

// upDetached starts `berth up` (foreground mode) as a background supervisor in
// its own session, relays its progress, and returns once it reports ready or
// fails. The supervisor's output goes to logs/berth.log in the data directory.
func upDetached(cmd *cobra.Command, o *upOptions, dir string) error {
	stdout := cmd.OutOrStdout()
	args := []string{"up", "--name", o.name, "--data-dir", dir, "--port", strconv.Itoa(o.port)}
	args = append(args, o.planFlags()...)
	args = append(args, o.simArgs...)
	if o.realNode {
		args = append(args, "--real-node")
	}
	if o.noController {
		args = append(args, "--no-controller")
	}
	for _, f := range o.controllerFlags {
		args = append(args, "--controller-flag="+f)
	}
	if o.configuredKinds != "" {
		args = append(args, "--configured-kinds="+o.configuredKinds)
	}
	kubeconfig, pid, err := detach(cmd.ErrOrStderr(), dir, args)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "berth %q is up in the background (supervisor pid %d), data in %s\n", o.name, pid, dir)
	fmt.Fprintf(stdout, "  use it:   berth kubectl %s get nodes    (or kubectl --kubeconfig %s ...)\n", o.selector(dir), kubeconfig)
	fmt.Fprintf(stdout, "  stop it:  berth down %s\n", o.selector(dir))
	if url := dashboardURL(dir); url != "" {
		fmt.Fprintf(stdout, "  watch it: %s    (the dashboard: the queues, live)\n", url)
	}
	if err := o.wireWorkers(cmd, kubeconfig); err != nil {
		return fmt.Errorf("%w (berth %q keeps running; stop it with 'berth down %s')", err, o.name, o.selector(dir))
	}
	if o.demo {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := showDemo(ctx, cmd, o, dir, kubeconfig)
		stop()
		if err != nil {
			return fmt.Errorf("demo: %w (berth %q keeps running; stop it with 'berth down %s')", err, o.name, o.selector(dir))
		}
		fmt.Fprintf(stdout, "  stop it:  berth down %s\n", o.selector(dir))
	}
	fmt.Fprintln(stdout, kubeconfig)
	return nil
}

// startDetached is detach for a virtual cluster: supervisor.Starter.
func startDetached(progress io.Writer, vdir string, args []string) (string, error) {
	kubeconfig, _, err := detach(progress, vdir, args)
	return kubeconfig, err
}

// detach runs this binary with args (a foreground supervisor that takes
// --notify-fd) as a background process in its own session, relays its
// progress to progress, and returns once it reports ready (with the
// kubeconfig it reported) or fails. Its output goes to logs/berth.log in dir.
func detach(progress io.Writer, dir string, args []string) (kubeconfig string, pid int, err error) {
	l := controlplane.Layout{Dir: dir}
	if err := os.MkdirAll(l.LogDir(), 0o700); err != nil {
		return "", 0, fmt.Errorf("data directory %s: %w", dir, err)
	}
	logf, err := os.OpenFile(l.LogFile("berth"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", 0, err
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, io.SeekEnd)
	r, w, err := os.Pipe()
	if err != nil {
		return "", 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return "", 0, err
	}
	child := exec.Command(self, append(args, "--notify-fd", "3")...)
	child.Stdout, child.Stderr = logf, logf
	child.ExtraFiles = []*os.File{w}
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		r.Close()
		w.Close()
		return "", 0, fmt.Errorf("starting the background supervisor: %w", err)
	}
	w.Close()
	defer r.Close()
	exited := make(chan struct{})
	go func() {
		_ = child.Wait()
		close(exited)
	}()

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var n notice
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
			continue
		}
		switch {
		case n.Progress != "":
			fmt.Fprintln(progress, n.Progress)
		case n.Error != "":
			<-exited // it has stopped whatever it started
			return "", 0, errors.New(n.Error)
		case n.Ready != "":
			return n.Ready, child.Process.Pid, nil
		}
	}
	<-exited
	tail := controlplane.TailFile(l.LogFile("berth"), logStart, 20)
	return "", 0, fmt.Errorf("the background supervisor exited during start-up; last lines of %s:\n    %s",
		l.LogFile("berth"), strings.Join(tail, "\n    "))
}

// demoNodes is how many fake nodes --demo asks for unless --nodes is given.
const demoNodes = 4

// showDemo runs the demo against the instance and says how to look around
// afterwards. The view is redrawn in place when stdout is a terminal.
func showDemo(ctx context.Context, cmd *cobra.Command, o *upOptions, dir, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	stdout := cmd.OutOrStdout()
	f, isFile := stdout.(*os.File)
	live := isFile && term.IsTerminal(int(f.Fd()))
	if err := demo.Run(ctx, cfg, demo.Options{Out: stdout, Live: live}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "berth %q keeps running; look around with\n", o.name)
	fmt.Fprintf(stdout, "  berth kubectl %s get clusterqueues,localqueues,workloads -A\n", o.selector(dir))
	fmt.Fprintf(stdout, "  berth kubectl %s get jobs,pods -n team-a\n", o.selector(dir))
	return nil
}

// doctorFor is the --for of the berth doctor that checks what this up needs.
func doctorFor(o *upOptions) string {
	if o.realNode {
		return " --for up,real-node"
	}
	return ""
}
