package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/testenv"
)

// A virtual cluster made with the CLI keeps its objects across berth down
// and berth up, and delete leaves nothing of it behind.
func TestVClusterLifecycle(t *testing.T) {
	t.Parallel()
	inst := newInstance(t, "vhost")
	hostKC := inst.up(t, "--nodes", "1")
	ctx := context.Background()

	all, stdout, code := inst.runSplit(t, "vcluster", "create", "team")
	if code != 0 {
		t.Fatalf("berth vcluster create: exit %d\n%s", code, all)
	}
	vdir := filepath.Join(inst.dir, "vclusters", "team")
	vkc := controlplane.Layout{Dir: vdir}.Kubeconfig()
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); lines[len(lines)-1] != vkc {
		t.Fatalf("last line of stdout %q, want the virtual cluster's kubeconfig %s", lines[len(lines)-1], vkc)
	}
	if out, code := inst.run(t, "vcluster", "create", "team"); code == 0 || !strings.Contains(out, "exists already") {
		t.Errorf("creating it again: exit %d\n%s", code, out)
	}
	host, virtual := clientFor(t, hostKC), clientFor(t, vkc)
	if _, err := virtual.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := virtual.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runs := func() error {
		p, err := virtual.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("virtual pod p1 is %s", p.Status.Phase)
		}
		return nil
	}
	testenv.Eventually(t, time.Minute, runs)
	t.Run("dashboard", func(t *testing.T) {
		// The host's dashboard names the virtual cluster, its host
		// namespace and its pod running there.
		cfg, err := clientcmd.BuildConfigFromFlags("", hostKC)
		if err != nil {
			t.Fatal(err)
		}
		url := testenv.Dashboard(t, cfg)
		bctx := testenv.Browser(t)
		if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		testenv.WaitText(t, bctx, time.Minute, "#vclusters", "team")
		testenv.WaitText(t, bctx, time.Minute, "#vclusters", "vcluster-team")
		testenv.WaitText(t, bctx, time.Minute, "#vclusters", "1 Running")
	})
	out, code := inst.run(t, "vcluster", "list")
	if code != 0 || !strings.Contains(out, "team") || !strings.Contains(out, "vcluster-team") || !strings.Contains(out, "yes") {
		t.Errorf("berth vcluster list: exit %d\n%s", code, out)
	}
	if out, code := inst.run(t, "vcluster", "kubeconfig", "team"); code != 0 || strings.TrimSpace(out) != vkc {
		t.Errorf("berth vcluster kubeconfig team: exit %d: %q", code, out)
	}

	st, err := controlplane.ReadState(controlplane.Layout{Dir: vdir})
	if err != nil || st == nil {
		t.Fatalf("virtual cluster state: %v", err)
	}
	inst.down(t)
	if st.Supervisor.Alive() {
		t.Fatalf("the virtual cluster's supervisor (pid %d) outlived berth down", st.Supervisor.PID)
	}
	// berth up starts the virtual cluster again before it returns; a start
	// that failed is only a warning there, so look for it, with its logs.
	if all, _, code := inst.runSplit(t, "up", "--detach", "--nodes", "1"); code != 0 || strings.Contains(all, "did not start") {
		t.Fatalf("berth up: exit %d\n%s\n%s", code, all, logTails(t, filepath.Join(vdir, "logs")))
	}
	virtual = clientFor(t, vkc)
	testenv.Eventually(t, time.Minute, func() error {
		if _, err := virtual.CoreV1().ConfigMaps("default").Get(ctx, "keep", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("after berth down and up: %w", err)
		}
		return runs()
	})

	if out, code := inst.run(t, "vcluster", "delete", "team"); code != 0 {
		t.Fatalf("berth vcluster delete: exit %d\n%s", code, out)
	}
	if _, err := host.CoreV1().Namespaces().Get(ctx, "vcluster-team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("host namespace vcluster-team after delete: %v", err)
	}
	crs, err := host.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: "berth.dev/vcluster=team"})
	if err != nil || len(crs.Items) != 0 {
		t.Errorf("cluster roles of the virtual cluster after delete: %v (%v)", crs, err)
	}
	if _, err := os.Stat(vdir); !os.IsNotExist(err) {
		t.Errorf("data directory %s after delete: %v", vdir, err)
	}
}

// logTails is the last lines of each log in dir, for a failure's message.
func logTails(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", f, tail(string(data), 15))
	}
	return b.String()
}
