// Package controller assembles berth's controller: the scheduler, the
// controllers that feed it and write its decisions, the Job integration and
// its webhook, health checks and metrics, in one controller-runtime manager.
package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/admissionfairsharing"
	"github.com/berth-dev/berth/internal/controller/admission"
	checksctrl "github.com/berth-dev/berth/internal/controller/admissioncheck"
	devicectrl "github.com/berth-dev/berth/internal/controller/devicequota"
	"github.com/berth-dev/berth/internal/controller/fence"
	mcctrl "github.com/berth-dev/berth/internal/controller/multicluster"
	podsreadyctrl "github.com/berth-dev/berth/internal/controller/podsready"
	"github.com/berth-dev/berth/internal/controller/queues"
	runtimelimitctrl "github.com/berth-dev/berth/internal/controller/runtimelimit"
	topoctrl "github.com/berth-dev/berth/internal/controller/topology"
	visctrl "github.com/berth-dev/berth/internal/controller/visibility"
	"github.com/berth-dev/berth/internal/controller/webhook"
	"github.com/berth-dev/berth/internal/devicequota"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/integration/deployments"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/leaderworkersets"
	"github.com/berth-dev/berth/internal/integration/placement"
	"github.com/berth-dev/berth/internal/integration/podgroups"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/integration/podsgone"
	"github.com/berth-dev/berth/internal/integration/statefulsets"
	"github.com/berth-dev/berth/internal/integration/trainjobs"
	"github.com/berth-dev/berth/internal/metrics"
	"github.com/berth-dev/berth/internal/multicluster"
	"github.com/berth-dev/berth/internal/podsready"
	"github.com/berth-dev/berth/internal/scheduler"
	"github.com/berth-dev/berth/internal/version"
	"github.com/berth-dev/berth/internal/visibility"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues;cohorts;localqueues;resourceflavors;workloadpriorityclasses;workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues;localqueues;resourceflavors,verbs=patch
// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues/finalizers;localqueues/finalizers;resourceflavors/finalizers,verbs=update
// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues/status;cohorts/status;localqueues/status;resourceflavors/status;workloads/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=berth-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=serviceaccounts,verbs=get

