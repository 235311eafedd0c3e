package bench

import (
	"context"
	"sync"
	"time"

	"github.com/berth-dev/berth/internal/bench/plot"
)

// sampleEvery is how often a run's counts are sampled for its chart: fine
// enough for the seconds of a smoke run, few enough points for an hour.
const sampleEvery = 200 * time.Millisecond

// timeline samples a run's counts over time, for chart.png. Its layout
// names the panels and their series; read returns the current count of
// every series, panel by panel, in that order.
type timeline struct {
	start  time.Time
	read   func() []float64
	mu     sync.Mutex
	panels []plot.Panel
	stopc  chan struct{}
	done   chan struct{}
	once   sync.Once
}

// startTimeline samples read from now until stop, or until ctx ends.
func startTimeline(ctx context.Context, start time.Time, layout []plot.Panel, read func() []float64) *timeline {
	tl := &timeline{start: start, read: read, panels: layout, stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(tl.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			tl.add(time.Since(tl.start), tl.read())
			select {
			case <-tl.stopc:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return tl
}

// add records one sample; values beyond the layout are ignored, missing
// ones leave their series without a point.
func (tl *timeline) add(at time.Duration, values []float64) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	i := 0
	for p := range tl.panels {
		for s := range tl.panels[p].Series {
			if i < len(values) {
				series := &tl.panels[p].Series[s]
				series.Points = append(series.Points, plot.Point{X: at.Seconds(), Y: values[i]})
			}
			i++
		}
	}
}

// stop takes a last sample and gives the chart.
func (tl *timeline) stop(title string) plot.Chart {
	tl.once.Do(func() {
		close(tl.stopc)
		<-tl.done
		tl.add(time.Since(tl.start), tl.read())
	})
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return plot.Chart{Title: title, XLabel: "seconds since the run began", Panels: tl.panels}
}

// layout names panels and their series, the same series in each.
func layout(panels []string, series ...string) []plot.Panel {
	out := make([]plot.Panel, len(panels))
	for i, p := range panels {
		out[i].Title = p
		for _, s := range series {
			out[i].Series = append(out[i].Series, plot.Series{Name: s})
		}
	}
	return out
}
