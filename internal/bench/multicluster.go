package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/bench/plot"
	"github.com/berth-dev/berth/internal/controller"
	mcctrl "github.com/berth-dev/berth/internal/controller/multicluster"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/upsert"
	"github.com/berth-dev/berth/internal/workload"
)

// MultiCluster is Jobs of one small pod sent through a manager to its
// active worker clusters, at once; quotas never bind, so what is measured
// is dispatch: copying, admission on a worker, and the manager learning it.
type MultiCluster struct {
	Jobs     int
	Duration time.Duration // how long each Job's pod runs on a worker
}

// MultiClusterAt is 2,000 Jobs at scale 1.
func MultiClusterAt(scale float64) MultiCluster {
	return MultiCluster{Jobs: max(1, int(math.Round(2000*scale))), Duration: time.Second}
}

// MultiClusterResults is results.json of multicluster.
type MultiClusterResults struct {
	Scenario string    `json:"scenario"`
	Scale    float64   `json:"scale"`
	Date     time.Time `json:"date"`
	Version  string    `json:"version"`
	Jobs     int       `json:"jobs"`
	Workers  []string  `json:"workers"`
	// Dispatched: Jobs the manager saw admitted on a worker; PerWorker by
	// worker.
	Dispatched int            `json:"dispatched"`
	PerWorker  map[string]int `json:"perWorker"`
	// CreateSeconds is how long creating the Jobs took; WallSeconds, from
	// the first creation until the last Job was dispatched.
	CreateSeconds float64 `json:"createSeconds"`
	WallSeconds   float64 `json:"wallSeconds"`
	// PerSecond is Dispatched / WallSeconds.
	PerSecond float64 `json:"dispatchedPerSecond"`
	// Seconds from a Job's creation on the manager until the manager saw it
	// admitted on a worker.
	MeanSeconds float64 `json:"meanSeconds"`
	P50         float64 `json:"p50Seconds"`
	P90         float64 `json:"p90Seconds"`
	P99         float64 `json:"p99Seconds"`
	Max         float64 `json:"maxSeconds"`
	// Writes are the API writes of the run until every Job finished, by
	// control plane ("manager", or a worker's name), when each logged them
	// (berth up --workers N --audit-writes); WritesPerJob is their sum per
	// Job dispatched.
	Writes       map[string][]WriteCount `json:"writes,omitempty"`
	WritesPerJob float64                 `json:"writesPerJob,omitempty"`
}

// MultiClusterMarkdown is multicluster's summary for people.
func MultiClusterMarkdown(r MultiClusterResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# berth bench multicluster\n\n")
	fmt.Fprintf(&b, "Scale %g, %s, berth %s; workers %s.\n\n", r.Scale, r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Version,
		strings.Join(r.Workers, ", "))
	fmt.Fprintf(&b, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| Jobs dispatched | %d of %d |\n", r.Dispatched, r.Jobs)
	var per []string
	for _, w := range r.Workers {
		per = append(per, fmt.Sprintf("%s %d", w, r.PerWorker[w]))
	}
	fmt.Fprintf(&b, "| by worker | %s |\n", strings.Join(per, ", "))
	fmt.Fprintf(&b, "| creating the Jobs | %.1f s |\n", r.CreateSeconds)
	fmt.Fprintf(&b, "| first creation to last dispatch | %.1f s |\n", r.WallSeconds)
	fmt.Fprintf(&b, "| dispatch throughput | %.1f workloads/s |\n", r.PerSecond)
	fmt.Fprintf(&b, "| creation to admitted on a worker: mean | %.2f s |\n", r.MeanSeconds)
	fmt.Fprintf(&b, "| p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s |\n", r.P50, r.P90, r.P99, r.Max)
	if len(r.Writes) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "| API writes per Job, on all control planes | %.2f |\n", r.WritesPerJob)
	fmt.Fprintf(&b, "\nAPI writes per Job dispatched, until every Job finished (from each kube-apiserver's audit log):\n\n")
	fmt.Fprintf(&b, "| control plane | client | verb | resource | per Job | refused |\n|---|---|---|---|---|---|\n")
	for _, plane := range slices.Sorted(maps.Keys(r.Writes)) {
		for _, w := range r.Writes[plane] {
			if per := float64(w.Count) / float64(max(r.Dispatched, 1)); per >= 0.005 {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f | %d |\n", plane, w.Client, w.Verb, w.Resource, per, w.Failed)
			}
		}
	}
	return b.String()
}

