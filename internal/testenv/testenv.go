// Package testenv gives integration tests a real Kubernetes control plane.
//
// A test binary calls Main from TestMain; it starts one control plane (the same
// one `berth up` runs, through package controlplane) for the whole binary and
// stops it, with every process it started, when the tests are done. Each test
// calls New and gets its own namespace, deleted when the test ends.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		env := testenv.New(t)
//		env.Client.BatchV1().Jobs(env.Namespace).Create(...)
//	}
//
// Environment:
//
//	BERTH_TEST_KUBECONFIG  run against the cluster this kubeconfig names instead
//	                       of starting one (tests then only touch their own namespaces)
//	BERTH_BIN              the berth binary to run; default: built from this module
//	                       into the user cache directory, one per checkout
//	                       (reused while up to date)
//	BERTH_TEST_KEEP        keep the data directory of the started control plane
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/addon"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/localcluster"
)

// Env is one test's view of the cluster.
type Env struct {
	Config *rest.Config
	// Kube is a typed clientset; Client a controller-runtime client that
	// knows berth's types.
	Kube       kubernetes.Interface
	Client     client.Client
	Namespace  string
	Kubeconfig string
	// Instance is the control plane, nil when the tests run against
	// BERTH_TEST_KUBECONFIG.
	Instance *controlplane.Instance
}

// cluster is one control plane the tests use.
type cluster struct {
	config     *rest.Config
	kubeconfig string
	instance   *controlplane.Instance
	options    controlplane.Options // to start it again
	stopped    bool                 // by Stop, on purpose
}

// Cluster names a control plane for MainClusters, and what its controller
// runs with beyond the defaults.
type Cluster struct {
	Name           string
	ControllerArgs []string
	// With are addons to run too (`berth up --with`), by name.
	With []string
	// ConfiguredKinds is a --configured-kinds file (`berth up
	// --configured-kinds`).
	ConfiguredKinds string
}

var shared struct {
	clusters map[string]*cluster
	names    []string // in the order given to MainClusters
}

// Main starts the control plane (unless BERTH_TEST_KUBECONFIG names one), runs
// the tests and stops it. It returns the exit code for os.Exit.
func Main(m *testing.M) int { return MainWith(m) }

// MainWith is Main with addons run beside berth (`berth up --with`); a
// control plane BERTH_TEST_KUBECONFIG names must have them already.
func MainWith(m *testing.M, with ...string) int {
	return MainCluster(m, Cluster{Name: "testenv", With: with})
}

// MainCluster is Main with one control plane as c says; a control plane
// BERTH_TEST_KUBECONFIG names must run as c says already.
func MainCluster(m *testing.M, c Cluster) int {
	if kc := os.Getenv("BERTH_TEST_KUBECONFIG"); kc != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: BERTH_TEST_KUBECONFIG=%s: %v\n", kc, err)
			return 1
		}
		shared.clusters = map[string]*cluster{c.Name: {config: cfg, kubeconfig: kc}}
		shared.names = []string{c.Name}
		return m.Run()
	}
	return MainClusters(m, c)
}

// MainClusters starts one control plane per name, all at once, runs the
// tests and stops them. New uses the first; NewIn and NewAll the others.
// It always starts its own, whatever BERTH_TEST_KUBECONFIG says.
func MainClusters(m *testing.M, clusters ...Cluster) int {
	return MainAround(m, func(run func() int) int { return run() }, clusters...)
}

