package bench

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

func sampleReport() *Report {
	r := &Report{Suite: "tpch", ModesOrder: []string{"blocking", "pipelined"}}
	for _, q := range []int{1, 3} {
		for i, m := range []string{"blocking", "pipelined", "duck<db>"} {
			for run := 1; run <= 3; run++ {
				r.Runs = append(r.Runs, Run{Query: q, Mode: m, Run: run, TTFRMs: float64(10 * (3 - i) * run), TotalMs: float64(100 * (3 - i) * q * run), Rows: int64(q)})
			}
		}
	}
	return r
}

// TestWriteSVG parses the chart as XML and counts its bars and labels.
func TestWriteSVG(t *testing.T) {
	s := Summarize(sampleReport(), SetTPCH)
	var out strings.Builder
	if err := WriteSVG(&out, s, "TPC-H & friends"); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(out.String()))
	rects, texts := 0, []string{}
	var inText bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, out.String())
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "rect" {
				rects++
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	// Background, 2 queries x 3 modes x 2 bars, 3 mode swatches, 2 key swatches.
	if want := 1 + 12 + 3 + 2; rects != want {
		t.Errorf("rects = %d, want %d", rects, want)
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"TPC-H & friends", "q1", "q3", "blocking", "pipelined", "duck<db>", "100 ms", "1 s"} {
		if !strings.Contains(joined, want) {
			t.Errorf("chart has no label %q; labels: %s", want, joined)
		}
	}
}

func TestSummaryTable(t *testing.T) {
	s := Summarize(sampleReport(), SetTPCH)
	if c := s.Cells[3]["blocking"]; c.TTFRMs != 60 || c.TotalMs != 1800 || c.Rows != 3 {
		t.Errorf("q3 blocking = %+v, want medians 60 and 1800 over 3 rows", c)
	}
	var out strings.Builder
	if err := s.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// pipelined/blocking: TTFR 40/60 and total 1200/1800 for q3.
	for _, want := range []string{"| q3 | 60.0 | 1800 | 40.0 | 1200 |", "pip/blk TTFR", "| 0.67 | 0.67 |", "**geomean**"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