// Options configure the controller.
type Options struct {
	// Namespace holds the webhook certificate and the leader-election lease.
	Namespace string
	// MetricsAddr serves /metrics ("0" disables it).
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz.
	HealthAddr string
	// PprofAddr serves Go's /debug/pprof ("" or "0" disables it).
	PprofAddr string
	// Profiling adds Go's /debug/pprof/profile to MetricsAddr, where
	// berth bench --profile finds it.
	Profiling   bool
	LeaderElect bool
	// Lease times the leader election; zero is DefaultLease.
	Lease Lease
	// WebhookHost and WebhookPort are where the webhook server listens.
	WebhookHost string
	WebhookPort int
	// WebhookCertDir receives the serving certificate; default: a temporary directory.
	WebhookCertDir string
	// WebhookCertProvided says WebhookCertDir holds a certificate someone
	// else keeps fresh (cert-manager), who also fills in the CA bundles of
	// the webhook configuration and the visibility APIService.
	WebhookCertProvided bool
	// WebhookURL, when set, is the base URL the API server calls the webhook
	// at (https://127.0.0.1:port for a local control plane). Otherwise it is
	// called through WebhookService on port 443.
	WebhookURL     string
	WebhookService string
	// ServiceAccount, when set, is the controller's own in Namespace (in a
	// cluster): it owns every object the controller makes there (the
	// webhook certificate, the lease, the visibility Service), so that
	// uninstalling berth, which deletes it, removes them too.
	ServiceAccount string
	// PodIP is this replica's address in a cluster: the leader serves the
	// visibility API there. With neither it nor WebhookURL, the visibility
	// API is not registered.
	PodIP string
	// ManageJobsWithoutQueueName queues every object of every kind berth
	// queues, in the namespaces ManagedJobsNamespaceSelector selects (a
	// label selector; all when empty) but kube-system and berth's own: one
	// created without a queue label goes to the LocalQueue named "default"
	// in its namespace. (Namespaces labelled berth.dev/manage-pods=true are
	// so without it.)
	ManageJobsWithoutQueueName   bool
	ManagedJobsNamespaceSelector string
	// JobSetControllers are the user names the JobSet controller acts as:
	// only they make a JobSet's Jobs (integration.Owners).
	JobSetControllers []string
	// TrainerControllers are the user names Kubeflow Trainer's controller
	// acts as: only they make a TrainJob's JobSet.
	TrainerControllers []string
	// QPS and Burst of the controller's API client.
	QPS   float32
	Burst int
	// AdmissionWriters is how many admissions are written at once.
	AdmissionWriters int
	// FairSharing orders admission and reclaiming in cohorts by weighted
	// shares of borrowed capacity (see docs/preemption.md).
	FairSharing bool
	// Origin names this cluster, as a manager, on its worker clusters: the
	// copies it makes there carry it, and it collects only those.
	Origin string
	// WorkerLostTimeout is how long a worker cluster may be unreachable
	// before the workloads running there are queued again.
	WorkerLostTimeout time.Duration
	// DispatchSpreadAfter is how long a workload's first copy is given to
	// be admitted on its worker before the other workers get one too.
	DispatchSpreadAfter time.Duration
	// Integrations are the kinds berth queues (integration.All by default).
	Integrations []string
	// ConfiguredKinds are kinds queued from configuration alone
	// (--configured-kinds), each on once the API server serves it.
	ConfiguredKinds []configured.Compiled
	// WaitForPodsReady evicts an admitted workload whose pods are not all
	// Ready within PodsReady.Timeout, and queues it again (package podsready).
	WaitForPodsReady bool
	PodsReady        podsready.Options
	// NodeFailureDelay is how long a node under topology-placed pods may be
	// not Ready before they are given room elsewhere
	// (scheduler.DefaultNodeFailureDelay when 0).
	NodeFailureDelay time.Duration
	// AdmissionFairSharing measures LocalQueues' usage for the
	// ClusterQueues that order by it (admissionfairsharing.Default when
	// zero).
	AdmissionFairSharing admissionfairsharing.Config
	// DeviceClasses maps DeviceClasses to the quota resources the devices
	// pods claim through them count as (package devicequota).
	DeviceClasses devicequota.Mappings
}

// Kinds reads which kinds to queue (nil Integrations: all), refusing
// flags that need one switched off.
func (o Options) Kinds() (integration.Set, error) {
	names := o.Integrations
	if names == nil {
		names = integration.All
	}
	kinds, err := integration.ParseSet(names)
	if err != nil {
		return nil, err
	}
	if !kinds.On(integration.BatchJob) && o.WaitForPodsReady {
		return nil, fmt.Errorf("--wait-for-pods-ready times the pods of Jobs: --integrations must include %s", integration.BatchJob)
	}
	return kinds, nil
}

// Managed is the selector of the namespaces where every object is queued
// (ManagedJobsNamespaceSelector), refused with the flag's name when it does
// not parse, or when given without ManageJobsWithoutQueueName, which alone
// reads it.
func (o Options) Managed() (*metav1.LabelSelector, error) {
	if o.ManagedJobsNamespaceSelector == "" {
		return nil, nil
	}
	if !o.ManageJobsWithoutQueueName {
		return nil, errors.New("--managed-jobs-namespace-selector is read only with --manage-jobs-without-queue-name")
	}
	sel, err := metav1.ParseToLabelSelector(o.ManagedJobsNamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("--managed-jobs-namespace-selector %q: %w (want a label selector, e.g. team in (a,b) or berth.dev/queued=true)",
			o.ManagedJobsNamespaceSelector, err)
	}
	return sel, nil
}

// jobControllers are the user names kube-controller-manager's Job
// controller acts as: its own ServiceAccount's, or the manager's own when it
// runs without per-controller credentials.
var jobControllers = []string{"system:serviceaccount:kube-system:job-controller", "system:kube-controller-manager"}

