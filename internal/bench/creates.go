package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/bench/plot"
)

// Creates measures how fast the API server creates Jobs with berth's Job
// webhook in the way and without it: Jobs created by Writers at once, in
// rounds that differ only in that. A Job without a queue label never
// reaches the webhook (its object selector leaves it out); one with a
// queue label is sent to it and comes back suspended. Dry-run rounds
// (nothing stored, so no controller reacts) isolate the webhook's call;
// stored rounds add what follows a queued Job in a real cluster (berth
// makes its Workload), into a held queue so that nothing is admitted.
type Creates struct {
	Jobs, Writers int
}

// CreatesAt is 2,000 Jobs a round at scale 1, by 32 writers.
func CreatesAt(scale float64) Creates {
	return Creates{Jobs: max(10, int(math.Round(2000*scale))), Writers: 32}
}

// CreateRound is one round of creates.
type CreateRound struct {
	Name string `json:"name"`
	// Queued Jobs carry a queue label, so the webhook is called for each.
	Queued bool `json:"queued"`
	// DryRun creates are checked and admitted, webhooks included, but not
	// stored.
	DryRun    bool    `json:"dryRun"`
	Jobs      int     `json:"jobs"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
	// WebhookCalls the API server made to mutating webhooks during the
	// round, and the mean time each took (its
	// apiserver_admission_webhook_admission_duration_seconds).
	WebhookCalls       float64 `json:"webhookCalls"`
	WebhookMeanSeconds float64 `json:"webhookMeanSeconds"`
	// CPUSeconds each of the instance's processes used in the round.
	CPUSeconds map[string]float64 `json:"cpuSeconds,omitempty"`
}

// CreateResults is results.json of creates.
type CreateResults struct {
	Scenario string        `json:"scenario"`
	Scale    float64       `json:"scale"`
	Date     time.Time     `json:"date"`
	Version  string        `json:"version"`
	Writers  int           `json:"writers"`
	Rounds   []CreateRound `json:"rounds"`
	// Ratios of the rate with the webhook to the rate without, dry run and
	// stored.
	DryRunRatio float64 `json:"dryRunRatio"`
	StoredRatio float64 `json:"storedRatio"`
	Cost        Cost    `json:"cost"`
}

const createsNamespace = "bench-creates"

// RunCreates runs the creates scenario: four rounds, the dry-run pair
// first, each pair without the webhook first.
func RunCreates(ctx context.Context, cfg *rest.Config, cr Creates, scale float64, o Options) (*CreateResults, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	api, err := connect(cfg, benchQPS, benchBurst, false)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(o.Progress, "removing the objects of the last run")
	if err := Clear(ctx, api.c); err != nil {
		return nil, err
	}
	if err := setUpCreates(ctx, api.c); err != nil {
		return nil, err
	}
	res := &CreateResults{Scenario: "creates", Scale: scale, Date: time.Now().UTC(), Version: version(), Writers: cr.Writers}
	m := startMeter(ctx, cfg, o)
	var ch plot.Chart
	ch.Title, ch.XLabel = fmt.Sprintf("berth bench creates: %d Jobs a round, %d writers", cr.Jobs, cr.Writers), "seconds since the round began"
	panel := plot.Panel{Title: "Jobs created"}
	for _, round := range []CreateRound{
		{Name: "dry run, no queue label", DryRun: true},
		{Name: "dry run, queued (webhook)", DryRun: true, Queued: true},
		{Name: "stored, no queue label", Queued: false},
		{Name: "stored, queued (webhook)", Queued: true},
	} {
		fmt.Fprintf(o.Progress, "creating %d Jobs: %s\n", cr.Jobs, round.Name)
		points, err := createRound(ctx, api, cr, &round, o)
		if err != nil {
			res.Cost = m.end(createsClassOf)
			return res, fmt.Errorf("round %q: %w", round.Name, err)
		}
		res.Rounds = append(res.Rounds, round)
		panel.Series = append(panel.Series, plot.Series{Name: round.Name, Points: points})
		fmt.Fprintf(o.Progress, "  %.0f a second (%d in %.1f s), %.0f webhook calls of %.1f ms on average\n",
			round.PerSecond, round.Jobs, round.Seconds, round.WebhookCalls, round.WebhookMeanSeconds*1000)
	}
	res.Cost = m.end(createsClassOf)
	ch.Panels = []plot.Panel{panel}
	res.DryRunRatio = ratio(res.Rounds[1].PerSecond, res.Rounds[0].PerSecond)
	res.StoredRatio = ratio(res.Rounds[3].PerSecond, res.Rounds[2].PerSecond)
	return res, writeFiles(o.Output, res, CreatesMarkdown(*res), ch)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// setUpCreates makes the namespace of the run and a LocalQueue "bench" on a
// held ClusterQueue, so queued Jobs wait, held, without being admitted.
func setUpCreates(ctx context.Context, c client.Client) error {
	lbl := map[string]string{Label: "true"}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: createsNamespace, Labels: lbl}},
		&berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: createsNamespace, Labels: lbl}, Spec: berthv1.ClusterQueueSpec{
			StopPolicy:        berthv1.Hold,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: createsNamespace}},
		}},
		&berthv1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: createsNamespace, Labels: lbl},
			Spec: berthv1.LocalQueueSpec{ClusterQueue: createsNamespace}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// createRound creates cr.Jobs Jobs as round says, fills in its figures, and
// returns when each was created.
func createRound(ctx context.Context, api *apiClients, cr Creates, round *CreateRound, o Options) ([]plot.Point, error) {
	hooksBefore, err := webhookTotals(ctx, api.kube)
	if err != nil {
		return nil, err
	}
	cpuBefore := map[string]float64{}
	for name, pid := range o.Processes {
		if c := cpuOf(pid); c != nil {
			cpuBefore[name] = *c
		}
	}
	prefix := roundClass(round.Queued, round.DryRun) + "-"
	var opts []client.CreateOption
	if round.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	var (
		created  atomic.Int64
		mu       sync.Mutex
		points   []plot.Point
		firstErr error
		wg       sync.WaitGroup
	)
	work := make(chan int)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	for range cr.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				job := createsJob(prefix+strconv.Itoa(i), round.Queued)
				if err := api.c.Create(ctx, job, opts...); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating Job %s/%s: %w", job.Namespace, job.Name, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				// A queued Job must come back held: else the webhook
				// was not in the way and the round measures nothing.
				if round.Queued && (job.Spec.Suspend == nil || !*job.Spec.Suspend) {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("Job %s/%s has a queue label but was created unsuspended: berth's webhook did not see it", job.Namespace, job.Name)
					}
					mu.Unlock()
					cancel()
					return
				}
				n := created.Add(1)
				mu.Lock()
				points = append(points, plot.Point{X: time.Since(began).Seconds(), Y: float64(n)})
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range cr.Jobs {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(began)
	if firstErr != nil {
		return points, firstErr
	}
	if err := ctx.Err(); err != nil { // the run was interrupted
		return points, err
	}
	hooksAfter, err := webhookTotals(ctx, api.kube)
	if err != nil {
		return points, err
	}
	round.Jobs = int(created.Load())
	round.Seconds = elapsed.Seconds()
	round.PerSecond = float64(round.Jobs) / elapsed.Seconds()
	round.WebhookCalls = hooksAfter.count - hooksBefore.count
	if round.WebhookCalls > 0 {
		round.WebhookMeanSeconds = (hooksAfter.sum - hooksBefore.sum) / round.WebhookCalls
	}
	for name, pid := range o.Processes {
		if after := cpuOf(pid); after != nil {
			if before, ok := cpuBefore[name]; ok {
				if round.CPUSeconds == nil {
					round.CPUSeconds = map[string]float64{}
				}
				round.CPUSeconds[name] = *after - before
			}
		}
	}
	return points, nil
}

// createsJob is a Job of one pod; queued, it asks for the run's LocalQueue
// and is left for berth's webhook to suspend; otherwise it is created
// suspended, so that in both rounds the Job controller makes no pods.
func createsJob(name string, queued bool) *batchv1.Job {
	job := benchJob(name, createsNamespace, 1, time.Second)
	if queued {
		job.Labels[berthv1.QueueNameLabel] = "bench"
	} else {
		yes := true
		job.Spec.Suspend = &yes
	}
	return job
}

// roundClass names a round's Jobs; what berth and Kubernetes make for a
// Job (its Workload, events) carries its name.
func roundClass(queued, dryRun bool) string {
	c := "plain"
	if queued {
		c = "queued"
	}
	if dryRun {
		c += "-dry"
	}
	return c
}

// createsClassOf tells the round of an object by its name, for the writes
// by class.
func createsClassOf(name string) string {
	for _, c := range []string{"queued-dry", "plain-dry", "queued", "plain"} {
		if i := strings.Index(name, c+"-"); i == 0 || i > 0 && name[i-1] == '-' {
			return c
		}
	}
	return ""
}

type webhookTotal struct{ sum, count float64 }

// webhookTotals reads from kube-apiserver's /metrics how many calls it has
// made to mutating webhooks so far, and the seconds they took in all.
func webhookTotals(ctx context.Context, kube kubernetes.Interface) (webhookTotal, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return webhookTotal{}, fmt.Errorf("reading kube-apiserver's /metrics: %w", err)
	}
	return parseWebhookTotals(string(raw)), nil
}

// parseWebhookTotals sums apiserver_admission_webhook_admission_duration_seconds
// over the mutating ("admit") webhooks, in the Prometheus text format.
func parseWebhookTotals(text string) webhookTotal {
	const metric = "apiserver_admission_webhook_admission_duration_seconds_"
	var t webhookTotal
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, metric)
		if !ok {
			continue
		}
		field, rest, ok := strings.Cut(rest, "{")
		if !ok || (field != "sum" && field != "count") {
			continue
		}
		end := strings.LastIndex(rest, "}")
		if end < 0 || parseLabels(rest[:end])["type"] != "admit" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[end+1:]), 64)
		if err != nil {
			continue
		}
		if field == "sum" {
			t.sum += v
		} else {
			t.count += v
		}
	}
	return t
}

// CreatesMarkdown is creates' summary for people.
func CreatesMarkdown(r CreateResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# berth bench creates\n\n")
	fmt.Fprintf(&b, "Scale %g, %s, berth %s; %d writers.\n\n", r.Scale, r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Version, r.Writers)
	fmt.Fprintf(&b, "| round | Jobs | seconds | Jobs a second | webhook calls | mean webhook call | kube-apiserver CPU | berth-controller CPU |\n|---|---|---|---|---|---|---|---|\n")
	for _, rd := range r.Rounds {
		cpu := func(name string) string {
			if v, ok := rd.CPUSeconds[name]; ok {
				return fmt.Sprintf("%.1f s", v)
			}
			return "not measured"
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.0f | %.0f | %.1f ms | %s | %s |\n", rd.Name, rd.Jobs, rd.Seconds, rd.PerSecond,
			rd.WebhookCalls, rd.WebhookMeanSeconds*1000, cpu("kube-apiserver"), cpu("berth-controller"))
	}
	fmt.Fprintf(&b, "\nWith the webhook, against without: %.2f of the rate in dry run, %.2f stored.\n", r.DryRunRatio, r.StoredRatio)
	fmt.Fprintf(&b, "\n| measure | value |\n|---|---|\n")
	stored := 0
	for _, rd := range r.Rounds {
		if !rd.DryRun {
			stored += rd.Jobs
		}
	}
	costRows(&b, r.Cost, stored, "stored Job")
	classes := map[string]int{}
	for _, rd := range r.Rounds {
		if !rd.DryRun { // stored nothing, wrote nothing
			classes[roundClass(rd.Queued, rd.DryRun)] = rd.Jobs
		}
	}
	writesTable(&b, r.Cost, classes, stored, "stored Job")
	return b.String()
}