// MainAround is MainClusters with around wrapped about the tests: it gets
// the function that runs them, once the control planes are up, so a
// package can start what its tests share (virtual clusters on the host,
// say) and stop it before the control planes stop.
func MainAround(m *testing.M, around func(run func() int) int, clusters ...Cluster) int {
	code, err := run(m, around, clusters)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func run(m *testing.M, around func(func() int) int, clusters []Cluster) (int, error) {
	bin, err := Binary()
	if err != nil {
		return 1, err
	}
	shared.clusters, shared.names = map[string]*cluster{}, nil
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, spec := range clusters {
		shared.names = append(shared.names, spec.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := start(spec, bin)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("starting control plane %s: %w", spec.Name, err))
			}
			if c != nil {
				shared.clusters[spec.Name] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range shared.clusters {
			_ = c.instance.Stop() // a component's failure has failed its tests already
			if !keep() {
				os.RemoveAll(c.options.DataDir)
			} else {
				fmt.Fprintf(os.Stderr, "testenv: data kept in %s\n", c.options.DataDir)
			}
		}
	}()
	if len(errs) > 0 {
		return 1, errors.Join(errs...)
	}
	code := around(m.Run)
	for _, name := range shared.names {
		if err := shared.clusters[name].instance.Err(); err != nil && !shared.clusters[name].stopped {
			errs = append(errs, fmt.Errorf("control plane %s failed during the tests: %w", name, err))
		}
	}
	return code, errors.Join(errs...)
}

func keep() bool { return os.Getenv("BERTH_TEST_KEEP") != "" }

func start(spec Cluster, bin string) (*cluster, error) {
	with, err := addon.Parse(spec.With)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "berth-"+spec.Name+"-")
	if err != nil {
		return nil, err
	}
	plan := controlplane.DefaultPlanOptions()
	// Tests recreate their data every run; durability buys nothing here.
	plan.EtcdUnsafeNoFsync = true
	c := &cluster{options: localcluster.Options(localcluster.Config{Name: spec.Name, DataDir: dir, Binary: bin, Plan: plan,
		ControllerArgs: spec.ControllerArgs, ConfiguredKinds: spec.ConfiguredKinds, With: with})}
	if err := c.start(); err != nil {
		if !keep() {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	return c, nil
}

func (c *cluster) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := controlplane.Start(ctx, c.options)
	if err != nil {
		return err
	}
	c.instance, c.stopped = inst, false
	cfg, err := clientcmd.BuildConfigFromFlags("", inst.Kubeconfig())
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	c.config, c.kubeconfig = cfg, inst.Kubeconfig()
	return nil
}

// Stop stops the control plane name, as `berth down` does, keeping its
// data; Start starts it again on the same data and ports. Tests that stop
// one must start it again before they end: the others share it.
func Stop(t testing.TB, name string) {
	t.Helper()
	c := shared.clusters[name]
	if c == nil {
		t.Fatalf("testenv: no control plane %s", name)
	}
	c.stopped = true
	if err := c.instance.Stop(); err != nil {
		t.Logf("stopping control plane %s: %v", name, err)
	}
}

// Start starts a control plane Stop stopped.
func Start(t testing.TB, name string) {
	t.Helper()
	c := shared.clusters[name]
	if c == nil {
		t.Fatalf("testenv: no control plane %s", name)
	}
	if err := c.start(); err != nil {
		t.Fatalf("starting control plane %s again: %v", name, err)
	}
}

// New returns the (first) shared cluster with a fresh namespace for t,
// deleted when t ends.
func New(t testing.TB) *Env {
	t.Helper()
	if len(shared.names) == 0 {
		t.Fatal("testenv: no control plane; call os.Exit(testenv.Main(m)) from TestMain")
	}
	return newIn(t, shared.names[0], namespaceFor(t.Name()))
}

// NewAll returns every cluster MainClusters started, by name, each with
// the same fresh namespace for t.
func NewAll(t testing.TB) map[string]*Env {
	t.Helper()
	ns := namespaceFor(t.Name())
	out := map[string]*Env{}
	for _, name := range shared.names {
		out[name] = newIn(t, name, ns)
	}
	return out
}

func newIn(t testing.TB, name, ns string) *Env {
	t.Helper()
	consultSources()
	c := shared.clusters[name]
	if c == nil {
		t.Fatalf("testenv: no control plane %s", name)
	}
	kube, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"berth.dev/test": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s in %s: %v", ns, name, err)
	}
	t.Cleanup(func() {
		err := kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s in %s: %v", ns, name, err)
		}
	})
	return &Env{Config: rest.CopyConfig(c.config), Kube: kube, Client: cl, Namespace: ns, Kubeconfig: c.kubeconfig,
		Instance: c.instance}
}

// Create creates obj and, for a cluster-scoped object, deletes it when the
// test ends (namespaced ones go with the test's namespace).
func (e *Env) Create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := e.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	if obj.GetNamespace() == "" {
		t.Cleanup(func() {
			if err := e.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		})
	}
}

// Name returns a cluster-wide unique name for a cluster-scoped object of this test.
func (e *Env) Name(base string) string { return e.Namespace + "-" + base }

// Instance is the (first) control plane this binary started, or nil when
// the tests run against BERTH_TEST_KUBECONFIG.
func Instance() *controlplane.Instance {
	if len(shared.names) == 0 {
		return nil
	}
	return shared.clusters[shared.names[0]].instance
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9-]+`)

// namespaceFor makes a DNS-label namespace name from a test name, unique per call.
func namespaceFor(testName string) string {
	base := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "t-" + base + "-" + hex.EncodeToString(b[:])
}

var binary struct {
	once sync.Once
	path string
	err  error
}

// Binary returns a berth binary: BERTH_BIN if set, else one built from this
// module into the user cache directory. Concurrent test binaries share the
// build through a file lock, and an up-to-date binary is not relinked.
func Binary() (string, error) {
	binary.once.Do(func() {
		if p := os.Getenv("BERTH_BIN"); p != "" {
			binary.path, binary.err = filepath.Abs(p)
			return
		}
		binary.path, binary.err = build()
	})
	if os.Getenv("BERTH_BIN") == "" {
		consultSources()
	}
	return binary.path, binary.err
}

func build() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the berth module; set BERTH_BIN to a berth binary")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	// One binary per checkout: two checkouts testing at once must not run
	// each other's code.
	sum := sha256.Sum256([]byte(filepath.Dir(gomod)))
	dir := filepath.Join(cache, "berth", "test-bin", hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }() // closing the file unlocks it too
	path := filepath.Join(dir, "berth")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/berth")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building berth for the tests: %v\n%s", err, out)
	}
	return path, nil
}

// consultSources stats every source file of the module. go test caches a
// package's result until the files its tests consulted change; the berth
// binary the tests run (the control plane's components, commands run by
// e2e tests) is built in a child process go test does not watch, so without
// this a change to the binary's code alone would leave old results cached.
// It must run while tests run (go test records nothing before m.Run), so
// New and Binary call it; the walk is done once, the stats each time.
func consultSources() {
	sources.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if err != nil || root == "." {
			return
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin"):
				return filepath.SkipDir
			case d.IsDir():
				return nil
			}
			switch filepath.Ext(p) {
			case ".go", ".yaml", ".yml", ".json", ".mod", ".sum":
				sources.paths = append(sources.paths, p)
			}
			return nil
		})
	})
	for _, p := range sources.paths {
		_, _ = os.Stat(p)
	}
}

var sources struct {
	once  sync.Once
	paths []string
}

// AsEditor returns a client that acts as user, who holds Kubernetes'
// built-in edit role in e's namespace and nothing else: a namespace user,
// as berth's threat model has them (docs/security.md).
func (e *Env) AsEditor(t testing.TB, user string) client.Client {
	t.Helper()
	ctx := context.Background()
	_, err := e.Kube.RbacV1().RoleBindings(e.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "edit-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("binding %s to the edit role in %s: %v", user, e.Namespace, err)
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
