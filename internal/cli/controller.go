package cli

import (
	goflag "flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/admissionfairsharing"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/devicequota"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/scheduler"
)

func newControllerCommand() *cobra.Command {
	o := controller.DefaultOptions()
	var kubeconfig, configuredKinds, afsWeights, deviceClasses string
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run berth's controller against a cluster",
		Long: `Run berth's controller: quota admission of Workloads, the queueing of batch/v1
Jobs (and Jobs made by CronJobs) and their webhook, queue status and metrics.
'berth up' runs it for you; use this command to run it against any cluster.

It connects with --kubeconfig, else $KUBECONFIG, else the in-cluster
configuration. Its API client is allowed --kube-api-qps requests per second
(bursts of --kube-api-burst): admissions are API writes, so a low limit caps
throughput long before the API server is busy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := podsReadyFlags(cmd.Flags(), o); err != nil {
				return err
			}
			weights, err := admissionfairsharing.ParseWeights(afsWeights)
			if err != nil {
				return err
			}
			o.AdmissionFairSharing.ResourceWeights = weights
			if o.DeviceClasses, err = devicequota.Parse(deviceClasses); err != nil {
				return err
			}
			if err := o.AdmissionFairSharing.Validate(); err != nil {
				return err
			}
			if o.NodeFailureDelay <= 0 {
				// 0 would otherwise mean the manager's default: say so rather than run with 30s.
				return fmt.Errorf("--node-failure-delay %v: must be positive (a node not Ready for a moment should not move pods)", o.NodeFailureDelay)
			}
			if _, err := o.Kinds(); err != nil {
				return err
			}
			if _, err := o.Managed(); err != nil {
				return err
			}
			if configuredKinds != "" {
				kinds, err := readConfiguredKinds(configuredKinds)
				if err != nil {
					return err
				}
				o.ConfiguredKinds = kinds
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			defaultGC()
			loading := clientcmd.NewDefaultClientConfigLoadingRules()
			loading.ExplicitPath = kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, nil).ClientConfig()
			if err != nil {
				return fmt.Errorf("loading a kubeconfig (--kubeconfig, $KUBECONFIG or in-cluster): %w", err)
			}
			if err := o.Lease.Validate(); err != nil {
				return err
			}
			ctx := ctrl.SetupSignalHandler()
			if err := awaitAPIServer(ctx, cfg, cmd.ErrOrStderr()); err != nil {
				return err
			}
			return controller.Run(ctx, cfg, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, else in-cluster)")
	f.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace for the webhook certificate Secret and the leader-election lease")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address for /metrics (0 disables)")
	f.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address for /healthz and /readyz")
	f.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "address for Go's /debug/pprof profiles (default off)")
	f.BoolVar(&o.Profiling, "profiling", false, "also serve Go's /debug/pprof/profile on the metrics address (berth bench --profile reads it there)")
	f.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader, so replicas can run for availability; a replica that lost its lease (paused past it, say) writes nothing more")
	f.DurationVar(&o.Lease.Duration, "leader-elect-lease-duration", o.Lease.Duration,
		"with --leader-elect: how long after the leader last renewed its lease another replica may take it")
	f.DurationVar(&o.Lease.RenewDeadline, "leader-elect-renew-deadline", o.Lease.RenewDeadline,
		"with --leader-elect: how long after its last renewal the leader gives up (and writes nothing more); shorter than the lease duration")
	f.DurationVar(&o.Lease.RetryPeriod, "leader-elect-retry-period", o.Lease.RetryPeriod,
		"with --leader-elect: how often replicas try to take or renew the lease")
	f.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "address the webhook server listens on (default all)")
	f.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "port the webhook server listens on")
	f.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "directory for the webhook's serving certificate (default: a temporary one)")
	f.BoolVar(&o.WebhookCertProvided, "webhook-cert-provided", o.WebhookCertProvided,
		"--webhook-cert-dir holds a serving certificate (tls.crt, tls.key) that someone else keeps fresh, cert-manager say: berth neither makes nor renews it, and leaves the caBundle of its webhook configuration and visibility APIService to them (cert-manager's CA injector)")
	f.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, "base URL the API server calls the webhook at, when not through --webhook-service")
	f.StringVar(&o.WebhookService, "webhook-service", o.WebhookService, "Service in --namespace that fronts the webhook (port 443)")
	f.StringVar(&o.ServiceAccount, "service-account", o.ServiceAccount,
		"the controller's ServiceAccount in --namespace, in a cluster: it owns the Secret, Lease and Service the controller makes there, so that deleting it (uninstalling berth) removes them")
	f.StringVar(&o.PodIP, "pod-ip", o.PodIP, "this replica's pod address, in a cluster: the leader serves the visibility API there (without it and without --webhook-url the visibility API is not registered)")
	f.BoolVar(&o.ManageJobsWithoutQueueName, "manage-jobs-without-queue-name", o.ManageJobsWithoutQueueName,
		"queue every object of every kind berth queues (Jobs, Pods, Deployments, StatefulSets, JobSets, LeaderWorkerSets), in the namespaces --managed-jobs-namespace-selector selects but kube-system and --namespace: one created without a queue label goes to the LocalQueue named \"default\" in its namespace (a namespace labelled berth.dev/manage-pods=true is so without this flag)")
	f.StringVar(&o.ManagedJobsNamespaceSelector, "managed-jobs-namespace-selector", o.ManagedJobsNamespaceSelector,
		"with --manage-jobs-without-queue-name: a label selector of the namespaces where every object is queued, e.g. 'team in (a,b)' (default every namespace)")
	f.StringSliceVar(&o.JobSetControllers, "jobset-controllers", []string{"system:serviceaccount:jobset-system:jobset-controller-manager"},
		"the user names the JobSet controller acts as: only they may make a JobSet's Jobs (a Job naming a JobSet as its controller is otherwise refused)")
	f.StringSliceVar(&o.TrainerControllers, "trainer-controllers", []string{"system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"},
		"the user names Kubeflow Trainer's controller acts as: only they may make a TrainJob's JobSet")
	f.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "requests per second to the API server")
	f.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of requests to the API server")
	f.IntVar(&o.AdmissionWriters, "admission-writers", o.AdmissionWriters, "admissions written concurrently")
	f.StringVar(&o.Origin, "origin", o.Origin,
		"this cluster's name on its worker clusters: the copies it dispatches there carry it in label "+berthv1.MultiClusterOriginLabel)
	f.DurationVar(&o.WorkerLostTimeout, "worker-lost-timeout", o.WorkerLostTimeout,
		"how long a worker cluster may be unreachable before the workloads running there are queued again")
	f.DurationVar(&o.DispatchSpreadAfter, "dispatch-spread-after", o.DispatchSpreadAfter,
		"a workload waiting for a worker cluster is copied to one that can take it (the one the last workload of its check went to, else the first of its config), and to the others too once it has waited this long without being admitted (0: to all at once)")
	f.BoolVar(&o.FairSharing, "fair-sharing", o.FairSharing,
		"order admission and reclaiming in cohorts by weighted shares of borrowed capacity")
	o.AdmissionFairSharing = admissionfairsharing.Default()
	f.DurationVar(&o.AdmissionFairSharing.HalfLife, "admission-fair-sharing-half-life", o.AdmissionFairSharing.HalfLife,
		"in a ClusterQueue with admissionScope UsageBasedAdmissionFairSharing: usage a LocalQueue held this long ago counts half as much as now")
	f.DurationVar(&o.AdmissionFairSharing.SamplingInterval, "admission-fair-sharing-sampling-interval", o.AdmissionFairSharing.SamplingInterval,
		"how often LocalQueues' usage is taken into their consumption (and written to their status)")
	f.StringVar(&afsWeights, "admission-fair-sharing-resource-weights", "",
		"weights of resources in a LocalQueue's usage, as nvidia.com/gpu=10,cpu=1 (in each resource's units: cores, bytes, devices); a resource not named weighs 1")
	f.StringVar(&deviceClasses, "device-class-mappings", "",
		"devices pods claim through Dynamic Resource Allocation count against quota: RESOURCE=CLASS[,CLASS...][;RESOURCE=...] makes each device of those DeviceClasses one of RESOURCE (as example.com/gpu=gpu.example.com); once set, a pod set whose claims cannot be counted (a ResourceClaim shared by name, all devices of a class, alternatives, an unmapped class) waits with a message saying why")
	f.StringSliceVar(&o.Integrations, "integrations", o.Integrations,
		"the kinds berth queues: batch/job (Jobs, those of CronJobs too), pod (Pods and pod groups), deployment (its pods, as Pods; needs pod), statefulset (its pods, as one pod group; needs pod), jobset.x-k8s.io/jobset (JobSets, where their CRD is installed), leaderworkerset.x-k8s.io/leaderworkerset (each group of a LeaderWorkerSet, as one pod group, where its CRD is installed; needs pod), trainer.kubeflow.org/trainjob (Kubeflow Trainer's TrainJobs, where their CRD is installed); the others' objects are left alone, whatever their labels")
	f.StringVar(&configuredKinds, "configured-kinds", "",
		"a YAML file of kinds to queue from configuration alone: each names a custom resource's group, version, kind and resource, the path of its suspend field, its pod sets (paths of a pod template and a count) and the conditions that say it ended (docs/integrations.md); each is on once its CRD is served with those paths and berth may read and update its objects")
	f.BoolVar(&o.WaitForPodsReady, "wait-for-pods-ready", o.WaitForPodsReady,
		"all-or-nothing start: evict an admitted Job, JobSet, TrainJob, StatefulSet or object of a configured kind whose pods are not all Ready within --pods-ready-timeout, give its quota back and queue it again after a backoff; each admitted one gets a PodsReady condition (one more write)")
	f.DurationVar(&o.PodsReady.Timeout, "pods-ready-timeout", o.PodsReady.Timeout,
		"with --wait-for-pods-ready: how long after its admission a workload's pods have to be all Ready")
	f.DurationVar(&o.PodsReady.BackoffBase, "pods-ready-backoff-base", o.PodsReady.BackoffBase,
		"with --wait-for-pods-ready: how long a workload waits after its first timeout before it may be admitted again; doubled for each further one")
	f.DurationVar(&o.PodsReady.BackoffMax, "pods-ready-backoff-max", o.PodsReady.BackoffMax,
		"with --wait-for-pods-ready: the longest wait after a timeout")
	f.Int32Var(&o.PodsReady.RequeueLimit, "pods-ready-requeue-limit", o.PodsReady.RequeueLimit,
		"with --wait-for-pods-ready: after this many timeouts the workload is deactivated (spec.active false) until 'berth resume'; 0 never")
	f.BoolVar(&o.PodsReady.BlockAdmission, "pods-ready-block-admission", o.PodsReady.BlockAdmission,
		"with --wait-for-pods-ready: a ClusterQueue admits nothing while a workload it admitted has not had all its pods Ready, so gangs start one after another")
	o.NodeFailureDelay = scheduler.DefaultNodeFailureDelay
	f.DurationVar(&o.NodeFailureDelay, "node-failure-delay", o.NodeFailureDelay,
		"how long a node under topology-placed pods may be not Ready before they are given room elsewhere in their domain (a deleted node: at once), or their workload is evicted and queued again when there is none")
	gf := goflag.NewFlagSet("zap", goflag.ContinueOnError)
	zapOpts.BindFlags(gf)
	f.AddGoFlagSet(gf)
	return cmd
}

// podsReadyFlags refuses a --pods-ready-* flag without --wait-for-pods-ready,
// which alone reads them (it would be silently ignored), and values that
// cannot be followed, before anything starts.
func podsReadyFlags(f *pflag.FlagSet, o controller.Options) error {
	if o.WaitForPodsReady {
		return o.PodsReady.Validate()
	}
	for _, name := range []string{"pods-ready-timeout", "pods-ready-backoff-base", "pods-ready-backoff-max",
		"pods-ready-requeue-limit", "pods-ready-block-admission"} {
		if f.Changed(name) {
			return fmt.Errorf("--%s is read only with --wait-for-pods-ready", name)
		}
	}
	return nil
}

// readConfiguredKinds reads a --configured-kinds file.
func readConfiguredKinds(path string) ([]configured.Compiled, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--configured-kinds: %w", err)
	}
	kinds, err := configured.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("--configured-kinds %s: %w", path, err)
	}
	return kinds, nil
}