// owners vouch for the owner references of new Pods and Jobs: a Job's, a
// JobSet's (integration.Owners).
func (o Options) owners(mgr ctrl.Manager) *integration.Owners {
	owners := &integration.Owners{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Kinds: map[string]integration.Owner{
		"Job": {Controllers: jobControllers, New: func() client.Object { return &batchv1.Job{} },
			Queued: func(obj client.Object) bool {
				// A JobSet's Job was vouched for when it was made.
				job := obj.(*batchv1.Job)
				return jobs.QueueName(job, false) != "" || jobs.MadeByJobSet(job)
			}},
		"JobSet": {Controllers: o.JobSetControllers, New: func() client.Object { return &jobsetv1.JobSet{} },
			Queued: func(obj client.Object) bool {
				// A TrainJob's JobSet was vouched for when it was made.
				js := obj.(*jobsetv1.JobSet)
				return jobsets.QueueName(js) != "" || jobsets.QueuingOwner(js) != nil
			}},
		"TrainJob": {Controllers: o.TrainerControllers, New: func() client.Object { return &trainerv1.TrainJob{} },
			Queued: func(obj client.Object) bool { return trainjobs.QueueName(obj.(*trainerv1.TrainJob)) != "" }},
	}}
	// Configured kinds that own others (a RayJob its RayCluster), by the
	// controllers they name.
	for i := range o.ConfiguredKinds {
		k := configured.Kind{C: &o.ConfiguredKinds[i]}
		if len(k.C.Controllers) > 0 {
			owners.Kinds[k.C.Kind] = integration.Owner{Controllers: k.C.Controllers, New: k.New,
				Queued: func(obj client.Object) bool { return k.QueueName(obj) != "" }}
		}
	}
	return owners
}

// crdKinds are the integrations whose kind is a CRD: that kind first, then
// the kinds its objects run as, whose CRDs must be served too (a TrainJob
// runs as a JobSet, which its reconciler watches).
var crdKinds = map[string][]schema.GroupVersionKind{integration.JobSet: {jobsets.GVK},
	integration.LeaderWorkerSet: {leaderworkersets.GVK}, integration.TrainJob: {trainjobs.GVK, jobsets.GVK}}

// Unserved says why an integration whose kind is a CRD cannot be on where
// mapper maps kinds: the first of its kinds (crdKinds) not served, or "".
// An integration whose kind is built in is always served.
func Unserved(mapper meta.RESTMapper, integration string) (string, error) {
	kinds := crdKinds[integration]
	for i, gvk := range kinds {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case meta.IsNoMatchError(err) && i == 0:
			return fmt.Sprintf("the %s CRD (%s) is not installed", gvk.Kind, gvk.GroupVersion()), nil
		case meta.IsNoMatchError(err):
			return fmt.Sprintf("the %s CRD (%s) is not installed, and %ss run as %ss", gvk.Kind, gvk.GroupVersion(), kinds[0].Kind, gvk.Kind), nil
		case err != nil:
			return "", fmt.Errorf("looking up %s: %w", gvk.Kind, err)
		}
	}
	return "", nil
}

// installed switches off the integrations on in kinds whose CRDs the API
// server does not serve, saying why in inactive.
func installed(mapper meta.RESTMapper, kinds integration.Set) (integration.Set, map[string]string, error) {
	inactive := map[string]string{}
	for name := range crdKinds {
		if !kinds.On(name) {
			continue
		}
		why, err := Unserved(mapper, name)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			kinds = kinds.Without(name)
			inactive[name] = why
		}
	}
	return kinds, inactive, nil
}

// crdPoll is how often the controller looks for the CRD of an integration
// that waits for one.
const crdPoll = 5 * time.Second

// turnOnWhenServed waits until the API server serves every one of kinds,
// then runs on once; it returns when ctx ends.
func turnOnWhenServed(ctx context.Context, disc discovery.DiscoveryInterface, kinds []schema.GroupVersionKind, every time.Duration,
	on func(context.Context) error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	served := func(gvk schema.GroupVersionKind) bool {
		list, err := disc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		return err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == gvk.Kind })
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if !slices.ContainsFunc(kinds, func(gvk schema.GroupVersionKind) bool { return !served(gvk) }) {
			return on(ctx)
		}
		// not yet (or the API server is away a moment)
	}
}

