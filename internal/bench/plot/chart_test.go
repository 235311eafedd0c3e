package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
)

func TestScaleForRoundsUpToATick(t *testing.T) {
	for _, c := range []struct {
		top, max, step float64
	}{
		{0, 1, 1},
		{-3, 1, 1},
		{math.NaN(), 1, 1},
		{1, 1, 0.2},
		{10, 10, 2},
		{273.6, 300, 100},
		{1500, 1500, 500},
		{1501, 2000, 500},
		{0.37, 0.4, 0.1},
	} {
		got := scaleFor(c.top)
		if math.Abs(got.Max-c.max) > 1e-9 || math.Abs(got.Step-c.step) > 1e-9 {
			t.Errorf("scaleFor(%v) = %+v, want max %v step %v", c.top, got, c.max, c.step)
		}
	}
}

func TestTickLabelsHaveTheStepsDecimals(t *testing.T) {
	for _, c := range []struct {
		a    axisScale
		v    float64
		want string
	}{
		{axisScale{Max: 1, Step: 0.1}, 3 * 0.1, "0.3"},
		{axisScale{Max: 300, Step: 100}, 200, "200"},
		{axisScale{Max: 1, Step: 0.2}, 0.6000000000000001, "0.6"},
	} {
		if got := c.a.label(c.v); got != c.want {
			t.Errorf("label(%v) with step %v = %q, want %q", c.v, c.a.Step, got, c.want)
		}
	}
}

// A series is drawn where its values are: a constant at the panel's top at
// the top of the plot, one at zero on the bottom, in their own colours.
func TestRenderDrawsSeriesAtTheirValues(t *testing.T) {
	c := Chart{Title: "t", XLabel: "seconds", Panels: []Panel{
		{Title: "one", Series: []Series{
			{Name: "high", Points: []Point{{0, 10}, {100, 10}}},
			{Name: "low", Points: []Point{{0, 0}, {50, 0}}},
		}},
		{Title: "two", Series: []Series{
			{Name: "rising", Points: []Point{{0, 0}, {100, 4}}},
		}},
	}}
	img := Render(c)
	if got, want := img.Bounds().Dy(), header+2*panelHeight+footer; got != want {
		t.Fatalf("height %d, want %d for two panels", got, want)
	}
	one, two := plotArea(0), plotArea(1)
	mid := (one.Min.X + one.Max.X) / 2
	if got := img.RGBAAt(mid, one.Min.Y); got != Palette[0] {
		t.Errorf("top of panel one at the middle is %v, want the first series' colour %v", got, Palette[0])
	}
	// The low series stops at x=50 of 100: drawn left of the middle, not
	// at the right end.
	quarter := (3*one.Min.X + one.Max.X) / 4
	if got := img.RGBAAt(quarter, one.Max.Y-1); got != Palette[1] {
		t.Errorf("bottom of panel one at a quarter is %v, want the second series' colour %v", got, Palette[1])
	}
	if got := img.RGBAAt(one.Max.X-3, one.Max.Y-1); got == Palette[1] {
		t.Errorf("the low series is drawn past its last point")
	}
	// Panel two has its own range: 4 is its top, reached at the right end.
	if got := img.RGBAAt(two.Max.X-1, two.Min.Y); got != Palette[0] {
		t.Errorf("top right of panel two is %v, want %v", got, Palette[0])
	}
	if got := img.RGBAAt(two.Min.X+1, two.Min.Y); got == Palette[0] {
		t.Errorf("the rising series is at its top at its start")
	}
}

func TestRenderSkipsValuesThatAreNotNumbers(t *testing.T) {
	c := Chart{Panels: []Panel{{Title: "p", Series: []Series{{Name: "s",
		Points: []Point{{0, 1}, {1, math.NaN()}, {math.Inf(1), 2}, {2, 1}}}}}}}
	img := Render(c)
	area := plotArea(0)
	// The scale comes from the finite points only: 1 is the top, at both
	// ends, and the line breaks where a value is missing.
	if got := img.RGBAAt(area.Min.X, area.Min.Y); got != Palette[0] {
		t.Errorf("top left is %v, want %v", got, Palette[0])
	}
	if got := img.RGBAAt(area.Max.X-1, area.Min.Y); got != Palette[0] {
		t.Errorf("top right is %v, want %v", got, Palette[0])
	}
	if got := img.RGBAAt((area.Min.X+area.Max.X)/2, area.Min.Y); got == Palette[0] {
		t.Errorf("the line is drawn across a missing value")
	}
}

func TestAnEmptyChartStillRenders(t *testing.T) {
	for _, c := range []Chart{{}, {Panels: []Panel{{Title: "nothing"}}}, {Panels: []Panel{{Series: []Series{{Name: "s"}}}}}} {
		var buf bytes.Buffer
		if err := WritePNG(&buf, c); err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(&buf); err != nil {
			t.Fatalf("not a PNG: %v", err)
		}
	}
}

func TestTitlesAreWritten(t *testing.T) {
	img := Render(Chart{Title: "berth bench baseline", Panels: []Panel{{Title: "small"}}})
	inked := func(r image.Rectangle) bool {
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if img.RGBAAt(x, y) == (color.RGBA{40, 40, 40, 255}) {
					return true
				}
			}
		}
		return false
	}
	if !inked(image.Rect(marginLeft, 0, marginLeft+textWidth("berth bench baseline"), header)) {
		t.Error("no chart title drawn")
	}
	area := plotArea(0)
	if !inked(image.Rect(area.Min.X, area.Min.Y-panelTop, area.Min.X+textWidth("small"), area.Min.Y)) {
		t.Error("no panel title drawn")
	}
}

func TestWriteCSVHasARowPerPoint(t *testing.T) {
	c := Chart{Panels: []Panel{{Title: "small, cpu", Series: []Series{
		{Name: "admitted", Points: []Point{{0, 0}, {0.2, 3}}},
		{Name: "finished", Points: []Point{{0.2, 1}}},
	}}}}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, c); err != nil {
		t.Fatal(err)
	}
	want := `panel,series,seconds,value
"small, cpu",admitted,0.000,0
"small, cpu",admitted,0.200,3
"small, cpu",finished,0.200,1
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
