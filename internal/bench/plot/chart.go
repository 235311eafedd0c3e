package plot

import (
	"encoding/csv"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Point is one sample: X is seconds, Y the count.
type Point struct{ X, Y float64 }

// Series is one line.
type Series struct {
	Name   string
	Points []Point // in increasing X
}

// Panel is one plot of its own Y range; series keep their colour by their
// position, so the same position means the same thing in every panel.
type Panel struct {
	Title  string
	Series []Series
}

// Chart is a stack of panels over one time axis.
type Chart struct {
	Title, XLabel string
	Panels        []Panel
}

// Palette holds the series colours, by position.
var Palette = []color.RGBA{
	{31, 119, 180, 255}, // blue
	{230, 120, 20, 255}, // orange
	{44, 160, 44, 255},  // green
	{214, 39, 40, 255},  // red
	{148, 103, 189, 255},
}

// The layout, in pixels.
const (
	width       = 960
	header      = 30  // chart title
	panelHeight = 220 // one panel with its title row and tick labels
	footer      = 24  // X label
	marginLeft  = 64
	marginRight = 24
	panelTop    = 26 // panel title and legend
	panelBottom = 22 // X tick labels
)

var (
	background = color.RGBA{255, 255, 255, 255}
	ink        = color.RGBA{40, 40, 40, 255}
	grid       = color.RGBA{225, 225, 225, 255}
)

// WritePNG renders the chart as PNG to w.
func WritePNG(w io.Writer, c Chart) error { return png.Encode(w, Render(c)) }

// WriteFiles writes the chart as base.png and its data as base.csv.
func WriteFiles(base string, c Chart) error {
	if err := writeFile(base+".png", c, WritePNG); err != nil {
		return err
	}
	return writeFile(base+".csv", c, WriteCSV)
}

func writeFile(path string, c Chart, write func(io.Writer, Chart) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, c); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// Render draws the chart.
func Render(c Chart) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, height(len(c.Panels))))
	draw.Draw(img, img.Bounds(), image.NewUniform(background), image.Point{}, draw.Src)
	text(img, marginLeft, 20, c.Title, ink)
	maxX := 0.0
	for _, p := range c.Panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				if finite(pt.X) && finite(pt.Y) {
					maxX = max(maxX, pt.X)
				}
			}
		}
	}
	xs := scaleFor(maxX)
	for i, p := range c.Panels {
		drawPanel(img, plotArea(i), p, xs)
	}
	if len(c.Panels) == 0 {
		text(img, marginLeft, header+20, "no data", ink)
	}
	text(img, width/2-textWidth(c.XLabel)/2, img.Bounds().Max.Y-8, c.XLabel, ink)
	return img
}

func height(panels int) int { return header + max(panels, 1)*panelHeight + footer }

// plotArea is where panel i's lines go, inside its axes.
func plotArea(i int) image.Rectangle {
	top := header + i*panelHeight
	return image.Rect(marginLeft, top+panelTop, width-marginRight, top+panelHeight-panelBottom)
}

// axisScale maps values in [0, Max] onto an axis, with ticks every Step.
type axisScale struct{ Max, Step float64 }