// DefaultOptions are the defaults of `berth controller`.
func DefaultOptions() Options {
	return Options{
		Namespace: "berth-system", MetricsAddr: ":8080", HealthAddr: ":8081", LeaderElect: true, Lease: DefaultLease(),
		WebhookPort: 9443, WebhookService: "berth-webhook",
		// Admission throughput is bounded by the API server's write rate, not
		// by the client: a low client-side limit (Kueue's is 50/s) would be
		// the bottleneck.
		QPS: 500, Burst: 1000, AdmissionWriters: 16,
		Origin: "berth", WorkerLostTimeout: multicluster.DefaultLostTimeout, DispatchSpreadAfter: multicluster.DefaultSpreadAfter,
		PodsReady: podsready.DefaultOptions(), Integrations: integration.All,
	}
}

// Scheme has the types the controller reads and writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = berthv1.AddToScheme(s)
	_ = apiregistrationv1.AddToScheme(s)
	_ = jobsetv1.AddToScheme(s)
	_ = lwsv1.AddToScheme(s)
	_ = trainerv1.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	return s
}

// outlineWorkloads is the Workload cache's transform: managed fields
// stripped, and finished workloads outlined (workload.Outline).
func outlineWorkloads(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if wl, ok := obj.(*berthv1.Workload); ok {
		workload.Outline(wl)
	}
	return obj, err
}

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	if o.Lease == (Lease{}) {
		o.Lease = DefaultLease()
	}
	if err := o.Lease.Validate(); err != nil {
		return err
	}
	if err := o.checkDispatch(); err != nil {
		return err
	}
	kinds, err := o.Kinds()
	if err != nil {
		return err
	}
	v := version.Get()
	ctrl.Log.Info("berth controller starting", "version", v.Version, "commit", v.Commit, "date", v.Date, "goVersion", v.GoVersion)
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	scheme := Scheme()
	if o.WebhookCertProvided && o.WebhookCertDir == "" {
		return errors.New("--webhook-cert-provided needs --webhook-cert-dir: where the certificate is")
	}
	if o.WebhookCertDir == "" {
		dir, err := os.MkdirTemp("", "berth-webhook-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.WebhookCertDir = dir
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to the API server: %w", err)
	}
	if len(o.ConfiguredKinds) > 0 {
		// A path its CRD lacks stops the controller now, with the path
		// named, before it writes anything; a kind not served yet is
		// waited for.
		d, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return err
		}
		for i := range o.ConfiguredKinds {
			if err := configuredReady(ctx, direct, d, &o.ConfiguredKinds[i]); errors.Is(err, errConfiguration) {
				return err
			}
		}
	}
	owner, err := serviceAccountOwner(ctx, direct, o.Namespace, o.ServiceAccount)
	if err != nil {
		return err
	}
	kinds, inactive, err := installed(direct.RESTMapper(), kinds)
	if err != nil {
		return err
	}
	managed, err := o.Managed()
	if err != nil {
		return err
	}
	hookOpts := webhook.Options{ //nolint:gosec // G101: SecretName names where the certificate is kept; it is no credential
		Namespace: o.Namespace, SecretName: "berth-webhook-tls", ConfigName: "berth", CertDir: o.WebhookCertDir,
		CertProvided: o.WebhookCertProvided, URL: o.WebhookURL, Service: types.NamespacedName{Namespace: o.Namespace, Name: o.WebhookService},
		ServicePort: 443, ManageAll: o.ManageJobsWithoutQueueName, Managed: managed, Integrations: kinds,
		AlsoServes: []types.NamespacedName{{Namespace: o.Namespace, Name: visctrl.ServiceName}}, Owner: owner,
	}
	caBundle, err := webhook.Prepare(ctx, direct, hookOpts, time.Now())
	if err != nil {
		return err
	}
	// What the webhook configuration holds now: an integration turned on
	// later (its CRD installed) joins it, and Renew keeps it.
	var currentHooks atomic.Pointer[webhook.Options]
	currentHooks.Store(&hookOpts)
	var currentCA atomic.Pointer[[]byte]
	currentCA.Store(&caBundle)
	proxy, visErr := frontProxy(ctx, direct)
	if visErr == nil && o.WebhookURL == "" && o.PodIP == "" {
		visErr = errors.New("neither --webhook-url nor --pod-ip is set, so the API server could not reach it")
	}
	if visErr != nil {
		ctrl.Log.Error(visErr, "the visibility API (visibility.berth.dev) is off")
	}

	// With leader election, a replica that lost its lease writes nothing
	// more (package fence): writes go through the fence from here on; the
	// start-up writes above and the lease's own do not.
	var lock resourcelock.Interface
	var wrap func(http.RoundTripper) http.RoundTripper
	if o.LeaderElect {
		f := fence.New(clock.RealClock{}, o.Lease.RenewDeadline)
		if lock, err = leaseLock(cfg, o.Namespace, o.Lease.RenewDeadline); err != nil {
			return err
		}
		if err := ownedLease(ctx, direct, o.Namespace, owner); err != nil {
			return err
		}
		lock, wrap = f.Lock(lock), f.Wrap
		cfg.Wrap(wrap)
	}

	// The Pods berth queues: its webhook labels every one.
	podsQueued, err := labels.Parse(berthv1.QueueNameLabel)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                              scheme,
		Metrics:                             metricsserver.Options{BindAddress: o.MetricsAddr, ExtraHandlers: profiling(o.Profiling)},
		HealthProbeBindAddress:              o.HealthAddr,
		PprofBindAddress:                    o.PprofAddr,
		LeaderElection:                      o.LeaderElect,
		LeaderElectionID:                    leaseName,
		LeaderElectionNamespace:             o.Namespace,
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       ptr.To(o.Lease.Duration),
		RenewDeadline:                       ptr.To(o.Lease.RenewDeadline),
		RetryPeriod:                         ptr.To(o.Lease.RetryPeriod),
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host: o.WebhookHost, Port: o.WebhookPort, CertDir: filepath.Clean(o.WebhookCertDir),
			// The visibility API checks that its caller is the API server's
			// front proxy; webhook calls bring no certificate.
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.ClientAuth = tls.RequestClientCert }}}),
		// Managed fields are most of a small object's size and berth never
		// reads them; of finished workloads it keeps only an outline.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&berthv1.Workload{}: {Transform: outlineWorkloads},
				&corev1.Pod{}:       {Label: podsQueued},
				// Only berth's own Secrets: the worker clusters' kubeconfigs.
				&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}}}},
	})
	if err != nil {
		return err
	}
	metrics.Register(ctrlmetrics.Registry)
	if !o.WebhookCertProvided {
		// Every replica, leader or not: each serves the webhooks.
		renew := func(ctx context.Context) error {
			webhook.Renew(ctx, direct, func() webhook.Options { return *currentHooks.Load() }, time.Hour, clock.RealClock{}, func(ctx context.Context, ca []byte) error {
				currentCA.Store(&ca)
				if visErr != nil {
					return nil
				}
				return visctrl.TrustCA(ctx, direct, ca)
			})
			return nil
		}
		if err := mgr.Add(everyReplica(renew)); err != nil {
			return err
		}
	}

	sched := scheduler.New(clock.RealClock{})
	sched.SetFairSharing(o.FairSharing)
	if o.AdmissionFairSharing.HalfLife != 0 || o.AdmissionFairSharing.SamplingInterval != 0 || len(o.AdmissionFairSharing.ResourceWeights) > 0 {
		if err := o.AdmissionFairSharing.Validate(); err != nil {
			return err
		}
		sched.SetAdmissionFairSharing(o.AdmissionFairSharing)
	}
	sched.SetBlockUntilPodsReady(o.WaitForPodsReady && o.PodsReady.BlockAdmission)
	switch {
	case o.NodeFailureDelay < 0:
		return fmt.Errorf("--node-failure-delay %v: must be positive", o.NodeFailureDelay)
	case o.NodeFailureDelay > 0:
		sched.SetNodeFailureDelay(o.NodeFailureDelay)
	}
	var q *queues.Controller
	checksSynced := func() bool { return false }
	adm, err := admission.Setup(ctx, mgr, sched, admission.Options{
		Writers:       o.AdmissionWriters,
		Synced:        func() bool { return q != nil && q.HasSynced() && checksSynced() },
		DeviceClasses: o.DeviceClasses,
	})
	if err != nil {
		return err
	}
	if checksSynced, err = checksctrl.Setup(ctx, mgr, sched, adm.EvictWithBackoff); err != nil {
		return err
	}
	if q, err = queues.Setup(ctx, mgr, sched, adm.Evict); err != nil {
		return err
	}
	if visErr == nil {
		synced := func() bool { return adm.HasSynced() && q.HasSynced() && checksSynced() }
		if err := visctrl.Setup(mgr, sched, synced, proxy, visctrl.Options{Namespace: o.Namespace, URL: o.WebhookURL,
			PodIP: o.PodIP, Port: o.WebhookPort, CABundle: caBundle, NamespaceOwner: owner,
			CurrentCA: func() []byte { return *currentCA.Load() }}); err != nil {
			return err
		}
	}
	// Whatever kind made a Workload, its quota waits for its pods.
	if len(o.DeviceClasses) > 0 {
		// Templates counted stay as counted while their workloads may use them.
		if err := devicectrl.Setup(ctx, mgr); err != nil {
			return err
		}
	}
	if err := podsgone.Setup(mgr); err != nil {
		return err
	}
	on, off := kinds.Split()
	ctrl.Log.Info("integrations", "on", on, "off", off)
	for name, why := range inactive {
		ctrl.Log.Info("integration off until the CRDs it needs are installed: "+why, "integration", name)
	}
	owners := o.owners(mgr)
	var who authenticationv1.SelfSubjectReview
	if err := direct.Create(ctx, &who); err != nil {
		return fmt.Errorf("asking the API server who berth's controller is: %w", err)
	}
	self := who.Status.UserInfo.Username
	if kinds.On(integration.BatchJob) {
		if err := jobs.Setup(mgr, o.WaitForPodsReady); err != nil {
			return err
		}
		dispatched := mcctrl.Dispatched(mgr.GetClient())
		mgr.GetWebhookServer().Register(jobs.WebhookPath,
			&crwebhook.Admission{Handler: integration.NewHolder(jobs.Kind{Dispatched: dispatched}).Vouching(owners).Trusting(self)})
		mgr.GetWebhookServer().Register(jobs.DefaultWebhookPath,
			&crwebhook.Admission{Handler: integration.NewHolder(jobs.Kind{Default: true, Dispatched: dispatched}).Vouching(owners).Trusting(self)})
	}
	if o.WaitForPodsReady {
		if err := podsreadyctrl.Setup(mgr, o.PodsReady, clock.RealClock{}); err != nil {
			return err
		}
	}
	if err := runtimelimitctrl.Setup(mgr, clock.RealClock{}); err != nil {
		return err
	}
	if kinds.On(integration.Pod) {
		if err := pods.Setup(mgr); err != nil {
			return err
		}
		if err := podgroups.Setup(ctx, mgr, kinds.On(integration.StatefulSet), o.WaitForPodsReady); err != nil {
			return err
		}
		mgr.GetWebhookServer().Register(pods.WebhookPath, &crwebhook.Admission{Handler: integration.NewHolder(pods.Kind{}).Vouching(owners)})
		mgr.GetWebhookServer().Register(pods.DefaultWebhookPath,
			&crwebhook.Admission{Handler: integration.NewHolder(pods.Kind{Default: true}).Vouching(owners)})
	}
	if kinds.On(integration.Deployment) {
		mgr.GetWebhookServer().Register(deployments.WebhookPath, &crwebhook.Admission{Handler: deployments.Webhook})
		mgr.GetWebhookServer().Register(deployments.DefaultWebhookPath, &crwebhook.Admission{Handler: deployments.DefaultWebhook})
	}
	if kinds.On(integration.StatefulSet) {
		mgr.GetWebhookServer().Register(statefulsets.WebhookPath, &crwebhook.Admission{Handler: statefulsets.Webhook})
		mgr.GetWebhookServer().Register(statefulsets.DefaultWebhookPath, &crwebhook.Admission{Handler: statefulsets.DefaultWebhook})
	}
	// The integrations whose kind is a CRD: set up now when it is served,
	// else once it is.
	crdSetups := map[string]func() error{
		integration.JobSet: func() error {
			if err := jobsets.Setup(mgr, o.WaitForPodsReady); err != nil {
				return err
			}
			dispatched := mcctrl.Dispatched(mgr.GetClient())
			mgr.GetWebhookServer().Register(jobsets.WebhookPath,
				&crwebhook.Admission{Handler: integration.NewHolder(jobsets.Kind{Dispatched: dispatched}).Vouching(owners)})
			mgr.GetWebhookServer().Register(jobsets.DefaultWebhookPath,
				&crwebhook.Admission{Handler: integration.NewHolder(jobsets.Kind{Dispatched: dispatched, Default: true}).Vouching(owners)})
			return nil
		},
		integration.TrainJob: func() error {
			if err := trainjobs.Setup(mgr, o.WaitForPodsReady); err != nil {
				return err
			}
			mgr.GetWebhookServer().Register(trainjobs.WebhookPath, &crwebhook.Admission{Handler: integration.NewHolder(trainjobs.Kind{})})
			mgr.GetWebhookServer().Register(trainjobs.DefaultWebhookPath, &crwebhook.Admission{Handler: integration.NewHolder(trainjobs.Kind{Default: true})})
			return nil
		},
		integration.LeaderWorkerSet: func() error {
			// Its pods are queued as pod groups: only its webhooks are its own.
			mgr.GetWebhookServer().Register(leaderworkersets.WebhookPath, &crwebhook.Admission{Handler: leaderworkersets.Webhook{}})
			mgr.GetWebhookServer().Register(leaderworkersets.DefaultWebhookPath, &crwebhook.Admission{Handler: leaderworkersets.Webhook{Default: true}})
			return nil
		},
	}
	var disc discovery.DiscoveryInterface
	var turningOn sync.Mutex // one at a time: each adds itself to currentHooks
	// hooksWith adds an integration to the webhook configuration.
	hooksWith := func(ctx context.Context, add func(*webhook.Options)) error {
		opts := *currentHooks.Load()
		opts.Integrations = maps.Clone(opts.Integrations)
		opts.Configured = slices.Clone(opts.Configured)
		add(&opts)
		if _, err := webhook.Prepare(ctx, direct, opts, time.Now()); err != nil {
			return err
		}
		currentHooks.Store(&opts)
		return nil
	}
	for _, name := range integration.All {
		setUp, isCRD := crdSetups[name]
		if !isCRD {
			continue
		}
		if kinds.On(name) {
			if err := setUp(); err != nil {
				return err
			}
			continue
		}
		if _, waiting := inactive[name]; !waiting {
			continue
		}
		if disc == nil {
			if disc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
				return err
			}
		}
		// Every replica: each serves the webhook; the reconciler added
		// runs on the leader only, as the others do.
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			return turnOnWhenServed(ctx, disc, crdKinds[name], crdPoll, func(ctx context.Context) error {
				turningOn.Lock()
				defer turningOn.Unlock()
				if err := setUp(); err != nil {
					return err
				}
				if err := hooksWith(ctx, func(o *webhook.Options) { o.Integrations[name] = true }); err != nil {
					return err
				}
				ctrl.Log.Info("integration on: its CRD is installed now", "integration", name)
				return nil
			})
		})); err != nil {
			return err
		}
	}
	if len(o.ConfiguredKinds) > 0 && disc == nil {
		if disc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
			return err
		}
	}
	for i := range o.ConfiguredKinds {
		k := &o.ConfiguredKinds[i]
		served := false // its reconciler and handlers, which are set up once only
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			return waitForConfigured(ctx, direct, disc, k, func(ctx context.Context) error {
				turningOn.Lock()
				defer turningOn.Unlock()
				if !served {
					if err := turnOnConfigured(ctx, mgr, cfg, direct, self, o.Namespace, o.WaitForPodsReady, k, owners); err != nil {
						return err
					}
					served = true
				}
				return hooksWith(ctx, func(o *webhook.Options) { o.Configured = append(o.Configured, k) })
			})
		})); err != nil {
			return err
		}
	}
	if err := placement.Setup(ctx, mgr, len(o.ConfiguredKinds) > 0); err != nil {
		return err
	}
	if err := topoctrl.Setup(ctx, mgr, sched, func(key, reason, message string) { adm.Evict([]string{key}, reason, message) }); err != nil {
		return err
	}
	if err := mcctrl.Setup(mgr, mcctrl.Options{Namespace: o.Namespace, Origin: o.Origin, LostTimeout: o.WorkerLostTimeout,
		SpreadAfter: o.DispatchSpreadAfter, Wrap: wrap}); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(placement.WebhookPath, &crwebhook.Admission{Handler: placement.NewGater(scheme)})

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("informers", func(*http.Request) error {
		if !adm.HasSynced() || !q.HasSynced() || !checksSynced() {
			return errors.New("informers have not delivered their initial lists yet")
		}
		return nil
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// frontProxy reads who may call the visibility API: the API server's front
// proxy, as the API server publishes it.
func frontProxy(ctx context.Context, c client.Client) (visibility.FrontProxy, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: visibility.AuthenticationConfigMap}, &cm); err != nil {
		return visibility.FrontProxy{}, fmt.Errorf("reading ConfigMap kube-system/%s: %w", visibility.AuthenticationConfigMap, err)
	}
	return visibility.ParseFrontProxy(cm.Data)
}

