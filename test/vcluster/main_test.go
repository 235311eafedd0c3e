package vcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/vcluster/serve"
	"github.com/berth-dev/berth/internal/vcluster/syncer"
	"github.com/berth-dev/berth/internal/vcluster/translate"
)

var ctx = context.Background()

const wait = 60 * time.Second

// The virtual clusters the tests share, each in a host namespace of its
// own: vq queues every Pod in host LocalQueue "tenants", at priority class
// "tenants-low"; vr runs Pods at Pod Security level restricted, and may
// name runtime class "allowed".
const (
	va, vb, vq, vr   = "va", "vb", "vq", "vr"
	nsA, nsB         = "tenants-a", "tenants-b"
	queuedNS         = "queued"
	restrictedNS     = "restricted"
	tenantsQueue     = "tenants"
	tenantsPriority  = "tenants-low"
	allowedRuntime   = "allowed"
	virtualStartWait = 3 * time.Minute
)

// Each test's simulated nodes are tainted for its namespace alone: the
// host's admin lets tenants tolerate that taint, and nothing else of their
// placement (--allow-toleration).
var testNodes = translate.Placement{Tolerations: []string{testenv.SimNodeTaintKey}}

var specs = []vspec{{name: va, hostNS: nsA, policy: translate.Policy{Placement: testNodes}}, {name: vb, hostNS: nsB, policy: translate.Policy{Placement: testNodes}},
	{name: vq, hostNS: queuedNS, policy: translate.Policy{Queue: tenantsQueue, PriorityClass: tenantsPriority, Placement: testNodes}},
	{name: vr, hostNS: restrictedNS, policy: translate.Policy{PodSecurity: translate.PodSecurityRestricted, RuntimeClasses: []string{allowedRuntime}, Placement: testNodes}}}

type vspec struct {
	name, hostNS string
	policy       translate.Policy
}

// running virtual clusters, by name.
var running = map[string]*virtual{}

type virtual struct {
	spec     vspec
	inst     *controlplane.Instance
	config   *rest.Config
	kube     kubernetes.Interface
	hostKC   []byte // the syncer's host kubeconfig
	host     syncer.Host
	createdN bool
}

func TestMain(m *testing.M) {
	os.Exit(testenv.MainAround(m, func(run func() int) int {
		dir, err := os.MkdirTemp("", "berth-vclusters-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for _, s := range specs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := startVirtual(s, filepath.Join(dir, s.name))
				mu.Lock()
				defer mu.Unlock()
				if v != nil {
					running[s.name] = v
				}
				errs = append(errs, err)
			}()
		}
		wg.Wait()
		defer func() {
			for _, v := range running {
				_ = v.inst.Stop()
			}
		}()
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(os.Stderr, "starting the virtual clusters: %v\n", err)
			return 1
		}
		return run()
	}, testenv.Cluster{Name: "testenv"}))
}

// startVirtual sets the host up for a virtual cluster and starts its
// control plane and syncer, as `berth vcluster create` does.
func startVirtual(s vspec, dir string) (*virtual, error) {
	admin, err := clientcmd.BuildConfigFromFlags("", testenv.Instance().Kubeconfig())
	if err != nil {
		return nil, err
	}
	c, cancel := context.WithTimeout(ctx, virtualStartWait)
	defer cancel()
	v := &virtual{spec: s, host: syncer.Host{Admin: admin, VCluster: s.name, Namespace: s.hostNS, Policy: s.policy}}
	if v.hostKC, v.createdN, err = v.host.Prepare(c); err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	hostKC := filepath.Join(dir, "host.kubeconfig")
	if err := os.WriteFile(hostKC, v.hostKC, 0o600); err != nil {
		return nil, err
	}
	bin, err := testenv.Binary()
	if err != nil {
		return nil, err
	}
	plan := controlplane.DefaultPlanOptions()
	plan.EtcdUnsafeNoFsync = true
	v.inst, err = controlplane.Start(c, serve.Options(serve.Config{
		Name: s.name, DataDir: filepath.Join(dir, "data"), Binary: bin, Plan: plan,
		HostKubeconfig: hostKC, HostNamespace: s.hostNS, Policy: s.policy,
	}))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	if v.config, err = clientcmd.BuildConfigFromFlags("", v.inst.Kubeconfig()); err != nil {
		return v, err
	}
	v.config.QPS, v.config.Burst = 100, 200
	v.kube, err = kubernetes.NewForConfig(v.config)
	return v, err
}

// tenant is one test's view of a virtual cluster: a namespace of its own
// there, deleted when the test ends.
type tenant struct {
	*virtual
	ns string
}

func inVirtual(t *testing.T, name, ns string) *tenant {
	t.Helper()
	v := running[name]
	if v == nil {
		t.Fatalf("no virtual cluster %s", name)
	}
	if _, err := v.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s in virtual cluster %s: %v", ns, name, err)
	}
	t.Cleanup(func() { _ = v.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// Pods need the namespace's default ServiceAccount, which the virtual
	// kube-controller-manager makes.
	testenv.Eventually(t, wait, func() error {
		_, err := v.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	return &tenant{virtual: v, ns: ns}
}
