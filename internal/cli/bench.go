package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/vcluster/serve"
	"github.com/berth-dev/berth/internal/vcluster/supervisor"
)

// The scenarios with runners of their own, beside bench.Scenarios.
const (
	simScale   = "sim-scale"
	e2eJobs    = "e2e-jobs"
	e2eJobSets = "e2e-jobsets"
	podsRun    = "pods"
	tasRun     = "tas"
	deepRun    = "deep-queue"
	mcRun      = "multicluster"
	chaosRun   = "chaos"
	vcRun      = "vcluster"
	creates    = "creates"
)

func newBenchCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		o          bench.Options
		seed       uint64
		faults     int
		duration   time.Duration
	)
	var names []string
	for n := range bench.Scenarios {
		names = append(names, n)
	}
	// The runners of their own, one list for the help and the check below.
	names = append(names, simScale, e2eJobs, e2eJobSets, podsRun, tasRun, deepRun, mcRun, chaosRun, vcRun, creates)
	sort.Strings(names)
	cmd := &cobra.Command{
		Use:   "bench <scenario>",
		Short: "Run a benchmark scenario and write its results",
		Long: `Run a benchmark scenario against a berth instance (--name/--data-dir, as
'berth up' started it) or any cluster running berth's controller (--kubeconfig),
and write results.json, summary.md, chart.png (counts over time: per class,
admitted, running and finished) and chart.csv (the chart's data) into the
output directory.

Scenarios: ` + strings.Join(names, ", ") + `. baseline has the shape of Kueue's
scheduler performance test: 5 cohorts of 6 ClusterQueues of 20 cpu, 15,000
workloads arriving over a minute; each is marked finished once it has run for
its class's runtime after admission, so the figures measure the queueing
system. large-scale is Kueue's large-scale shape: 10 cohorts of 100
ClusterQueues, 50,000 workloads (--scale multiplies the queues per cohort).
throughput holds 10 ClusterQueues with quota that never binds while
10,000 workloads are created, measures the rate at which the API server takes
status writes from a client alone, then releases the queues and reports
admissions per second against it. sim-scale runs its own simulator ('berth
sim') with 5,000 nodes of its own (labelled and tainted berth.dev/bench-sim),
then 10,000 pods bound to them until Running, then deletes them, timing each
step, and removes its nodes at the end. e2e-jobs sends 2,000 real Jobs of 2
pods through berth's queue (100 cpu), the Job controller, kube-scheduler and a
simulator of its own (10 nodes) and reports how long each Job took from
creation to all its pods Running, by percentile. e2e-jobsets does the same
with 1,000 JobSets of 2 replicated Jobs of one pod (the instance must run the
JobSet controller: berth up --with jobset). pods does the same with 5,000
plain Pods and 500 pod groups of 8 (9,000 pods), timing single Pods and groups
apart. tas sends 400 Jobs of 4, 8, 16 and 32 pods, each preferring one rack,
through topology-aware placement on 64 nodes of 8 cpu in racks of 4, and
reports their start times and how many racks each gang spans. deep-queue is
the shape of Kueue's issue #14477: 200, 150 and 100 gangs of 8 pods of 4 cpu,
each preferring one rack, queued at once in 3 ClusterQueues of 512 cpu in one
cohort, on 1,300 nodes of 8 cpu in racks of 10; 48 gangs run at once, for 30
s, so quota frees a wave at a time; it reports gangs started a minute and
when the last started against the earliest the quota allows (run the
instance with --controller-flag=--fair-sharing for Kueue's setting). fidelity
is a run where quota, not the API server, sets the pace (6 ClusterQueues of
10 cpu in 2 cohorts, 636 workloads of 10 to 20 s arriving over 2 minutes),
for comparing berth whatif's replay of its trace with what happened
(docs/whatif.md); every queue scenario writes its queues.yaml for that. multicluster
sends 2,000 Jobs of one short pod through a manager to its Active worker
clusters ('berth up --workers 2') with quotas that never bind, and reports
dispatch throughput (Jobs admitted on a worker per second) and the time from
creation to admission on a worker. chaos runs baseline's queues for
--duration, its workloads arriving ten times as rarely and running eight
times as long (--scale multiplies how often they arrive), with Jobs of 2
pods, plain Pods and pod groups of 2 on 20 fake nodes of the instance's
simulator, and the auditor on,
while it kills (SIGKILL) berth's controller, kube-apiserver, etcd and the
simulator of the instance: --faults of them,
the kinds in turn, at moments drawn from --seed (printed, so a failing run
can be replayed with it). Kinds run side by side; a component is hit again
once it is back and has run 10s (so that berth up never takes the kills for
a crash loop). When the instance's controller runs with leader election
(berth up --controller-flag=--leader-elect) it also starts a second replica
and pauses whichever leads (SIGSTOP) past its lease, then resumes it. It
reports each kind's recovery (until the component is back, or another
replica leads, and admissions go on) and fails on any broken promise, or if
the work ended before every fault was injected. vcluster creates
virtual cluster "bench" on the instance, 1,000 Pods in it at once, reports
the time until all run inside, the syncer's API writes per Pod and its peak
memory, and deletes the virtual cluster (the host needs room for the Pods:
berth up --nodes 10). creates times how fast the API server creates
2,000 Jobs from 32 writers with berth's Job webhook in the way (queued Jobs)
and without it (Jobs with no queue label), first as dry runs (nothing stored:
the webhook's call alone), then stored in a held queue (berth makes each
queued Job's Workload too), and reports the rates and the webhook's latency.
e2e-jobs, e2e-jobsets, pods,
tas and deep-queue report
API writes per pod. --scale multiplies the workloads, Jobs,
Pods and groups, or nodes and pods (0.01 runs in seconds).

Each run first deletes the objects of the last one (labelled berth.dev/bench).
Against a berth instance it also reports kube-apiserver CPU seconds per
workload, the CPU time of each of the instance's processes and the
controller's peak RSS; with 'berth up --audit-writes', the API writes per
workload by client, verb and resource (multicluster: per Job, on every
control plane); with --profile DIR, CPU profiles of kube-apiserver and the
controller. See docs/benchmarks.md.`,
		Example: `  berth up --detach
  berth bench baseline --scale 0.1
  berth bench baseline --output /tmp/baseline`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scenario := bench.Scenarios[args[0]]
			if !slices.Contains(names, args[0]) {
				return fmt.Errorf("unknown scenario %q; scenarios: %s", args[0], strings.Join(names, ", "))
			}
			if o.Scale <= 0 {
				return fmt.Errorf("--scale %g: must be above 0", o.Scale)
			}
			if o.Profile != "" && slices.Contains([]string{simScale, mcRun, vcRun, creates}, args[0]) {
				return fmt.Errorf("--profile is not supported for %s yet: only for runs through one instance's queues", args[0])
			}
			if o.Audit && slices.Contains([]string{simScale, mcRun, vcRun, creates}, args[0]) {
				return fmt.Errorf("--audit is not supported for %s: it audits runs that admit workloads through one instance's queues", args[0])
			}
			instanceDir := ""
			if kubeconfig == "" {
				dir, st, err := inst.running("", ", or pass --kubeconfig")
				if err != nil {
					return err
				}
				kubeconfig = controlplane.Layout{Dir: dir}.Kubeconfig()
				instanceDir = dir
				o.Processes = map[string]int{}
				for _, c := range st.Components {
					o.Processes[c.Name] = c.Process.PID
					if c.Name == "berth-controller" {
						o.ControllerMetrics = "127.0.0.1:" + strconv.Itoa(c.Port)
					}
				}
				if st.AuditWrites {
					o.WritesLog = controlplane.Layout{Dir: dir}.WritesLog()
				}
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			if o.Alive, err = reachable(cfg, instanceDir); err != nil {
				return err
			}
			if o.Output == "" {
				o.Output = filepath.Join("berth-bench", args[0]+"-"+time.Now().Format("20060102-150405"))
			}
			o.Progress = cmd.ErrOrStderr()
			// client-go logs requests cut short when the run ends; progress
			// and errors that matter are reported by the run itself.
			klog.SetLogger(logr.Discard())
			ctrllog.SetLogger(logr.Discard())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			self, err := os.Executable()
			if err != nil {
				return err
			}
			var summary string
			switch args[0] {
			case simScale:
				res, runErr := bench.RunSimScale(ctx, cfg, kubeconfig, self, bench.SimScaleAt(o.Scale), o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.SimMarkdown(*res)
				}
			case e2eJobs:
				res, runErr := bench.RunE2EJobs(ctx, cfg, kubeconfig, self, bench.E2EJobsAt(o.Scale), o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.JobMarkdown(*res)
				}
			case e2eJobSets:
				res, runErr := bench.RunE2EJobSets(ctx, cfg, kubeconfig, self, bench.E2EJobSetsAt(o.Scale), o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.JobMarkdown(*res)
				}
			case tasRun:
				res, runErr := bench.RunTAS(ctx, cfg, kubeconfig, self, bench.TASAt(o.Scale), o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.TASMarkdown(*res)
				}
			case deepRun:
				s := bench.DeepQueueAt(o.Scale)
				if cmd.Flags().Changed("duration") {
					if duration <= 0 {
						return fmt.Errorf("deep-queue: --duration %s: want how long each gang runs, more than 0", duration)
					}
					s.Duration = duration
				}
				res, runErr := bench.RunDeepQueue(ctx, cfg, kubeconfig, self, s, o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.DeepQueueMarkdown(*res)
				}
			case chaosRun:
				if instanceDir == "" {
					return fmt.Errorf("chaos kills the components of a berth instance: pass --name/--data-dir, not --kubeconfig")
				}
				if !cmd.Flags().Changed("seed") {
					seed = uint64(time.Now().UnixNano())
				}
				if duration <= 0 || faults < 0 || o.Scale <= 0 {
					return fmt.Errorf("chaos: --duration %s, --scale %g and --faults %d: want a positive duration and scale, and no fewer than 0 faults",
						duration, o.Scale, faults)
				}
				sc := bench.Chaos(duration, o.Scale)
				// Faults spread over most of the arrivals, so that the last
				// come while there is still work to do.
				span := duration * 3 / 4
				if err := chaosReady(ctx, instanceDir); err != nil {
					return err
				}
				faultsFn, plan, stopChaos, setUpErr := setUpChaos(ctx, cmd.ErrOrStderr(), instanceDir, cfg, seed, faults, span)
				if setUpErr != nil {
					return setUpErr
				}
				defer stopChaos()
				o.Audit = true
				o.Chaos = faultsFn
				// The run takes the API server and etcd down on purpose, at
				// times one right after the other: the API server may take
				// longer than the usual 30 s to answer /readyz again (its
				// bootstrap hooks rerun; over 30 s in a CI run) though nothing
				// died. A run whose instance did die still ends, later.
				o.UnreachableAfter = 2 * time.Minute
				// The run kills these processes: what one of them used until
				// it was killed says nothing of the run.
				o.Processes = nil
				res, runErr := bench.Run(ctx, cfg, sc, o)
				if err = runErr; res != nil {
					summary = bench.Markdown(*res)
					if err == nil {
						err = chaosVerdict(res, len(plan))
					}
				}
			case vcRun:
				if instanceDir == "" {
					return fmt.Errorf("vcluster creates a virtual cluster on a berth instance: pass --name/--data-dir, not --kubeconfig")
				}
				res, runErr := benchVCluster(ctx, cmd.ErrOrStderr(), instanceDir, cfg, o)
				if err = runErr; res != nil {
					summary = bench.VClusterMarkdown(*res)
				}
			case mcRun:
				if instanceDir != "" {
					if o.WorkerWritesLogs, err = workerWritesLogs(inst.name, instanceDir); err != nil {
						return err
					}
				}
				res, runErr := bench.RunMultiCluster(ctx, cfg, bench.MultiClusterAt(o.Scale), o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.MultiClusterMarkdown(*res)
				}
			case creates:
				res, runErr := bench.RunCreates(ctx, cfg, bench.CreatesAt(o.Scale), o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.CreatesMarkdown(*res)
				}
			case podsRun:
				res, runErr := bench.RunPods(ctx, cfg, kubeconfig, self, bench.PodsAt(o.Scale), o.Scale, o)
				if err = runErr; res != nil {
					summary = bench.PodMarkdown(*res)
				}
			default:
				res, runErr := bench.Run(ctx, cfg, scenario(o.Scale), o)
				if err = runErr; res != nil {
					summary = bench.Markdown(*res)
				}
			}
			if summary != "" {
				fmt.Fprintln(cmd.OutOrStdout(), summary)
				fmt.Fprintf(cmd.OutOrStdout(), "results in %s\n", o.Output)
			}
			return err
		},
	}
	inst.add(cmd)
	cmd.ValidArgs = names
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "run against this cluster instead of a berth instance")
	f.Float64Var(&o.Scale, "scale", 1, "multiply the scenario's workloads by this (0.01 runs in seconds)")
	f.StringVar(&o.Output, "output", "", "directory for the results and the chart (default berth-bench/<scenario>-<time>)")
	f.DurationVar(&o.Timeout, "timeout", time.Hour, "give up if the workloads have not all finished by then")
	f.Uint64Var(&seed, "seed", 0, "chaos: the seed of the faults' order and moments (default: from the clock, printed)")
	f.IntVar(&faults, "faults", 10, "chaos: how many faults to inject, the kinds in turn")
	f.DurationVar(&duration, "duration", 2*time.Minute, "chaos: how long work arrives (the run lasts until the work is done and every fault injected); deep-queue: how long each gang runs (default 30s)")
	f.StringVar(&o.Profile, "profile", "",
		"save CPU profiles of kube-apiserver and berth's controller over the run into this directory "+
			"(berth up --apiserver-arg=--profiling=true --controller-flag=--profiling)")
	f.BoolVar(&o.Audit, "audit", false, "check berth's promises during the run and report what breaks (its watch adds load to the API server)")
	return cmd
}

