package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/testenv"
)

// The scripting contract: `up --detach` exits 0 once the API server is ready
// and prints the kubeconfig path last on stdout; `down` exits 0 once every
// process has exited; objects survive down and up.
func TestUpDownUpKeepsObjects(t *testing.T) {
	inst := newInstance(t, "keep")
	kubeconfig := inst.up(t)
	client := clientFor(t, kubeconfig)
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "survivor"},
		Spec: batchv1.JobSpec{Suspend: ptr(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
		}}},
	}
	created, err := client.BatchV1().Jobs("survivor").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pids := inst.pids(t)
	inst.down(t)
	for _, p := range pids {
		if p.Alive() {
			t.Errorf("process %d still alive after down returned", p.PID)
		}
	}

	kubeconfig = inst.up(t)
	client = clientFor(t, kubeconfig)
	got, err := client.BatchV1().Jobs("survivor").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("job lost across down/up: %v", err)
	}
	if got.UID != created.UID {
		t.Errorf("job UID %s after restart, want %s", got.UID, created.UID)
	}
}

// Two instances with different names run side by side on their own ports and
// data, and stopping one leaves the other serving.
func TestTwoInstancesSideBySide(t *testing.T) {
	a, b := newInstance(t, "alpha"), newInstance(t, "beta")
	ca, cb := clientFor(t, a.up(t)), clientFor(t, b.up(t))
	ctx := context.Background()
	if _, err := ca.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-alpha"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.CoreV1().Namespaces().Get(ctx, "only-in-alpha", metav1.GetOptions{}); err == nil {
		t.Fatal("a namespace created in alpha is visible in beta: the instances share storage")
	}
	sa, sb := a.state(t), b.state(t)
	if sa.Ports.APIServer == sb.Ports.APIServer || sa.Ports.EtcdClient == sb.Ports.EtcdClient {
		t.Fatalf("instances share ports: %+v and %+v", sa.Ports, sb.Ports)
	}
	a.down(t)
	if _, err := cb.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("beta stopped serving when alpha went down: %v", err)
	}
	out, code := b.run(t, "status")
	if code != 0 || !strings.Contains(out, "kube-scheduler") {
		t.Fatalf("status of beta: exit %d\n%s", code, out)
	}
}

// The flags berth up passes on reach the servers, through the detached
// supervisor, and berth bench uses them: --audit-writes gives the writes
// by client, --apiserver-arg=--profiling=true and --controller-flag=--profiling
// (both off by default) the two CPU profiles.
func TestBenchSaysWhoWroteAndProfiles(t *testing.T) {
	inst := newInstance(t, "cost")
	inst.up(t, "--audit-writes", "--apiserver-arg=--profiling=true", "--controller-flag=--profiling")
	defer inst.down(t)
	out, profiles := t.TempDir(), t.TempDir()
	if log, code := inst.run(t, "bench", "baseline", "--scale", "0.01", "--output", out, "--profile", profiles); code != 0 {
		t.Fatalf("berth bench: exit %d\n%s", code, log)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res bench.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	count := func(client, verb, resource string) (all, ofClasses int) {
		for _, w := range res.Cost.Writes {
			if w.Client == client && w.Verb == verb && w.Resource == resource {
				all += w.Count
				if w.Class != "" {
					ofClasses += w.Count
				}
			}
		}
		return all, ofClasses
	}
	// Every workload is created by the bench and admitted by berth, in a
	// status write each at least; all are named for their class.
	if all, classed := count("berth-admin", "create", "workloads"); all != res.Workloads || classed != all {
		t.Errorf("the bench's creates: %d, %d of them of a class; want %d: %+v", all, classed, res.Workloads, res.Cost.Writes)
	}
	if all, classed := count("berth-controller", "patch", "workloads/status"); all < res.Workloads || classed != all {
		t.Errorf("berth's status writes: %d, %d of them of a class; want at least %d: %+v", all, classed, res.Workloads, res.Cost.Writes)
	}
	for _, p := range []string{"kube-apiserver", "berth-controller", "etcd"} {
		if res.Cost.CPUSeconds[p] <= 0 {
			t.Errorf("no CPU time of %s: %v", p, res.Cost.CPUSeconds)
		}
	}
	if len(res.Cost.Profiles) != 2 || len(res.Cost.Notes) > 0 {
		t.Fatalf("profiles %v, notes %v; want kube-apiserver's and berth-controller's", res.Cost.Profiles, res.Cost.Notes)
	}
	for _, file := range res.Cost.Profiles {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", file, err)
		} else if len(p.Sample) == 0 {
			t.Errorf("%s has no samples", file)
		}
	}
}