const (
	mcNamespace = "bench-multicluster"
	mcName      = "bench-multicluster"
)

// RunMultiCluster runs the multicluster scenario against a manager (cfg)
// and the workers its WorkerClusters name, reached with their Secrets'
// kubeconfigs.
func RunMultiCluster(ctx context.Context, cfg *rest.Config, sc MultiCluster, scale float64, o Options) (*MultiClusterResults, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	api, err := connect(cfg, benchQPS, benchBurst, false)
	if err != nil {
		return nil, err
	}
	m := api.c
	workers, err := activeWorkers(ctx, m)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(workers))
	for n := range workers {
		names = append(names, n)
	}
	slices.Sort(names)

	fmt.Fprintln(o.Progress, "removing the objects of the last run")
	all := map[string]client.Client{"manager": m}
	for n, c := range workers {
		all[n] = c
	}
	for n, c := range all {
		if err := clearNamespace(ctx, c, mcNamespace); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
	}
	fmt.Fprintf(o.Progress, "making the queues on the manager and on %s\n", strings.Join(names, ", "))
	for _, n := range names {
		if err := mcQueues(ctx, workers[n], ""); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
	}
	if err := mcManager(ctx, m, names); err != nil {
		return nil, err
	}

	// The manager's Workloads, watched: when each is seen admitted on a worker.
	var (
		mu      sync.Mutex
		created = map[string]time.Time{} // by Workload name
		seen    = map[string]time.Time{}
		where   = map[string]string{}
	)
	done := make(chan struct{})
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wc, err := client.NewWithWatch(api.cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return nil, err
	}
	observe := func(wl *berthv1.Workload) {
		if wl.Status.ClusterName == "" || !workload.IsAdmitted(wl) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := seen[wl.Name]; !ok {
			seen[wl.Name], where[wl.Name] = time.Now(), wl.Status.ClusterName
			if len(seen) == sc.Jobs {
				close(done)
			}
		}
	}
	go watchWorkloads(watchCtx, wc, observe)

	logs := map[string]string{}
	if o.WritesLog != "" {
		logs["manager"] = o.WritesLog
	}
	for n, l := range o.WorkerWritesLogs {
		if _, ok := workers[n]; ok {
			logs[n] = l
		}
	}
	offsets := logOffsets(logs)
	fmt.Fprintf(o.Progress, "creating %d Jobs on the manager\n", sc.Jobs)
	began := time.Now()
	createErr := parallel(sc.Jobs, 32, func(i int) error {
		job := mcJob("job-"+strconv.Itoa(i), sc.Duration)
		at := time.Now()
		if err := m.Create(ctx, job); err != nil {
			return fmt.Errorf("creating Job %s: %w", job.Name, err)
		}
		mu.Lock()
		created[jobs.WorkloadName(job)] = at
		mu.Unlock()
		return nil
	})
	createSeconds := time.Since(began).Seconds()
	if createErr != nil {
		return nil, createErr
	}
	runErr := awaitAll(ctx, done, began, &mu, func() int { return len(seen) }, sc.Jobs, "Jobs admitted on a worker", o)
	stopWatch()
	var writes map[string][]WriteCount
	if runErr == nil && len(logs) > 0 {
		// A dispatch costs writes until its Job is done: the pods on the
		// worker, the statuses copied back, the copies' removal.
		fmt.Fprintf(o.Progress, "waiting for the Jobs to finish, to count every write they cost\n")
		if runErr = jobsFinished(ctx, m, sc.Jobs, o); runErr == nil {
			writes = map[string][]WriteCount{}
			for plane, l := range logs {
				w, err := readWrites(l, offsets[plane], nil)
				if err != nil {
					return nil, fmt.Errorf("%s's writes: %w", plane, err)
				}
				writes[plane] = w
			}
		}
	}

	mu.Lock()
	defer mu.Unlock()
	res := &MultiClusterResults{Scenario: "multicluster", Scale: scale, Date: time.Now().UTC(), Version: version(),
		Jobs: sc.Jobs, Workers: names, Dispatched: len(seen), PerWorker: map[string]int{}, CreateSeconds: createSeconds}
	var lat []float64
	var last time.Time
	var sum float64
	for name, at := range seen {
		res.PerWorker[where[name]]++
		if at.After(last) {
			last = at
		}
		if c, ok := created[name]; ok {
			d := at.Sub(c).Seconds()
			lat = append(lat, d)
			sum += d
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		res.MeanSeconds = sum / float64(len(lat))
		res.P50, res.P90, res.P99, res.Max = Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99), lat[len(lat)-1]
	}
	if !last.IsZero() {
		res.WallSeconds = last.Sub(began).Seconds()
		res.PerSecond = float64(res.Dispatched) / res.WallSeconds
	}
	if writes != nil {
		res.Writes = writes
		total := 0
		for _, ws := range writes {
			for _, w := range ws {
				total += w.Count
			}
		}
		res.WritesPerJob = float64(total) / float64(max(res.Dispatched, 1))
	}
	if err := writeFiles(o.Output, res, MultiClusterMarkdown(*res), mcChart(began, created, seen)); err != nil {
		return res, err
	}
	return res, runErr
}