// Lease times leader election: another replica may take the lease Duration
// after it last saw it renewed; the leader tries to renew every RetryPeriod,
// and gives it up, its fence stopping its writes, RenewDeadline after its
// last renewal.
type Lease struct {
	Duration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultLease is kube-controller-manager's timing.
func DefaultLease() Lease {
	return Lease{Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// checkDispatch refuses multicluster timings that mean nothing.
func (o Options) checkDispatch() error {
	switch {
	case o.WorkerLostTimeout < 0:
		return fmt.Errorf("--worker-lost-timeout %s: must not be negative", o.WorkerLostTimeout)
	case o.DispatchSpreadAfter < 0:
		return fmt.Errorf("--dispatch-spread-after %s: must not be negative (0s copies to every worker at once)", o.DispatchSpreadAfter)
	}
	return nil
}

// Validate refuses timings under which two replicas could lead at once, or
// a leader could not renew in time.
func (l Lease) Validate() error {
	switch {
	case l.RetryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period %s: must be positive", l.RetryPeriod)
	case l.RenewDeadline <= l.RetryPeriod:
		return fmt.Errorf("--leader-elect-renew-deadline %s: must be longer than --leader-elect-retry-period %s", l.RenewDeadline, l.RetryPeriod)
	case l.Duration <= l.RenewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration %s: must be longer than --leader-elect-renew-deadline %s, or a replica that lost the lease could still write while another leads",
			l.Duration, l.RenewDeadline)
	}
	return nil
}

// leaseLock is the leader-election lock, the Lease berth-controller in
// namespace, written by its own clients: the fence does not guard them.
func leaseLock(cfg *rest.Config, namespace string, renewDeadline time.Duration) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// One hung request must not cost the lease.
	cfg.Timeout = renewDeadline / 2
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, leaseName, core, coord,
		resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())})
}