// component returns the named component of a state, failing the test if it
// has none.
func component(t *testing.T, st *controlplane.State, name string) controlplane.ComponentState {
	t.Helper()
	for _, c := range st.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s in %+v", name, st.Components)
	return controlplane.ComponentState{}
}

// A component that dies is restarted, as a kubelet restarts a crashed
// container; the others keep running, and `berth status` counts the restart
// and says how the component ended.
func TestKilledComponentIsRestarted(t *testing.T) {
	inst := newInstance(t, "phoenix")
	kubeconfig := inst.up(t)
	before := inst.state(t)
	was := component(t, before, "berth-controller")
	if err := syscall.Kill(was.Process.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		now := component(t, inst.state(t), "berth-controller")
		if now.Restarts != 1 || now.Process == was.Process || !now.Process.Alive() {
			return fmt.Errorf("berth-controller: %d restarts, pid %d (was %d)", now.Restarts, now.Process.PID, was.Process.PID)
		}
		return nil
	})
	after := inst.state(t)
	for _, c := range before.Components {
		if now := component(t, after, c.Name); c.Name != "berth-controller" && (now.Process != c.Process || !now.Process.Alive() || now.Restarts != 0) {
			t.Errorf("%s was disturbed: pid %d -> %d, %d restarts", c.Name, c.Process.PID, now.Process.PID, now.Restarts)
		}
	}
	// Healthy again, and it says what happened.
	var out string
	testenv.Eventually(t, 60*time.Second, func() error {
		var code int
		if out, code = inst.run(t, "status"); code != 0 {
			return fmt.Errorf("status exit %d:\n%s", code, out)
		}
		return nil
	})
	for _, want := range []string{"RESTARTS", "berth-controller last exited at", "signal: killed"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	if _, err := clientFor(t, kubeconfig).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("the API server does not answer after the restart: %v", err)
	}
}

// A component that keeps dying (a crash loop) is given up on: the instance
// stops every other process and `berth status` names the component and
// quotes its log.
func TestCrashLoopingComponentIsReported(t *testing.T) {
	inst := newInstance(t, "victim")
	inst.up(t)
	pids := inst.pids(t)
	testenv.Eventually(t, 2*time.Minute, func() error {
		st := inst.state(t)
		if st.Phase == controlplane.PhaseFailed || st.Phase == controlplane.PhaseStopped {
			return nil
		}
		sched := component(t, st, "kube-scheduler")
		if sched.Process.Alive() {
			if err := syscall.Kill(sched.Process.PID, syscall.SIGKILL); err != nil {
				return err
			}
		}
		return fmt.Errorf("instance %s; kube-scheduler restarted %d times", st.Phase, sched.Restarts)
	})
	testenv.Eventually(t, 60*time.Second, func() error {
		for _, p := range append(pids, inst.pids(t)...) {
			if p.Alive() {
				return fmt.Errorf("process %d still alive", p.PID)
			}
		}
		return nil
	})
	out, code := inst.run(t, "status")
	if code == 0 {
		t.Errorf("status exits 0 for a failed instance:\n%s", out)
	}
	for _, want := range []string{"not running", "Failed", "kube-scheduler exited unexpectedly 5 times", "signal: killed"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	// The machine-readable form carries the same.
	out, _ = inst.run(t, "status", "-o", "json")
	var s controlplane.Status
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	if s.Failure == nil || s.Failure.Component != "kube-scheduler" || s.Running {
		t.Errorf("status -o json: running=%v failure=%+v", s.Running, s.Failure)
	}
}

// A data directory can serve one instance at a time; the second `up` says who
// holds it and changes nothing.
func TestLockedDataDirectory(t *testing.T) {
	inst := newInstance(t, "locked")
	inst.up(t)
	before := inst.state(t)
	out, code := inst.run(t, "up", "--detach")
	if code == 0 {
		t.Fatalf("second up on the same data directory succeeded:\n%s", out)
	}
	for _, want := range []string{"in use", inst.dir, fmt.Sprintf("pid %d", before.Supervisor.PID), "berth down"} {
		if !strings.Contains(out, want) {
			t.Errorf("error lacks %q:\n%s", want, out)
		}
	}
	after := inst.state(t)
	if after.Supervisor != before.Supervisor || after.Phase != controlplane.PhaseRunning {
		t.Errorf("the failed up disturbed the running instance: %+v", after)
	}
	if _, code := inst.run(t, "status"); code != 0 {
		t.Error("instance unhealthy after a refused second up")
	}
}

// A port already in use is refused before anything starts, naming the component.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	inst := newInstance(t, "busy")
	out, code := inst.run(t, "up", "--detach", "--port", strconv.Itoa(port))
	if code == 0 {
		t.Fatalf("up on a busy port succeeded:\n%s", out)
	}
	for _, want := range []string{"kube-apiserver", strconv.Itoa(port), "already in use"} {
		if !strings.Contains(out, want) {
			t.Errorf("error lacks %q:\n%s", want, out)
		}
	}
	inst.assertNothingRuns(t)
}

