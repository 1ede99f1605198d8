package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// modeColors are the series colours; modes beyond them cycle.
var modeColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2"}

// WriteSVG draws the summary as grouped bars: per query, per mode a pale
// bar for the median time to first row and a solid one for the median
// total. The time axis is logarithmic because TPC-H times span three
// orders of magnitude.
func WriteSVG(w io.Writer, s *Summary, title string) error {
	const (
		barW, barGap, groupGap = 7.0, 1.0, 14.0
		left, right, top       = 70.0, 20.0, 60.0
		plotH, bottom          = 360.0, 80.0
	)
	groupW := float64(len(s.Modes))*2*(barW+barGap) + groupGap
	width := left + right + math.Max(groupW*float64(len(s.Queries)), 300)
	height := top + plotH + bottom
	lo, hi := logRange(s)
	y := func(v float64) float64 {
		if v <= 0 {
			return top + plotH
		}
		f := (math.Log10(v) - lo) / (hi - lo)
		return top + plotH - math.Max(0, math.Min(1, f))*plotH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(title))
	// Grid lines at each power of ten.
	for e := math.Ceil(lo); e <= hi+1e-9; e++ {
		yy := y(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, width-right, yy, yy)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, yy, esc(msLabel(math.Pow(10, e))))
	}
	fmt.Fprintf(&b, `<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">median time (log scale)</text>`+"\n", top+plotH/2)
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`+"\n", left, width-right, top+plotH, top+plotH)
	for qi, q := range s.Queries {
		x0 := left + groupGap/2 + float64(qi)*groupW
		for mi, m := range s.Modes {
			c, ok := s.Cells[q][m]
			if !ok {
				continue
			}
			color := modeColors[mi%len(modeColors)]
			x := x0 + float64(mi)*2*(barW+barGap)
			for k, v := range []float64{c.TTFRMs, c.TotalMs} {
				opacity := "0.45"
				what := "time to first row"
				if k == 1 {
					opacity, what = "1", "total"
				}
				bx := x + float64(k)*(barW+barGap)
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%s"><title>%s %s %s: %.1f ms</title></rect>`+"\n",
					bx, y(v), barW, top+plotH-y(v), color, opacity, Label(s.Set, q), esc(m), what, v)
			}
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x0+(groupW-groupGap)/2, top+plotH+16, Label(s.Set, q))
	}
	// Legend: one swatch per mode, then what pale and solid mean.
	lx, ly := left, top+plotH+44
	for mi, m := range s.Modes {
		color := modeColors[mi%len(modeColors)]
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="%s"/>`+"\n", lx, ly, color)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", lx+16, ly+10, esc(m))
		lx += 30 + 8*float64(len(m))
	}
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="#888" fill-opacity="0.45"/>`+"\n", lx+10, ly)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">pale: time to first row</text>`+"\n", lx+26, ly+10)
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="#888"/>`+"\n", lx+190, ly)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">solid: total</text>`+"\n", lx+206, ly+10)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// logRange is the decades the chart spans: from the power of ten at or
// below the smallest time to the one at or above the largest.
func logRange(s *Summary) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, row := range s.Cells {
		for _, c := range row {
			for _, v := range []float64{c.TTFRMs, c.TotalMs} {
				if v > 0 {
					lo, hi = math.Min(lo, math.Log10(v)), math.Max(hi, math.Log10(v))
				}
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func msLabel(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%g s", v/1000)
	}
	return fmt.Sprintf("%g ms", v)
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