// workerWritesLogs finds the audit logs of writes of the worker instances
// of the manager in dir (berth up --workers N --audit-writes).
func workerWritesLogs(manager, dir string) (map[string]string, error) {
	workers, err := workersOf(manager, dir, -1)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, w := range workers {
		l := controlplane.Layout{Dir: w.dir}
		if st, err := controlplane.ReadState(l); err == nil && st != nil && st.AuditWrites {
			out[w.name] = l.WritesLog()
		}
	}
	return out, nil
}

// reachable is the bench's check that its cluster still answers: the
// instance's supervisor runs and has not recorded a failure (when the bench
// runs against an instance), and the API server answers /readyz.
func reachable(cfg *rest.Config, instanceDir string) (func(context.Context) error, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		if instanceDir != "" {
			st, err := controlplane.ReadState(controlplane.Layout{Dir: instanceDir})
			if err != nil {
				return err
			}
			if st == nil || st.Phase == controlplane.PhaseFailed || !st.Supervisor.Alive() {
				msg := "its supervisor is gone"
				if st != nil && st.Failure != nil {
					msg = st.Failure.Message
				}
				return fmt.Errorf("the berth instance in %s is not running (%s); see berth status", instanceDir, msg)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			return fmt.Errorf("the API server at %s does not answer: %w", cfg.Host, err)
		}
		return nil
	}, nil
}

