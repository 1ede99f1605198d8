package bench

import (
	"fmt"
	"io"
	"strings"
)

// Cell is one query's medians in one mode.
type Cell struct {
	TTFRMs, TotalMs float64
	Rows            int64
}

// Summary holds the per query and mode medians of one query set of a
// report.
type Summary struct {
	Set     string
	Modes   []string
	Queries []int
	Cells   map[int]map[string]Cell
}

// Ratio compares two modes: Num's time divided by Den's.
type Ratio struct{ Num, Den string }

// Summarize takes the medians of r's runs of set per query and mode.
func Summarize(r *Report, set string) *Summary {
	s := &Summary{Set: set, Modes: r.Modes(), Queries: r.Queries(set), Cells: map[int]map[string]Cell{}}
	type key struct {
		q    int
		mode string
	}
	ttfr, total := map[key][]float64{}, map[key][]float64{}
	rows := map[key]int64{}
	for _, run := range r.Runs {
		if run.Set != set {
			continue
		}
		k := key{run.Query, run.Mode}
		ttfr[k] = append(ttfr[k], run.TTFRMs)
		total[k] = append(total[k], run.TotalMs)
		rows[k] = run.Rows
	}
	for k := range total {
		if s.Cells[k.q] == nil {
			s.Cells[k.q] = map[string]Cell{}
		}
		s.Cells[k.q][k.mode] = Cell{TTFRMs: Median(ttfr[k]), TotalMs: Median(total[k]), Rows: rows[k]}
	}
	return s
}

// Ratios are the comparisons worth printing for the summary's modes:
// pipelined against blocking and against DuckDB when those ran, otherwise
// every mode against the first.
func (s *Summary) Ratios() []Ratio {
	has := func(m string) bool { return contains(s.Modes, m) }
	var out []Ratio
	if has("pipelined") && has("blocking") {
		out = append(out, Ratio{"pipelined", "blocking"})
	}
	if has("pipelined") && has("duckdb") {
		out = append(out, Ratio{"pipelined", "duckdb"})
	}
	if has(ModeInProcess) && has("duckdb") {
		out = append(out, Ratio{ModeInProcess, "duckdb"})
	}
	if len(out) == 0 {
		for _, m := range s.Modes[min(1, len(s.Modes)):] {
			out = append(out, Ratio{m, s.Modes[0]})
		}
	}
	return out
}

// ratio is num/den, or 0 when either is missing.
func ratio(num, den float64) float64 {
	if num <= 0 || den <= 0 {
		return 0
	}
	return num / den
}