// jobsFinished waits until the run's n Jobs on the manager have all
// completed or failed.
func jobsFinished(ctx context.Context, m client.Client, n int, o Options) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var list batchv1.JobList
		if err := m.List(ctx, &list, client.InNamespace(mcNamespace)); err != nil {
			return fmt.Errorf("listing the Jobs: %w", err)
		}
		finished := 0
		for i := range list.Items {
			for _, c := range list.Items[i].Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
					finished++
					break
				}
			}
		}
		if finished >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Jobs finished after 5 minutes", finished, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		fmt.Fprintf(o.Progress, "  %d of %d Jobs finished\n", finished, n)
	}
}

// activeWorkers connects to every Active WorkerCluster of the manager, with
// the kubeconfig in its Secret.
func activeWorkers(ctx context.Context, m client.Client) (map[string]client.Client, error) {
	var list berthv1.WorkerClusterList
	if err := m.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing WorkerClusters: %w", err)
	}
	out := map[string]client.Client{}
	ns := controller.DefaultOptions().Namespace
	for i := range list.Items {
		wc := &list.Items[i]
		if !meta.IsStatusConditionTrue(wc.Status.Conditions, berthv1.WorkerClusterActive) {
			continue
		}
		cfg, _, msg := mcctrl.Kubeconfig(ctx, m, ns, wc)
		if cfg == nil {
			return nil, fmt.Errorf("WorkerCluster %s: %s", wc.Name, msg)
		}
		api, err := connect(cfg, benchQPS, benchBurst, false)
		if err != nil {
			return nil, fmt.Errorf("WorkerCluster %s: %w", wc.Name, err)
		}
		out[wc.Name] = api.c
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the manager has no Active WorkerCluster; start one with 'berth up --workers 2'")
	}
	return out, nil
}

// clearNamespace deletes a namespace and waits until it is gone.
func clearNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		err := c.Get(ctx, types.NamespacedName{Name: name}, ns)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s still there after 10 minutes", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// mcQueues makes the run's namespace, flavor, ClusterQueue (with check,
// when not "") and LocalQueue on one cluster; quotas never bind.
func mcQueues(ctx context.Context, c client.Client, check string) error {
	lbl := map[string]string{Label: "true"}
	cq := &berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: mcName, Labels: lbl}, Spec: berthv1.ClusterQueueSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: mcNamespace}},
		ResourceGroups: []berthv1.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
			Flavors: []berthv1.FlavorQuotas{{Name: mcName, Resources: []berthv1.ResourceQuota{{
				Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("1000")}}}}}}}}
	if check != "" {
		cq.Spec.AdmissionChecks = []string{check}
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mcNamespace, Labels: lbl}},
		&berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: mcName, Labels: lbl}},
		cq,
		&berthv1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: mcNamespace, Labels: lbl},
			Spec: berthv1.LocalQueueSpec{ClusterQueue: mcName}},
	}
	for _, o := range objs {
		// There from the last run, they are left as they are.
		if err := upsert.Object(ctx, c, c, o, nil); err != nil {
			return err
		}
	}
	return nil
}

