package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/upsert"
	"github.com/berth-dev/berth/internal/workercluster"
)

// Names `berth up --workers` gives what it wires on the manager.
const (
	workersConfigName = "workers"
	workersCheckName  = "multicluster"
)

// worker is one worker instance of `berth up --workers`.
type worker struct {
	name       string // the WorkerCluster's name on the manager: worker1, worker2, ...
	instance   string // the instance's name: <manager>-worker1, ...
	dir        string // <manager's data dir>/workers/worker1
	kubeconfig string
}

// workersOf lists the worker instances of the manager in dir, n of them, or
// (n < 0) those that exist.
func workersOf(managerName, dir string, n int) ([]worker, error) {
	root := filepath.Join(dir, "workers")
	var names []string
	if n >= 0 {
		for i := 1; i <= n; i++ {
			names = append(names, "worker"+strconv.Itoa(i))
		}
	} else {
		entries, err := os.ReadDir(root)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	var out []worker
	for _, name := range names {
		inst := managerName + "-" + name
		if err := controlplane.ValidateName(inst); err != nil {
			return nil, err
		}
		out = append(out, worker{name: name, instance: inst, dir: filepath.Join(root, name)})
	}
	return out, nil
}

// startWorkers starts each worker as its own detached instance (`berth up
// --detach`), all at once, with the given flags (the manager's control
// plane options and the simulator's node flags); a worker that
// runs already, healthy (its manager stopped without it, say), is left
// running. It fills in their kubeconfigs.
func startWorkers(ctx context.Context, workers []worker, progress io.Writer, flags []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	for i := range workers {
		w := &workers[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := controlplane.ReadStatus(ctx, w.dir); err == nil && st.Healthy() {
				fmt.Fprintf(progress, "[%s] running already\n", w.name)
				w.kubeconfig = controlplane.Layout{Dir: w.dir}.Kubeconfig()
				return
			}
			args := append([]string{"up", "--detach", "--name", w.instance, "--data-dir", w.dir}, flags...)
			cmd := exec.CommandContext(ctx, self, args...)
			var out strings.Builder
			cmd.Stdout = &out
			stderr, err := cmd.StderrPipe()
			if err != nil {
				errs[i] = err
				return
			}
			if err := cmd.Start(); err != nil {
				errs[i] = fmt.Errorf("worker %s: %w", w.name, err)
				return
			}
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				fmt.Fprintf(progress, "[%s] %s\n", w.name, sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				errs[i] = fmt.Errorf("worker %s (berth up --name %s --data-dir %s): %w", w.name, w.instance, w.dir, err)
				return
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			w.kubeconfig = lines[len(lines)-1]
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// stopWorkers stops the worker instances of the manager in dir.
func stopWorkers(ctx context.Context, managerName, dir string, out io.Writer) error {
	workers, err := workersOf(managerName, dir, -1)
	if err != nil {
		return err
	}
	for _, w := range workers {
		ran, err := controlplane.Down(ctx, w.dir, controlplane.DownTimeout)
		if err != nil {
			return fmt.Errorf("stopping worker %s: %w", w.name, err)
		}
		if ran {
			fmt.Fprintf(out, "worker %s stopped\n", w.name)
		}
	}
	return nil
}

// wireWorkers tells the manager about its workers, as `berth cluster add`
// would (a Secret and a WorkerCluster each; a Secret is refreshed, since a
// worker's port may change between runs), and makes the MultiClusterConfig
// "workers" of all of them and the AdmissionCheck "multicluster" that uses
// it. A ClusterQueue that lists that check dispatches its Jobs to the workers.
func wireWorkers(ctx context.Context, managerKubeconfig string, workers []worker) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", managerKubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return err
	}
	ns := controller.DefaultOptions().Namespace
	var names []string
	for _, w := range workers {
		data, err := workercluster.Portable(w.kubeconfig, "")
		if err != nil {
			return fmt.Errorf("worker %s: %w", w.name, err)
		}
		secret, wc := workerObjects(w.name, ns, data)
		if err := upsert.Object(ctx, c, c, secret, func(have *corev1.Secret) error { have.Data = secret.Data; return nil }); err != nil {
			return err
		}
		if err := upsert.Object(ctx, c, c, wc, func(have *berthv1.WorkerCluster) error { have.Spec = wc.Spec; return nil }); err != nil {
			return err
		}
		names = append(names, w.name)
	}
	mcc := &berthv1.MultiClusterConfig{ObjectMeta: metav1.ObjectMeta{Name: workersConfigName},
		Spec: berthv1.MultiClusterConfigSpec{Clusters: names}}
	if err := upsert.Object(ctx, c, c, mcc, func(have *berthv1.MultiClusterConfig) error { have.Spec = mcc.Spec; return nil }); err != nil {
		return err
	}
	ac := &berthv1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: workersCheckName},
		Spec: berthv1.AdmissionCheckSpec{ControllerName: berthv1.MultiClusterControllerName,
			Parameters: &berthv1.AdmissionCheckParametersReference{APIGroup: berthv1.GroupVersion.Group,
				Kind: "MultiClusterConfig", Name: workersConfigName}}}
	if err := upsert.Object(ctx, c, c, ac, func(have *berthv1.AdmissionCheck) error {
		have.Spec.Parameters = ac.Spec.Parameters
		return nil
	}); err != nil {
		return err
	}
	return waitWorkersActive(ctx, c, names, workersActiveTimeout)
}

// workersActiveTimeout bounds the wait for the manager to reach its workers
// (within the minute berth up gives wiring them).
const workersActiveTimeout = 45 * time.Second

// waitWorkersActive waits until the manager reaches every worker (their
// WorkerClusters Active), so that what is submitted right after berth up is
// dispatched; it names those it does not reach in time, and why.
func waitWorkersActive(ctx context.Context, c client.Reader, names []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var waiting []string
		for _, name := range names {
			var wc berthv1.WorkerCluster
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &wc); err != nil {
				return err
			}
			if cond := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive); cond == nil {
				waiting = append(waiting, name+" (not looked at yet)")
			} else if cond.Status != metav1.ConditionTrue {
				waiting = append(waiting, fmt.Sprintf("%s (%s: %s)", name, cond.Reason, cond.Message))
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager did not reach its workers within %s: %s", timeout, strings.Join(waiting, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