// WriteTable writes the summary as a Markdown table: per query each mode's
// median TTFR and total (ms), the rows, and the ratios; then the sums and
// geometric means over the queries.
func (s *Summary) WriteTable(w io.Writer) error {
	var b strings.Builder
	ratios := s.Ratios()
	b.WriteString("| query |")
	sep := "|---:|"
	for _, m := range s.Modes {
		fmt.Fprintf(&b, " %s TTFR ms | %s total ms |", m, m)
		sep += "---:|---:|"
	}
	b.WriteString(" rows |")
	sep += "---:|"
	for _, r := range ratios {
		fmt.Fprintf(&b, " %s/%s TTFR | %s/%s total |", short(r.Num), short(r.Den), short(r.Num), short(r.Den))
		sep += "---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	sumTTFR, sumTotal := map[string]float64{}, map[string]float64{}
	gmTTFR, gmTotal := map[string][]float64{}, map[string][]float64{}
	rTTFR, rTotal := make([][]float64, len(ratios)), make([][]float64, len(ratios))
	// A ratio of sums counts only the queries both of its modes ran.
	rSumTTFR, rSumTotal := make([][2]float64, len(ratios)), make([][2]float64, len(ratios))
	for _, q := range s.Queries {
		fmt.Fprintf(&b, "| %s |", Label(s.Set, q))
		var rows int64 = -1
		for _, m := range s.Modes {
			c, ok := s.Cells[q][m]
			if !ok {
				b.WriteString(" – | – |")
				continue
			}
			if rows < 0 {
				rows = c.Rows
			}
			fmt.Fprintf(&b, " %s | %s |", fmtMs(c.TTFRMs), fmtMs(c.TotalMs))
			sumTTFR[m] += c.TTFRMs
			sumTotal[m] += c.TotalMs
			gmTTFR[m] = append(gmTTFR[m], c.TTFRMs)
			gmTotal[m] = append(gmTotal[m], c.TotalMs)
		}
		fmt.Fprintf(&b, " %d |", max(rows, 0))
		for i, r := range ratios {
			n, okN := s.Cells[q][r.Num]
			d, okD := s.Cells[q][r.Den]
			rt, rl := ratio(n.TTFRMs, d.TTFRMs), ratio(n.TotalMs, d.TotalMs)
			if okN && okD {
				rSumTTFR[i][0] += n.TTFRMs
				rSumTTFR[i][1] += d.TTFRMs
				rSumTotal[i][0] += n.TotalMs
				rSumTotal[i][1] += d.TotalMs
			}
			rTTFR[i] = append(rTTFR[i], rt)
			rTotal[i] = append(rTotal[i], rl)
			fmt.Fprintf(&b, " %s | %s |", fmtRatio(rt), fmtRatio(rl))
		}
		b.WriteString("\n")
	}
	b.WriteString("| **sum** |")
	for _, m := range s.Modes {
		fmt.Fprintf(&b, " %s | %s |", fmtMs(sumTTFR[m]), fmtMs(sumTotal[m]))
	}
	b.WriteString(" |")
	for i := range ratios {
		fmt.Fprintf(&b, " %s | %s |", fmtRatio(ratio(rSumTTFR[i][0], rSumTTFR[i][1])), fmtRatio(ratio(rSumTotal[i][0], rSumTotal[i][1])))
	}
	b.WriteString("\n| **geomean** |")
	for _, m := range s.Modes {
		fmt.Fprintf(&b, " %s | %s |", fmtMs(GeoMean(gmTTFR[m])), fmtMs(GeoMean(gmTotal[m])))
	}
	b.WriteString(" |")
	for i := range ratios {
		fmt.Fprintf(&b, " %s | %s |", fmtRatio(GeoMean(rTTFR[i])), fmtRatio(GeoMean(rTotal[i])))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// busyOtherCPUs is how much CPU, on average, other processes may use
// during a suite before its report warns that the machine was not idle.
const busyOtherCPUs = 0.25

// WriteExtras writes the latency and memory measurements of r, if any.
func WriteExtras(w io.Writer, r *Report) error {
	var b strings.Builder
	if len(r.Latency) > 0 {
		b.WriteString("\n| latency | mode | runs | median ms | p99 ms |\n|---|---|---:|---:|---:|\n")
		for _, l := range r.Latency {
			fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.2f |\n", l.Name, l.Mode, l.Count, l.P50Ms, l.P99Ms)
		}
	}
	if len(r.Memory) > 0 {
		b.WriteString("\n| mode | peak RSS of the process (MiB; see the notes) | peak queued exchange bytes (MiB) | peak reserved memory per executor (MiB) | CPUs other processes kept busy meanwhile |\n|---|---:|---:|---:|---:|\n")
		var busy []string
		for _, m := range r.Memory {
			per := make([]string, len(m.PeakReservedBytes))
			for i, n := range m.PeakReservedBytes {
				per[i] = fmt.Sprintf("%.0f", float64(n)/(1<<20))
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.1f | %s | %.2f |\n", m.Mode, float64(m.PeakRSSBytes)/(1<<20), float64(m.PeakQueuedBytes)/(1<<20), strings.Join(per, ", "), m.OtherCPUs)
			if m.OtherCPUs > busyOtherCPUs {
				busy = append(busy, fmt.Sprintf("%s (%.2f)", m.Mode, m.OtherCPUs))
			}
		}
		if len(busy) > 0 {
			fmt.Fprintf(&b, "\nWarning: other processes kept more than %.2f of a CPU busy on average during these suites: %s. Their times include that work's and are not comparable with an idle machine's.\n", busyOtherCPUs, strings.Join(busy, ", "))
		}
	}
	if len(r.Checks) > 0 {
		pass, exact := 0, 0
		var wrong []string
		for _, c := range r.Checks {
			if c.Pass {
				pass++
			} else {
				wrong = append(wrong, fmt.Sprintf("- %s: %s", c.Mode, c.Detail))
			}
			if c.Exact {
				exact++
			}
		}
		fmt.Fprintf(&b, "\nAnswers checked against %s by the TPC-H kit's rules: %d of %d query runs pass (%d exactly to 2 decimals).\n", r.Answers, pass, len(r.Checks), exact)
		for _, w := range wrong {
			b.WriteString(w + "\n")
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\nSkipped (the warm-up run failed, so the query has no time in that mode):\n\n")
		for _, k := range r.Skipped {
			msg := k.Error
			if len(msg) > 160 {
				msg = msg[:160] + "…"
			}
			fmt.Fprintf(&b, "- %s %s: %s\n", Label(k.Set, k.Query), k.Mode, strings.ReplaceAll(msg, "\n", " "))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func short(mode string) string {
	switch mode {
	case "pipelined":
		return "pip"
	case "blocking":
		return "blk"
	case "duckdb":
		return "duck"
	case ModeInProcess:
		return "proc"
	}
	return mode
}

func fmtMs(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func fmtRatio(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}
