package plot_test

import (
	"bytes"
	"fmt"
	"image/png"

	"github.com/berth-dev/berth/internal/bench/plot"
)

func ExampleWritePNG() {
	c := plot.Chart{
		Title:  "queue q1",
		XLabel: "seconds since the first workload arrived",
		Panels: []plot.Panel{{
			Title: "small",
			Series: []plot.Series{
				{Name: "admitted", Points: []plot.Point{{X: 0, Y: 0}, {X: 1, Y: 4}, {X: 2, Y: 9}}},
				{Name: "finished", Points: []plot.Point{{X: 0, Y: 0}, {X: 1, Y: 1}, {X: 2, Y: 6}}},
			},
		}},
	}
	var buf bytes.Buffer
	if err := plot.WritePNG(&buf, c); err != nil {
		panic(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		panic(err)
	}
	fmt.Println(img.Bounds().Dx(), "x", img.Bounds().Dy())
	// Output: 960 x 274
}