// scaleFor rounds the top of the range up to a tick, ticks being 1, 2 or 5
// times a power of ten and about five to the axis.
func scaleFor(top float64) axisScale {
	if top <= 0 || !finite(top) {
		return axisScale{Max: 1, Step: 1}
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return axisScale{Max: math.Ceil(top/step-1e-9) * step, Step: step}
}

// pos is v's offset along an axis of n pixels.
func (a axisScale) pos(v float64, n int) int {
	return int(math.Round(min(max(v/a.Max, 0), 1) * float64(n-1)))
}

func drawPanel(img *image.RGBA, area image.Rectangle, p Panel, xs axisScale) {
	maxY := 0.0
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if finite(pt.X) && finite(pt.Y) {
				maxY = max(maxY, pt.Y)
			}
		}
	}
	ys := scaleFor(maxY)
	w, h := area.Dx(), area.Dy()
	at := func(pt Point) image.Point {
		return image.Pt(area.Min.X+xs.pos(pt.X, w), area.Max.Y-1-ys.pos(pt.Y, h))
	}
	// Grid and tick labels first, so the lines are drawn over them.
	for k := 0; float64(k)*ys.Step <= ys.Max+ys.Step/2; k++ {
		v := float64(k) * ys.Step
		y := area.Max.Y - 1 - ys.pos(v, h)
		hline(img, area.Min.X, area.Max.X-1, y, grid)
		label := ys.label(v)
		text(img, area.Min.X-6-textWidth(label), y+4, label, ink)
	}
	for k := 0; float64(k)*xs.Step <= xs.Max+xs.Step/2; k++ {
		v := float64(k) * xs.Step
		x := area.Min.X + xs.pos(v, w)
		vline(img, x, area.Min.Y, area.Max.Y-1, grid)
		label := xs.label(v)
		text(img, x-textWidth(label)/2, area.Max.Y+15, label, ink)
	}
	hline(img, area.Min.X, area.Max.X-1, area.Max.Y-1, ink)
	vline(img, area.Min.X, area.Min.Y, area.Max.Y-1, ink)

	text(img, area.Min.X, area.Min.Y-8, p.Title, ink)
	x := area.Min.X + textWidth(p.Title) + 24
	for i, s := range p.Series {
		col := Palette[i%len(Palette)]
		fill(img, image.Rect(x, area.Min.Y-17, x+10, area.Min.Y-7), col)
		text(img, x+14, area.Min.Y-8, s.Name, ink)
		x += 14 + textWidth(s.Name) + 18

		var prev *image.Point
		for _, pt := range s.Points {
			if !finite(pt.X) || !finite(pt.Y) {
				prev = nil
				continue
			}
			q := at(pt)
			if prev == nil {
				line(img, q, q, col)
			} else {
				line(img, *prev, q, col)
			}
			prev = &q
		}
	}
}

// line draws a two-pixel-thick segment (Bresenham's algorithm).
func line(img *image.RGBA, a, b image.Point, col color.RGBA) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := sign(b.X-a.X), sign(b.Y-a.Y)
	e := dx + dy
	for {
		img.SetRGBA(a.X, a.Y, col)
		img.SetRGBA(a.X, a.Y-1, col)
		if a == b {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			a.X += sx
		} else {
			e += dx
			a.Y += sy
		}
	}
}

func hline(img *image.RGBA, x0, x1, y int, col color.RGBA) {
	fill(img, image.Rect(x0, y, x1+1, y+1), col)
}

func vline(img *image.RGBA, x, y0, y1 int, col color.RGBA) {
	fill(img, image.Rect(x, y0, x+1, y1+1), col)
}

func fill(img *image.RGBA, r image.Rectangle, col color.RGBA) {
	draw.Draw(img, r, image.NewUniform(col), image.Point{}, draw.Src)
}

func text(img *image.RGBA, x, y int, s string, col color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func textWidth(s string) int { return font.MeasureString(basicfont.Face7x13, s).Round() }

// label prints a tick value with as many decimals as the step has.
func (a axisScale) label(v float64) string {
	return strconv.FormatFloat(v, 'f', max(0, int(-math.Floor(math.Log10(a.Step)))), 64)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// WriteCSV writes the chart's data, a row per point: panel, series,
// seconds, value; for replotting it elsewhere.
func WriteCSV(w io.Writer, c Chart) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"panel", "series", "seconds", "value"})
	for _, p := range c.Panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				_ = cw.Write([]string{p.Title, s.Name, strconv.FormatFloat(pt.X, 'f', 3, 64), strconv.FormatFloat(pt.Y, 'f', -1, 64)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
