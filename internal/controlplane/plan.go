package controlplane

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"
)

// Ports are the loopback ports of one instance.
type Ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
}

// Component is one process the supervisor runs: the berth binary re-executed
// with Args. Components start in the order given, those sharing a Stage start
// together, and they stop in reverse order.
type Component struct {
	Name string
	// Program runs the component; "" is the berth binary (Options.Binary),
	// re-executed with Args. A real node's containerd is the
	// distribution's.
	Program string
	// Stage groups components that may start in parallel; stages start in
	// ascending order and each waits for the previous one to be healthy.
	Stage int
	Args  []string
	// Port is the component's main port, shown by status.
	Port int
	// HealthURL answers 200 once the component is ready (and while it is healthy).
	HealthURL string
	// StartTimeout bounds the wait for HealthURL after the process starts.
	StartTimeout time.Duration
	// StopGrace is how long a SIGTERM is given before SIGKILL.
	StopGrace time.Duration
	// AfterReady, when set, runs once the component is first healthy,
	// before the next stage starts (a runtime's images loaded, say).
	AfterReady func(ctx context.Context) error `json:"-"`
	// BeforeStop, when set, runs before the component is stopped, while it
	// still answers (a runtime's containers removed through it, say); what
	// it reports is printed, not fatal.
	BeforeStop func(ctx context.Context) error `json:"-"`
}