// Corrupt etcd data: etcd exits during start-up, the error names it, quotes
// its log and points to berth doctor, and nothing is left running.
func TestCorruptEtcdData(t *testing.T) {
	inst := newInstance(t, "corrupt")
	inst.up(t)
	inst.down(t)
	db := filepath.Join(inst.dir, "etcd", "member", "snap", "db")
	if err := os.WriteFile(db, []byte(strings.Repeat("not a bolt database\n", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := inst.run(t, "up", "--detach")
	if code == 0 {
		t.Fatalf("up on corrupt etcd data succeeded:\n%s", out)
	}
	for _, want := range []string{"etcd exited during start-up", "last lines of", "etcd.log", "'berth doctor' says what this machine lacks"} {
		if !strings.Contains(out, want) {
			t.Errorf("error lacks %q:\n%s", want, out)
		}
	}
	inst.assertNothingRuns(t)
	st := inst.state(t)
	if st.Phase != controlplane.PhaseFailed || st.Failure == nil || st.Failure.Component != "etcd" {
		t.Errorf("instance.json after the failed start: phase %s, failure %+v", st.Phase, st.Failure)
	}
}

// A damaged certificate is named, with what to do, and never silently replaced.
func TestCorruptCertificate(t *testing.T) {
	inst := newInstance(t, "badcert")
	inst.up(t)
	inst.down(t)
	ca := filepath.Join(inst.dir, "pki", "ca.crt")
	if err := os.WriteFile(ca, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := inst.run(t, "up", "--detach")
	if code == 0 {
		t.Fatalf("up with a corrupt CA succeeded:\n%s", out)
	}
	if !strings.Contains(out, ca) {
		t.Errorf("error does not name %s:\n%s", ca, out)
	}
	if data, _ := os.ReadFile(ca); string(data) != "garbage" {
		t.Error("the corrupt CA was overwritten")
	}
	inst.assertNothingRuns(t)
}

// `berth down` on an instance that is not running is not an error.
func TestDownWhenNotRunning(t *testing.T) {
	inst := newInstance(t, "idle")
	out, code := inst.run(t, "down")
	if code != 0 || !strings.Contains(out, "not running") {
		t.Fatalf("down on a never-started instance: exit %d\n%s", code, out)
	}
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

// Without --detach, berth runs in the foreground; Ctrl-C (SIGINT) stops every
// component in order and berth exits 0 with nothing left running.
func TestForegroundStopsOnInterrupt(t *testing.T) {
	inst := newInstance(t, "fg")
	cmd := exec.Command(inst.bin, "up", "--name", inst.name, "--data-dir", inst.dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	kubeconfig := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasSuffix(sc.Text(), "/kubeconfig") {
				kubeconfig <- sc.Text()
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case kc := <-kubeconfig:
		if _, err := clientFor(t, kc).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
			t.Fatalf("foreground instance does not serve: %v", err)
		}
	case err := <-exited:
		t.Fatalf("berth up exited before it was ready: %v\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("berth up not ready within 2 minutes\n%s", stderr.String())
	}
	pids := inst.pids(t)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("berth up exited with %v after Ctrl-C\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("berth up still running 2 minutes after Ctrl-C\n%s", stderr.String())
	}
	for _, p := range pids {
		if p.Alive() {
			t.Errorf("process %d still alive after berth up exited", p.PID)
		}
	}
	if st := inst.state(t); st.Phase != controlplane.PhaseStopped {
		t.Errorf("phase after Ctrl-C is %s, want Stopped", st.Phase)
	}
	// Components stop in reverse start order: the API server before etcd.
	log := stderr.String()
	if a, e := strings.Index(log, "stopping kube-apiserver"), strings.Index(log, "stopping etcd"); a < 0 || e < a {
		t.Errorf("stop order wrong or missing:\n%s", log)
	}
}

// A bench whose instance dies under it fails within a bounded time, saying
// so, instead of printing the same progress until its timeout.
func TestBenchFailsWhenItsInstanceDies(t *testing.T) {
	inst := newInstance(t, "doomed")
	inst.up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inst.bin, "bench", "baseline", "--scale", "0.2", "--timeout", "10m",
		"--output", t.TempDir(), "--name", inst.name, "--data-dir", inst.dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.HasPrefix(lines.Text(), "submitting") {
			break
		}
	}
	if err := syscall.Kill(inst.state(t).Supervisor.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for lines.Scan() {
		seen = append(seen, lines.Text())
	}
	err = cmd.Wait()
	took := time.Since(killed)
	out := strings.Join(seen, "\n")
	if err == nil {
		t.Fatalf("the bench succeeded although its instance died:\n%s", out)
	}
	if ctx.Err() != nil || took > 90*time.Second {
		t.Fatalf("the bench took %s to give up:\n%s", took, out)
	}
	if !strings.Contains(out, "is not running") || !strings.Contains(out, "not been reachable for 30s") {
		t.Errorf("the bench's last words do not say the instance died:\n%s", out)
	}
}

// Everything berth up keeps (private keys, admin kubeconfigs, etcd's data,
// logs) is readable by its owner alone, even in a data directory created
// with looser permissions.
func TestDataDirectoryIsOwnerOnly(t *testing.T) {
	inst := newInstance(t, "private")
	if err := os.Chmod(inst.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := inst.up(t)
	checked := 0
	err := filepath.WalkDir(inst.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.Type()&os.ModeSymlink == 0 && info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %o; want no access for group and others", p, info.Mode().Perm())
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(kubeconfig, inst.dir) || checked < 10 {
		t.Fatalf("checked %d entries of %s (kubeconfig %s)", checked, inst.dir, kubeconfig)
	}
}

// With berth's controller (and its webhook) unresponsive, a Job or Pod that
// asks for a queue is refused, saying the webhook failed, rather than
// created able to run without quota; objects that ask for no queue never
// reach the webhook and are created as usual.
func TestWebhookDownRefusesOnlyQueuedObjects(t *testing.T) {
	inst := newInstance(t, "hookless")
	kube := clientFor(t, inst.up(t))
	ctrl := component(t, inst.state(t), "berth-controller")
	if err := syscall.Kill(ctrl.Process.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(ctrl.Process.PID, syscall.SIGCONT) })
	ctx := context.Background()
	job := func(name string, labels map[string]string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}}
	}
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	}
	queued := map[string]string{"berth.dev/queue-name": "main"}
	if _, err := kube.BatchV1().Jobs("default").Create(ctx, job("queued", queued), metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), `failed calling webhook "jobs.berth.dev"`) {
		t.Errorf("a queued Job with the webhook down: %v, want it refused naming the webhook", err)
	}
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod("queued", queued), metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), `failed calling webhook "pods.berth.dev"`) {
		t.Errorf("a queued Pod with the webhook down: %v, want it refused naming the webhook", err)
	}
	began := time.Now()
	if _, err := kube.BatchV1().Jobs("default").Create(ctx, job("free", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("an unqueued Job with the webhook down: %v", err)
	}
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod("free", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("an unqueued Pod with the webhook down: %v", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("creating unqueued objects took %s: they waited for the webhook", took)
	}
}