// mcManager makes the manager's config and check over the workers, then
// its queues, and waits until the check is Active.
func mcManager(ctx context.Context, m client.Client, workers []string) error {
	lbl := map[string]string{Label: "true"}
	mcc := &berthv1.MultiClusterConfig{ObjectMeta: metav1.ObjectMeta{Name: mcName, Labels: lbl},
		Spec: berthv1.MultiClusterConfigSpec{Clusters: workers}}
	// A config there from the last run gets this run's workers.
	if err := upsert.Object(ctx, m, m, mcc, func(have *berthv1.MultiClusterConfig) error { have.Spec = mcc.Spec; return nil }); err != nil {
		return err
	}
	if err := upsert.Object(ctx, m, m, &berthv1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: mcName, Labels: lbl},
		Spec: berthv1.AdmissionCheckSpec{ControllerName: berthv1.MultiClusterControllerName,
			Parameters: &berthv1.AdmissionCheckParametersReference{APIGroup: berthv1.GroupVersion.Group,
				Kind: "MultiClusterConfig", Name: mcName}}}, nil); err != nil {
		return err
	}
	if err := mcQueues(ctx, m, mcName); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var ac berthv1.AdmissionCheck
		if err := m.Get(ctx, types.NamespacedName{Name: mcName}, &ac); err != nil {
			return err
		}
		if meta.IsStatusConditionTrue(ac.Status.Conditions, berthv1.AdmissionCheckActive) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("AdmissionCheck %s not Active after a minute: %+v", mcName, ac.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// mcJob is one Job of the run: one pod of 10m cpu running for d.
func mcJob(name string, d time.Duration) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mcNamespace,
			Labels: map[string]string{Label: "true", berthv1.QueueNameLabel: "bench"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"berth.dev/sim-duration": d.String()}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}},
		}},
	}
}

// watchWorkloads lists and watches the run's Workloads on the manager
// until ctx ends, calling observe with each state seen.
func watchWorkloads(ctx context.Context, c client.WithWatch, observe func(*berthv1.Workload)) {
	for ctx.Err() == nil {
		var list berthv1.WorkloadList
		if err := c.List(ctx, &list, client.InNamespace(mcNamespace)); err != nil {
			time.Sleep(time.Second)
			continue
		}
		for i := range list.Items {
			observe(&list.Items[i])
		}
		w, err := c.Watch(ctx, &berthv1.WorkloadList{}, client.InNamespace(mcNamespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			if wl, ok := ev.Object.(*berthv1.Workload); ok && ev.Type != watch.Deleted {
				observe(wl)
			}
		}
		w.Stop()
	}
}

// mcChart is Jobs created and dispatched over time.
func mcChart(began time.Time, created, seen map[string]time.Time) plot.Chart {
	series := func(name string, at map[string]time.Time) plot.Series {
		var xs []float64
		for _, t := range at {
			xs = append(xs, t.Sub(began).Seconds())
		}
		slices.Sort(xs)
		s := plot.Series{Name: name, Points: []plot.Point{{X: 0, Y: 0}}}
		for i, x := range xs {
			s.Points = append(s.Points, plot.Point{X: x, Y: float64(i + 1)})
		}
		return s
	}
	return plot.Chart{Title: "berth bench multicluster", XLabel: "seconds",
		Panels: []plot.Panel{{Title: "Jobs", Series: []plot.Series{series("created", created), series("admitted on a worker", seen)}}}}
}