// serviceAccountOwner is an owner reference to ServiceAccount name in
// namespace; nil when name is empty.
func serviceAccountOwner(ctx context.Context, c client.Client, namespace, name string) (*metav1.OwnerReference, error) {
	if name == "" {
		return nil, nil
	}
	var sa corev1.ServiceAccount
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &sa); err != nil {
		return nil, fmt.Errorf("--service-account: reading ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return &metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: sa.Name, UID: sa.UID}, nil
}

// ownedLease makes the leader-election Lease, empty, owned by owner, unless
// it exists: leader election then takes it as it finds it, keeping its
// owner. Without an owner it leaves the Lease to leader election.
func ownedLease(ctx context.Context, c client.Client, namespace string, owner *metav1.OwnerReference) error {
	if owner == nil {
		return nil
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: leaseName,
		OwnerReferences: []metav1.OwnerReference{*owner}}}
	if err := c.Create(ctx, lease); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Lease %s/%s: %w", namespace, leaseName, err)
	}
	return nil
}

// leaseName is the leader-election Lease's.
const leaseName = "berth-controller"

// profiling is the metrics server's extra handlers when asked to profile.
func profiling(on bool) map[string]http.Handler {
	if !on {
		return nil
	}
	return map[string]http.Handler{"/debug/pprof/profile": http.HandlerFunc(pprof.Profile)}
}

// everyReplica is a runnable that runs on every replica, not only the
// leader.
type everyReplica func(context.Context) error

func (r everyReplica) Start(ctx context.Context) error { return r(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }
