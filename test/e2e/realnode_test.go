package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/realnode"
	"github.com/berth-dev/berth/internal/version"
	. "github.com/berth-dev/berth/test/fixtures"
)

// helloProgram is the test image's program: it waits the seconds of its
// first argument, then says hello with its second.
// Named "api", it asks the API server for its version instead, as a pod
// in a cluster does: at the kubernetes Service, with its service account.
const helloProgram = `package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	s, _ := strconv.Atoi(os.Args[1])
	time.Sleep(time.Duration(s) * time.Second)
	if os.Args[2] != "api" {
		fmt.Println("hello from a real container:", os.Args[2])
		return
	}
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		fmt.Println("no service account token:", err)
		os.Exit(1)
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		fmt.Println("no CA:", err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")) + "/api"
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+string(token))
	resp, err := c.Do(req)
	if err != nil {
		fmt.Println("the API server did not answer:", err)
		os.Exit(1)
	}
	fmt.Println("the API server answered", resp.Status)
}
`

// berth up --real-node runs real containers under berth's admission: on a
// node whose only runtime is the distribution's containerd, a queued Job's
// container runs from an image built here and loaded with berth image load,
// its log says so, its Workload finishes and gives its quota back; a second
// Job that does not fit meanwhile waits, then runs; a third's pod reaches
// the API server through the kubernetes Service. berth down leaves nothing
// of the node on the machine.
//
// Then berth itself, from its image and its chart (make image's and make
// chart's builds), installed with Helm's library on an instance with
// nothing of berth's: both replicas run and one leads, on the build the
// chart names; queued Jobs run (one that does not fit waits, then runs),
// and when the leader's pod is deleted the other replica leads and admits
// a Job submitted meanwhile; the chart's virtual cluster comes up; helm
// upgrade to another image, and to webhook certificates that cert-manager
// issues, while 50 Jobs wait runs each of them once; the webhooks and the
// visibility API answer with cert-manager's certificate, and again with
// berth's own after a switch back; helm uninstall leaves nothing of
// berth's but its CRDs.
//
// One real node per machine: the two run one after the other.
func TestRealNode(t *testing.T) {
	t.Parallel()
	tools, err := realnode.Check()
	if err != nil {
		t.Fatalf("this test needs a machine that can run a real node (.ci/run installs what it needs): %v", err)
	}
	hello := helloImage(t)
	berth, cm := make(chan string, 1), make(chan certManager, 1)
	go func() { berth <- berthImage(t) }() // a minute or more: built meanwhile
	go func() { cm <- buildCertManager(t) }()
	t.Run("queued Jobs run real containers", func(t *testing.T) { queuedJobsRun(t, tools, hello) })
	t.Run("berth installed from its image and chart", func(t *testing.T) { installedFromImage(t, tools, hello, <-berth, <-cm) })
}

// clientOf is a client of the cluster of kubeconfig, for berth's kinds too.
func clientOf(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	c, err := client.New(restConfig(t, kubeconfig), client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restConfig is the client configuration of kubeconfig.
func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// realQueue makes namespace ns with LocalQueue main, on ClusterQueue real
// of 1 cpu in flavor real: the real node.
func realQueue(t *testing.T, c client.Client, ns string) {
	t.Helper()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		MakeResourceFlavor("real").NodeLabel(realnode.Label, "true").Obj(),
		MakeClusterQueue("real").ResourceGroup(MakeFlavorQuotas("real").Resource("cpu", "1").Obj()).Obj(),
		MakeLocalQueue("main", ns, "real").Obj(),
	} {
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
}

// helloImage builds the test's image from helloProgram, static, and writes
// it as an archive; it returns the archive's path.
func helloImage(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(helloProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the test image's program: %v\n%s", err, out)
	}
	idx, err := image.Build(image.Spec{Binaries: map[string]string{"linux/" + runtime.GOARCH: bin},
		Version: version.Info{Version: "test"}, Entrypoint: []string{"/berth"}, Cmd: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "hello.tar")
	if err := image.WriteArchive(archive, idx, "berth.dev/hello:test"); err != nil {
		t.Fatal(err)
	}
	return archive
}

// helloJob is a queued Job of one pod of 1 cpu on the real node that waits
// seconds, then says hello with its name.
func helloJob(name, ns, seconds string) *batchv1.Job {
	job := MakeJob(name, ns).Queue("main").Obj()
	job.Spec.Template.Spec.Containers = []corev1.Container{{Name: "hello", Image: "berth.dev/hello:test",
		ImagePullPolicy: corev1.PullNever, Args: []string{seconds, name},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
	return job
}

func running(ctx context.Context, c client.Client, ns, job string) error {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == realnode.NodeName {
			return nil
		}
	}
	return fmt.Errorf("no pod of Job %s runs on %s yet", job, realnode.NodeName)
}

func workloadOf(ctx context.Context, c client.Client, job *batchv1.Job) (*berthv1.Workload, error) {
	var j batchv1.Job
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
		return nil, err
	}
	var wl berthv1.Workload
	err := c.Get(ctx, types.NamespacedName{Namespace: j.Namespace, Name: jobs.WorkloadNameFor(j.Name, j.UID)}, &wl)
	return &wl, err
}

func hasCondition(wl *berthv1.Workload, typ string) bool {
	for _, cond := range wl.Status.Conditions {
		if cond.Type == typ && cond.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// portForward runs berth kubectl port-forward to target's port in ns, on a
// free local port, until the test ends, and returns its URL.
func portForward(t *testing.T, bin, kubeconfig, ns, target string, port int) string {
	t.Helper()
	cmd := exec.Command(bin, "kubectl", "--kubeconfig", kubeconfig, "-n", ns, "port-forward", "--address=127.0.0.1", target, fmt.Sprintf(":%d", port))
	// "Forwarding from 127.0.0.1:PORT -> 8080" once it listens.
	return "http://" + startUntil(t, cmd, regexp.MustCompile(`Forwarding from (127\.0\.0\.1:[0-9]+)`)) + "/"
}

// startUntil starts cmd, to run until the test ends, and returns the first
// submatch of want in the first line it prints that matches; the test
// fails with what it printed on stderr if it ends before.
func startUntil(t *testing.T, cmd *exec.Cmd, want *regexp.Regexp) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if m := want.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return m[1]
		}
	}
	t.Fatalf("%s ended before printing a line matching %s: %s", strings.Join(cmd.Args, " "), want, stderr.String())
	return ""
}
