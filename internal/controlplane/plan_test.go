package controlplane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPlanStartsComponentsInDependencyOrder(t *testing.T) {
	l := Layout{Dir: "/data"}
	p := Ports{EtcdClient: 1001, EtcdPeer: 1002, APIServer: 1003, ControllerManager: 1004, Scheduler: 1005}
	plan := Plan(l, p, DefaultPlanOptions())

	var names []string
	stage := map[string]int{}
	for _, c := range plan {
		names = append(names, c.Name)
		stage[c.Name] = c.Stage
		if c.HealthURL == "" || c.StartTimeout <= 0 || c.StopGrace <= 0 {
			t.Errorf("%s: health URL, start timeout and stop grace are required: %+v", c.Name, c)
		}
		if c.Args[0] != "component" || c.Args[1] != c.Name {
			t.Errorf("%s: runs %v, want berth component %s ...", c.Name, c.Args[:2], c.Name)
		}
	}
	if want := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}; !slices.Equal(names, want) {
		t.Fatalf("plan order %v, want %v", names, want)
	}
	// The API server needs etcd; controller-manager and scheduler need the API server.
	if !(stage["etcd"] < stage["kube-apiserver"] && stage["kube-apiserver"] < stage["kube-controller-manager"] &&
		stage["kube-controller-manager"] == stage["kube-scheduler"]) {
		t.Errorf("stages %v do not follow the dependencies", stage)
	}
}

func TestPlanWiresPortsAndFiles(t *testing.T) {
	l := Layout{Dir: "/data"}
	p := Ports{EtcdClient: 1001, EtcdPeer: 1002, APIServer: 1003, ControllerManager: 1004, Scheduler: 1005}
	byName := map[string]Component{}
	for _, c := range Plan(l, p, DefaultPlanOptions()) {
		byName[c.Name] = c
	}
	wants := map[string][]string{
		// etcd over TLS only, to clients of its own CA, on both ports.
		"etcd": {"--data-dir=/data/etcd", "--listen-client-url=https://127.0.0.1:1001", "--listen-peer-url=https://127.0.0.1:1002",
			"--trusted-ca-file=/data/pki/etcd-ca.crt", "--peer-trusted-ca-file=/data/pki/etcd-ca.crt"},
		"kube-apiserver": {"--etcd-servers=https://127.0.0.1:1001", "--etcd-cafile=/data/pki/etcd-ca.crt",
			"--etcd-certfile=/data/pki/apiserver-etcd-client.crt", "--secure-port=1003", "--bind-address=127.0.0.1",
			"--authorization-mode=Node,RBAC", "--client-ca-file=/data/pki/ca.crt",
			"--service-account-signing-key-file=/data/pki/sa.key", "--delete-collection-workers=8"},
		"kube-controller-manager": {"--secure-port=1004", "--kubeconfig=/data/pki/kube-controller-manager.kubeconfig",
			"--service-account-private-key-file=/data/pki/sa.key", "--leader-elect=false"},
		"kube-scheduler": {"--secure-port=1005", "--kubeconfig=/data/pki/kube-scheduler.kubeconfig", "--leader-elect=false"},
	}
	for name, want := range wants {
		c := byName[name]
		for _, w := range want {
			if !slices.Contains(c.Args, w) {
				t.Errorf("%s lacks %s in %v", name, w, c.Args)
			}
		}
		// Everything stays on loopback.
		for _, a := range c.Args {
			if strings.Contains(a, "=0.0.0.0") || strings.Contains(a, "//0.0.0.0") || strings.Contains(a, "=[::]") {
				t.Errorf("%s listens beyond loopback: %s", name, a)
			}
		}
	}
	if byName["kube-apiserver"].HealthURL != "https://127.0.0.1:1003/readyz" {
		t.Errorf("API server health URL %s", byName["kube-apiserver"].HealthURL)
	}
	if slices.Contains(byName["etcd"].Args, "--unsafe-no-fsync") {
		t.Error("etcd runs without fsync by default")
	}
	o := DefaultPlanOptions()
	o.EtcdUnsafeNoFsync = true
	if etcd := Plan(l, p, o)[0]; !slices.Contains(etcd.Args, "--unsafe-no-fsync") {
		t.Error("EtcdUnsafeNoFsync not passed to etcd")
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"berth", "a", "team-1", strings.Repeat("a", 63)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Berth", "-x", "x-", "a/b", "a b", strings.Repeat("a", 64), "../etc"} {
		err := ValidateName(bad)
		if err == nil || !strings.Contains(err.Error(), "--name") {
			t.Errorf("ValidateName(%q) = %v, want an error naming --name", bad, err)
		}
	}
}

func TestOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "logs")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(sub, "old.log")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ownerOnly(dir); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, sub: 0o700, file: 0o600} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
}

func TestVirtualPlanHasNoSchedulerNorNodeLifecycle(t *testing.T) {
	o := DefaultPlanOptions()
	o.Virtual = true
	plan := Plan(Layout{Dir: "/data"}, Ports{}, o)
	for _, c := range plan {
		if c.Name == "kube-scheduler" {
			t.Fatal("a virtual control plane runs a scheduler: its Pods would be placed on virtual nodes, not by the host")
		}
		if c.Name == "kube-controller-manager" && !slices.Contains(c.Args, "--controllers=*,-ttl-controller,-csrsigning,-nodelifecycle") {
			t.Errorf("kube-controller-manager args %v: want the node lifecycle controller off", c.Args)
		}
	}
}

func TestPlanAddsUsersArgsLast(t *testing.T) {
	o := DefaultPlanOptions()
	o.Args = map[string][]string{
		"kube-apiserver":          {"--profiling=true"},
		"etcd":                    {"--quota-backend-bytes=1"},
		"kube-controller-manager": {"--concurrent-job-syncs=50"},
		"kube-scheduler":          {"--v=2"},
	}
	for _, c := range Plan(Layout{Dir: "/data"}, Ports{}, o) {
		want := o.Args[c.Name]
		if len(want) == 0 {
			t.Fatalf("no args planned for %s in the test", c.Name)
		}
		if got := c.Args[len(c.Args)-len(want):]; !slices.Equal(got, want) {
			t.Errorf("%s ends with %q, want %q (a user's flag must come last to win)", c.Name, got, want)
		}
	}
}

func TestPlanAuditsWritesWhenAsked(t *testing.T) {
	l := Layout{Dir: "/data"}
	api := func(o PlanOptions) []string { return Plan(l, Ports{}, o)[1].Args }
	if slices.ContainsFunc(api(DefaultPlanOptions()), func(a string) bool { return strings.HasPrefix(a, "--audit") }) {
		t.Error("the API server audits by default; it costs every write a log line")
	}
	o := DefaultPlanOptions()
	o.AuditWrites = true
	args := api(o)
	for _, want := range []string{"--audit-policy-file=" + l.AuditPolicy(), "--audit-log-path=" + l.WritesLog(), "--audit-log-format=json"} {
		if !slices.Contains(args, want) {
			t.Errorf("API server args lack %s: %q", want, args)
		}
	}
}

// The API server is advertised on loopback unless told where pods find it
// (a real node's address), and listens on loopback either way.
func TestPlanAdvertisesWhereAsked(t *testing.T) {
	l, p := Layout{Dir: "/data"}, Ports{EtcdClient: 1001, EtcdPeer: 1002, APIServer: 1003, ControllerManager: 1004, Scheduler: 1005}
	api := func(o PlanOptions) []string { return Plan(l, p, o)[1].Args }
	if args := api(DefaultPlanOptions()); !slices.Contains(args, "--advertise-address=127.0.0.1") {
		t.Errorf("default: %v", args)
	}
	o := DefaultPlanOptions()
	o.AdvertiseAddress = "10.244.0.1"
	args := api(o)
	if !slices.Contains(args, "--advertise-address=10.244.0.1") || !slices.Contains(args, "--bind-address=127.0.0.1") {
		t.Errorf("advertised at 10.244.0.1: %v", args)
	}
}
