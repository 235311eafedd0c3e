package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/examples"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/manifests"
	"github.com/berth-dev/berth/internal/top"
)

// Label marks the demo's Jobs, so a second run replaces the first one's.
const Label = "berth.dev/demo"

// Options tunes Run.
type Options struct {
	Out io.Writer
	// Live redraws the view in place (for a terminal); otherwise each view
	// that differs from the last is printed below it.
	Live bool
	// Interval between views; default 500ms. Timeout for the Jobs to
	// finish; default 5m.
	Interval, Timeout time.Duration
}

// Run applies the example queues, replaces the demo's Jobs with fresh ones,
// and shows the queues until every Job has finished.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	if o.Interval == 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return err
	}
	queues, err := manifests.Decode(examples.Queues)
	if err != nil {
		return fmt.Errorf("examples/queues.yaml: %w", err)
	}
	if err := manifests.Apply(ctx, cfg, queues...); err != nil {
		return fmt.Errorf("applying examples/queues.yaml: %w", err)
	}
	jobs, err := demoJobs()
	if err != nil {
		return err
	}
	namespaces := map[string]bool{}
	for _, j := range jobs {
		namespaces[j.Namespace] = true
	}
	if err := removeOld(ctx, c, namespaces); err != nil {
		return err
	}
	for _, j := range jobs {
		if err := c.Create(ctx, j); err != nil {
			return fmt.Errorf("creating Job %s/%s: %w", j.Namespace, j.Name, err)
		}
	}
	fmt.Fprintf(o.Out, "submitted %d Jobs from examples/demo-jobs.yaml; each queue until they finish:\n", len(jobs))
	return show(ctx, c, namespaces, o)
}

// demoJobs decodes examples/demo-jobs.yaml, labelling each Job as the demo's.
func demoJobs() ([]*batchv1.Job, error) {
	objs, err := manifests.Decode(examples.DemoJobs)
	if err != nil {
		return nil, fmt.Errorf("examples/demo-jobs.yaml: %w", err)
	}
	var jobs []*batchv1.Job
	for _, u := range objs {
		var j batchv1.Job
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &j); err != nil {
			return nil, fmt.Errorf("examples/demo-jobs.yaml: %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if j.Labels == nil {
			j.Labels = map[string]string{}
		}
		j.Labels[Label] = "true"
		jobs = append(jobs, &j)
	}
	return jobs, nil
}

// removeOld deletes the Jobs of an earlier demo and waits until they are
// gone, so their names are free and the view counts only the new ones.
func removeOld(ctx context.Context, c client.Client, namespaces map[string]bool) error {
	for ns := range namespaces {
		if err := c.DeleteAllOf(ctx, &batchv1.Job{}, client.InNamespace(ns), client.MatchingLabels{Label: "true"},
			client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			return fmt.Errorf("removing the last demo's Jobs in %s: %w", ns, err)
		}
	}
	var left int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		left = 0
		for ns := range namespaces {
			var l batchv1.JobList
			if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{Label: "true"}); err != nil {
				return false, err
			}
			left += len(l.Items)
		}
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("removing the last demo's Jobs: %d still there: %w", left, err)
	}
	return nil
}

func show(ctx context.Context, c client.Client, namespaces map[string]bool, o Options) error {
	began := time.Now()
	var last []Row
	lastLines := 0
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for {
		rows, tree, err := snapshot(ctx, c, namespaces)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			// The queues as 'berth top' shows them, then the Jobs' progress.
			view := top.Render(tree) + "\n" + Render(rows, time.Since(began))
			switch {
			case o.Live:
				if lastLines > 0 {
					fmt.Fprintf(o.Out, "\x1b[%dA\x1b[J", lastLines) // back to the last view's first line, and clear
				}
				fmt.Fprint(o.Out, view)
				lastLines = strings.Count(view, "\n")
			case !reflect.DeepEqual(rows, last):
				fmt.Fprint(o.Out, view)
			}
			last = rows
			if Done(rows) {
				fmt.Fprintf(o.Out, "all %d Jobs finished after %s\n", jobCount(rows), time.Since(began).Round(time.Second))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			return fmt.Errorf("the demo's Jobs did not finish within %s (see 'berth kubectl get workloads -A')", o.Timeout)
		case <-tick.C:
		}
	}
}

func snapshot(ctx context.Context, c client.Client, namespaces map[string]bool) ([]Row, []top.Node, error) {
	var cqs berthv1.ClusterQueueList
	if err := c.List(ctx, &cqs); err != nil {
		return nil, nil, err
	}
	var cohorts berthv1.CohortList
	if err := c.List(ctx, &cohorts); err != nil {
		return nil, nil, err
	}
	var lqs []berthv1.LocalQueue
	var jobs []batchv1.Job
	var wls []berthv1.Workload
	for ns := range namespaces {
		var l berthv1.LocalQueueList
		if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return nil, nil, err
		}
		lqs = append(lqs, l.Items...)
		var j batchv1.JobList
		if err := c.List(ctx, &j, client.InNamespace(ns), client.MatchingLabels{Label: "true"}); err != nil {
			return nil, nil, err
		}
		jobs = append(jobs, j.Items...)
		var w berthv1.WorkloadList
		if err := c.List(ctx, &w, client.InNamespace(ns)); err != nil {
			return nil, nil, err
		}
		wls = append(wls, w.Items...)
	}
	return Summarize(cqs.Items, lqs, jobs, wls), top.Tree(cqs.Items, cohorts.Items, lqs), nil
}

func jobCount(rows []Row) int {
	n := 0
	for _, r := range rows {
		n += r.Total
	}
	return n
}
