// Package plot draws line charts of counts over time as PNG images: one
// panel per group of series, all panels sharing the time axis. `berth bench`
// writes its chart.png with it. It needs only the standard library and a
// bitmap font, so the bench stays in the one binary.
package plot