// Plan returns the core control plane for a layout and a set of ports: etcd,
// then kube-apiserver, then kube-controller-manager and kube-scheduler together.
// It is pure: the same input always gives the same processes.
func Plan(l Layout, p Ports, o PlanOptions) []Component {
	loop := "127.0.0.1"
	https := func(port int, path string) string { return fmt.Sprintf("https://%s:%d%s", loop, port, path) }
	etcdClient := fmt.Sprintf("https://%s:%d", loop, p.EtcdClient)

	// Every Kubernetes object is in etcd: it answers only over TLS, and
	// only to clients whose certificate its own CA signed (kube-apiserver's,
	// the health check's), on the client port and the peer port alike.
	etcdArgs := []string{"component", "etcd",
		"--name=berth",
		"--data-dir=" + l.EtcdDir(),
		"--listen-client-url=" + etcdClient,
		"--cert-file=" + l.PKI("etcd-server.crt"),
		"--key-file=" + l.PKI("etcd-server.key"),
		"--trusted-ca-file=" + l.PKI("etcd-ca.crt"),
		"--listen-peer-url=" + fmt.Sprintf("https://%s:%d", loop, p.EtcdPeer),
		"--peer-cert-file=" + l.PKI("etcd-peer.crt"),
		"--peer-key-file=" + l.PKI("etcd-peer.key"),
		"--peer-trusted-ca-file=" + l.PKI("etcd-ca.crt"),
	}
	if o.EtcdUnsafeNoFsync {
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync")
	}

	apiserverArgs := []string{"component", "kube-apiserver",
		"--etcd-servers=" + etcdClient,
		"--etcd-cafile=" + l.PKI("etcd-ca.crt"),
		"--etcd-certfile=" + l.PKI("apiserver-etcd-client.crt"),
		"--etcd-keyfile=" + l.PKI("apiserver-etcd-client.key"),
		"--bind-address=" + loop,
		"--advertise-address=" + cmp.Or(o.AdvertiseAddress, loop),
		"--secure-port=" + strconv.Itoa(p.APIServer),
		"--tls-cert-file=" + l.PKI("apiserver.crt"),
		"--tls-private-key-file=" + l.PKI("apiserver.key"),
		"--client-ca-file=" + l.PKI("ca.crt"),
		// The API server forwards requests for aggregated APIs (berth's
		// visibility API) with this certificate, naming the user in headers.
		"--proxy-client-cert-file=" + l.PKI("front-proxy-client.crt"),
		"--proxy-client-key-file=" + l.PKI("front-proxy-client.key"),
		"--requestheader-client-ca-file=" + l.PKI("front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + l.PKI("sa.pub"),
		"--service-account-signing-key-file=" + l.PKI("sa.key"),
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--cert-dir=" + l.PKIDir(),
		// Batch control planes write much more than they read; the defaults
		// (400/200) throttle a busy controller long before the CPU is used up.
		"--max-requests-inflight=" + strconv.Itoa(o.MaxRequestsInflight),
		"--max-mutating-requests-inflight=" + strconv.Itoa(o.MaxMutatingRequestsInflight),
		// A namespace's objects are deleted by one DeleteCollection per
		// resource, one object at a time by default: 9,000 pods took 55 s,
		// and past the 60 s request timeout the namespace controller backs
		// off before it tries again. 8 took 40 s (docs/benchmarks.md).
		"--delete-collection-workers=8",
		// A real node (berth up --real-node) is reached at its address,
		// with a certificate its kubelet checks against the CA.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-client-certificate=" + l.PKI("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + l.PKI("apiserver-kubelet-client.key"),
		"--profiling=false",
	}
	if o.AuditWrites {
		apiserverArgs = append(apiserverArgs,
			"--audit-policy-file="+l.AuditPolicy(),
			"--audit-log-path="+l.WritesLog(),
			"--audit-log-format=json",
			// Batched, so that a write does not wait for its line, and
			// flushed each second, so a reader soon sees every write.
			"--audit-log-mode=batch",
			"--audit-log-batch-max-wait=1s",
		)
	}

	common := func(component string, port int) []string {
		kc := l.ComponentKubeconfig(component)
		return []string{
			"--kubeconfig=" + kc,
			"--authentication-kubeconfig=" + kc,
			"--authorization-kubeconfig=" + kc,
			"--bind-address=" + loop,
			"--secure-port=" + strconv.Itoa(port),
			"--tls-cert-file=" + l.PKI("serving.crt"),
			"--tls-private-key-file=" + l.PKI("serving.key"),
			// One instance per data directory is guaranteed by the lock, so
			// leader election would only add a lease write every two seconds.
			"--leader-elect=false",
			"--profiling=false",
			// The defaults (kube-scheduler 50/s, controller-manager 20/s)
			// make binding pods and creating Jobs' pods the slowest step
			// of a batch run; the API server takes far more.
			"--kube-api-qps=500",
			"--kube-api-burst=1000",
		}
	}
	kcmArgs := append([]string{"component", "kube-controller-manager"}, common("kube-controller-manager", p.ControllerManager)...)
	kcmArgs = append(kcmArgs,
		"--service-account-private-key-file="+l.PKI("sa.key"),
		"--root-ca-file="+l.PKI("ca.crt"),
		"--use-service-account-credentials=true",
		// Otherwise it creates a directory under /usr/libexec.
		"--flex-volume-plugin-dir="+l.FlexVolumeDir(),
		// The TTL controller tunes how long kubelets cache Secrets by
		// annotating every node, again each time the node count crosses a
		// step; there are no real kubelets here, and with thousands of
		// simulated nodes those writes are most of the API server's work.
		"--controllers="+controllers(o),
	)
	schedArgs := append([]string{"component", "kube-scheduler"}, common("kube-scheduler", p.Scheduler)...)

	etcdArgs = append(etcdArgs, o.Args["etcd"]...)
	apiserverArgs = append(apiserverArgs, o.Args["kube-apiserver"]...)
	kcmArgs = append(kcmArgs, o.Args["kube-controller-manager"]...)
	schedArgs = append(schedArgs, o.Args["kube-scheduler"]...)

	comps := []Component{
		{Name: "etcd", Stage: 0, Args: etcdArgs, Port: p.EtcdClient, HealthURL: etcdClient + "/health",
			StartTimeout: 30 * time.Second, StopGrace: 10 * time.Second},
		{Name: "kube-apiserver", Stage: 1, Args: apiserverArgs, Port: p.APIServer, HealthURL: https(p.APIServer, "/readyz"),
			StartTimeout: 90 * time.Second, StopGrace: 20 * time.Second},
		{Name: "kube-controller-manager", Stage: 2, Args: kcmArgs, Port: p.ControllerManager,
			HealthURL: https(p.ControllerManager, "/healthz"), StartTimeout: 60 * time.Second, StopGrace: 10 * time.Second},
	}
	if o.Virtual {
		return comps // the host schedules its Pods
	}
	return append(comps, Component{Name: "kube-scheduler", Stage: 2, Args: schedArgs, Port: p.Scheduler,
		HealthURL: https(p.Scheduler, "/healthz"), StartTimeout: 60 * time.Second, StopGrace: 10 * time.Second})
}

func controllers(o PlanOptions) string {
	// No CSR signing: there are no kubelets to ask for certificates, and
	// its four signers each hold an inotify instance, of which a user has
	// 128 by default; tests run several control planes at once.
	c := "*,-ttl-controller,-csrsigning"
	if o.Virtual {
		// A virtual cluster's nodes stand for host nodes and have no
		// kubelet to renew a lease: the node lifecycle controller would
		// taint them and evict every Pod.
		c += ",-nodelifecycle"
	}
	return c
}

// PlanOptions tunes the core components.
type PlanOptions struct {
	EtcdUnsafeNoFsync           bool
	MaxRequestsInflight         int
	MaxMutatingRequestsInflight int
	// Virtual is a virtual cluster's control plane: no kube-scheduler,
	// since the host schedules its Pods, and no node lifecycle controller.
	Virtual bool
	// AuditWrites makes kube-apiserver log every write (who, verb, object)
	// to Layout.WritesLog, so that a benchmark can say who wrote what.
	AuditWrites bool
	// AdvertiseAddress is where the API server tells pods to find it (the
	// kubernetes Service's endpoint), "" for 127.0.0.1; it listens on
	// 127.0.0.1 alone all the same, so what serves that address must
	// forward to it (a real node's, realnode.ForwardAPI).
	AdvertiseAddress string
	// Args are flags added after a component's own, by component name
	// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler); a
	// flag given again takes the last value.
	Args map[string][]string
}

// ArgsComponents are the components PlanOptions.Args may name.
var ArgsComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// DefaultPlanOptions keeps etcd durable and raises the API server's in-flight limits.
func DefaultPlanOptions() PlanOptions {
	return PlanOptions{MaxRequestsInflight: 800, MaxMutatingRequestsInflight: 400}
}

// WithDefaults fills in the in-flight limits o leaves zero.
func (o PlanOptions) WithDefaults() PlanOptions {
	d := DefaultPlanOptions()
	if o.MaxRequestsInflight == 0 {
		o.MaxRequestsInflight = d.MaxRequestsInflight
	}
	if o.MaxMutatingRequestsInflight == 0 {
		o.MaxMutatingRequestsInflight = d.MaxMutatingRequestsInflight
	}
	return o
}

// auditPolicy logs writes only, without their bodies: who, verb, object
// and response code are what a count of writes needs.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`
