package integration

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workercluster"
)

// berthNamespace is where the controller testenv starts reads its Secrets.
const berthNamespace = "berth-system"

// workerKubeconfig is the test cluster's own kubeconfig with every file
// inlined, as `berth cluster add` stores it; change alters it.
func workerKubeconfig(t *testing.T, env *testenv.Env, change func(*clientcmdapi.Config)) []byte {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(cfg)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func kubeconfigSecret(t *testing.T, env *testenv.Env, name string, data []byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: berthNamespace},
		Data: map[string][]byte{workercluster.SecretKey: data}}
	if _, err := env.Kube.CoreV1().Secrets(berthNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Secrets(berthNamespace).Delete(ctx, name, metav1.DeleteOptions{}) })
}

func waitWorker(t *testing.T, env *testenv.Env, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var wc berthv1.WorkerCluster
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &wc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive)
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
			return fmt.Errorf("WorkerCluster %s Active: %+v; want %s, %s, %q", name, c, status, reason, message)
		}
		return nil
	})
}

// A WorkerCluster is Active while berth reaches the cluster its Secret's
// kubeconfig names (here the test cluster itself), and says why not
// otherwise: no Secret (until it appears), a kubeconfig that would run a
// program, an API server nobody listens for.
func TestWorkerClusterConnection(t *testing.T) {
	env := testenv.New(t)
	create := func(name string) string {
		wc := &berthv1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: env.Name(name)},
			Spec: berthv1.WorkerClusterSpec{KubeconfigSecret: env.Name(name)}}
		env.Create(t, wc)
		return wc.Name
	}

	late := create("late")
	waitWorker(t, env, late, metav1.ConditionFalse, workercluster.SecretNotFound, "Secret berth-system/"+late+" not found")
	kubeconfigSecret(t, env, late, workerKubeconfig(t, env, nil))
	waitWorker(t, env, late, metav1.ConditionTrue, workercluster.Connected, "reached https://127.0.0.1:")

	exec := create("exec")
	kubeconfigSecret(t, env, exec, workerKubeconfig(t, env, func(c *clientcmdapi.Config) {
		for _, u := range c.AuthInfos {
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1"}
		}
	}))
	waitWorker(t, env, exec, metav1.ConditionFalse, workercluster.BadKubeconfig, `.exec: runs the program "/bin/true"`)

	// A loopback port that was free a moment ago: nothing answers there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	gone := create("gone")
	kubeconfigSecret(t, env, gone, workerKubeconfig(t, env, func(c *clientcmdapi.Config) {
		for _, cl := range c.Clusters {
			cl.Server = "https://" + closed
		}
	}))
	waitWorker(t, env, gone, metav1.ConditionFalse, workercluster.Unreachable, closed)
}

// berth cluster add stores a worker's kubeconfig and names it in a
// WorkerCluster; berth cluster list shows berth reaching it.
func TestClusterAddAndList(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	name := env.Name("worker")
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &berthv1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = env.Kube.CoreV1().Secrets(berthNamespace).Delete(ctx, "worker-"+name, metav1.DeleteOptions{})
	})
	out, err := exec.Command(bin, "cluster", "add", name, "--kubeconfig", env.Kubeconfig, "--manager-kubeconfig", env.Kubeconfig).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "WorkerCluster "+name+" added") {
		t.Fatalf("berth cluster add: %v\n%s", err, out)
	}
	testenv.Eventually(t, wait, func() error {
		out, err := exec.Command(bin, "cluster", "list", "--kubeconfig", env.Kubeconfig).CombinedOutput()
		if err != nil {
			return fmt.Errorf("berth cluster list: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == name && f[1] == "True" && f[2] == workercluster.Connected {
				return nil
			}
		}
		return fmt.Errorf("%s is not listed connected:\n%s", name, out)
	})
	out, err = exec.Command(bin, "cluster", "add", name, "--kubeconfig", env.Kubeconfig, "--manager-kubeconfig", env.Kubeconfig).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "WorkerCluster "+name+" already exists") {
		t.Errorf("adding it twice: %v\n%s", err, out)
	}
}