// benchVCluster makes virtual cluster "bench" on the instance in dir, runs
// berth bench vcluster in it, and deletes it.
func benchVCluster(ctx context.Context, progress io.Writer, dir string, host *rest.Config, o bench.Options) (*bench.VClusterResults, error) {
	s := &supervisor.Settings{Name: "bench"}
	kubeconfig, err := supervisor.Create(ctx, progress, dir, s, startDetached)
	if err != nil {
		return nil, err
	}
	defer func() {
		if _, err := supervisor.Delete(context.Background(), progress, dir, s.Name, 5*time.Minute); err != nil {
			fmt.Fprintf(progress, "warning: deleting virtual cluster %s: %v\n", s.Name, err)
		}
	}()
	virtual, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	t := bench.VClusterTarget{Virtual: virtual, Host: host}
	st, err := controlplane.ReadState(controlplane.Layout{Dir: filepath.Join(supervisor.Dir(dir), s.Name)})
	if err != nil || st == nil {
		return nil, fmt.Errorf("virtual cluster %s: no state (%v)", s.Name, err)
	}
	for _, c := range st.Components {
		if c.Name == serve.SyncerComponent {
			t.SyncerPID, t.SyncerMetrics = c.Process.PID, fmt.Sprintf("http://127.0.0.1:%d/metrics", c.Port)
		}
	}
	return bench.RunVCluster(ctx, t, bench.VClusterAt(o.Scale), o.Scale, o)
}
