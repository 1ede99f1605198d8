package repl

import (
	"context"
	"errors"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow"
	"io"
	"sort"
	"strings"
	"time"

	"sluice/render"
	"sluice/session"
)

// dotMode shows or switches the execution mode, or turns compare on/off.
func (r *Runner) dotMode(ctx context.Context, args []string) error {
	switch {
	case len(args) == 0:
		mode, _ := r.Session.Settings.Get("execution.mode")
		if r.compare {
			fmt.Fprintf(r.Err, "compare (each query runs blocking, then pipelined)\n")
			return nil
		}
		fmt.Fprintln(r.Err, mode)
		return nil
	case len(args) == 1 && (args[0] == "blocking" || args[0] == "pipelined" || args[0] == "auto"):
		r.compare = false
		return r.Session.Settings.Set("execution.mode", args[0])
	case len(args) == 1 && args[0] == "compare":
		r.compare = true
		return nil
	case len(args) == 2 && args[0] == "compare" && args[1] == "off":
		r.compare = false
		return nil
	case len(args) == 1 && isFormat(args[0]):
		// sqlite3's and duckdb's .mode sets the output format.
		r.Format = strings.ToLower(args[0])
		fmt.Fprintf(r.Err, "output format %s (as .format %s); .mode also switches the execution mode: .mode blocking|pipelined|auto|compare\n", r.Format, r.Format)
		return nil
	}
	return fmt.Errorf("usage: .mode [blocking|pipelined|auto|compare|compare off], or an output format as .format takes: %s", strings.Join(render.Formats, ", "))
}

// isFormat reports whether name is an output format.
func isFormat(name string) bool {
	for _, f := range render.Formats {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

// modeRun is one run of a query in one mode.
type modeRun struct {
	mode  string
	stats session.Stats
	rows  []string
	err   error
}

// runCompare runs a query in both modes: blocking first, collected
// silently, then pipelined, rendered as usual; then it prints the two runs
// side by side on stderr.
func (r *Runner) runCompare(ctx context.Context, p Piece) error {
	orig, _ := r.Session.Settings.Get("execution.mode")
	// A closure: a cluster session replaces its Settings with each
	// statement's, so the object to restore is the one current then.
	defer func() { _ = r.Session.Settings.Set("execution.mode", orig) }()
	if err := r.Session.Settings.Set("execution.mode", "blocking"); err != nil {
		return err
	}
	blocking := modeRun{mode: "blocking"}
	blocking.rows, blocking.stats, blocking.err = r.collect(ctx, p.SQL)
	if ctx.Err() != nil {
		return fmt.Errorf("query cancelled")
	}
	if err := r.Session.Settings.Set("execution.mode", "pipelined"); err != nil {
		return err
	}
	pipelined := modeRun{mode: "pipelined"}
	pipelined.stats, pipelined.err = r.render(ctx, p, func(b arrow.RecordBatch) {
		pipelined.rows = append(pipelined.rows, rowStrings(b)...)
	})
	if ctx.Err() != nil {
		return fmt.Errorf("query cancelled")
	}
	r.printCompare(p.SQL, []modeRun{blocking, pipelined})
	if choice := r.autoChoice(ctx, p.SQL); choice != "" {
		fmt.Fprintln(r.Err, choice)
	}
	if pipelined.err != nil {
		return pipelined.err
	}
	return blocking.err
}

// autoChoice is what auto mode would choose for the query now, from the
// execution_mode line of its EXPLAIN in auto mode ("" in process, or if
// the EXPLAIN fails: compare's runs are shown anyway).
func (r *Runner) autoChoice(ctx context.Context, text string) string {
	orig, _ := r.Session.Settings.Get("execution.mode")
	// A closure: a cluster session replaces its Settings with each
	// statement's, so the object to restore is the one current then.
	defer func() { _ = r.Session.Settings.Set("execution.mode", orig) }()
	if err := r.Session.Settings.Set("execution.mode", "auto"); err != nil {
		return ""
	}
	lines, _, err := r.collect(ctx, "EXPLAIN "+text)
	if err != nil {
		return ""
	}
	for _, l := range lines {
		if kind, plan, ok := strings.Cut(l, "\x1f"); ok && kind == "execution_mode" {
			return "auto would run it " + strings.TrimPrefix(plan, "auto: ")
		}
	}
	return ""
}

// collect runs a query and returns its rows as text lines.
func (r *Runner) collect(ctx context.Context, text string) ([]string, session.Stats, error) {
	defer r.showNotices()()
	res, err := r.Session.Execute(ctx, text)
	if err != nil {
		return nil, session.Stats{}, err
	}
	var rows []string
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			res.Close()
			return nil, session.Stats{}, err
		}
		rows = append(rows, rowStrings(b)...)
		b.Release()
	}
	res.Close()
	var st session.Stats
	if s := res.Stats(); s != nil {
		st = *s
	}
	return rows, st, nil
}

// rowStrings renders a batch's rows as comparable lines.
func rowStrings(b arrow.RecordBatch) []string {
	out := make([]string, 0, b.NumRows())
	for i := 0; i < int(b.NumRows()); i++ {
		vals := make([]string, b.NumCols())
		for c := range vals {
			v, ok := render.FormatValue(b.Column(c), i)
			if !ok {
				v = "\x00NULL"
			}
			vals[c] = v
		}
		out = append(out, strings.Join(vals, "\x1f"))
	}
	return out
}

// hasOrderBy reports whether the statement orders its result (then the two
// runs must agree row by row, not only as multisets).
func hasOrderBy(text string) bool {
	return strings.Contains(strings.ToLower(strings.Join(strings.Fields(text), " ")), "order by")
}

func (r *Runner) printCompare(text string, runs []modeRun) {
	fmt.Fprintf(r.Err, "%-22s %14s %14s\n", "", runs[0].mode, runs[1].mode)
	row := func(label string, f func(modeRun) string) {
		fmt.Fprintf(r.Err, "%-22s %14s %14s\n", label, f(runs[0]), f(runs[1]))
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	row("time to first row", func(m modeRun) string {
		if m.err != nil {
			return "error"
		}
		return ms(m.stats.FirstRow)
	})
	row("total time", func(m modeRun) string {
		if m.err != nil {
			return "error"
		}
		return ms(m.stats.Total)
	})
	row("rows", func(m modeRun) string { return fmt.Sprint(len(m.rows)) })
	row("stages", func(m modeRun) string { return fmt.Sprint(m.stats.Stages) })
	row("tasks", func(m modeRun) string { return fmt.Sprint(m.stats.Tasks) })
	for _, m := range runs {
		if m.err != nil {
			fmt.Fprintf(r.Err, "%s failed: %v\n", m.mode, m.err)
		}
	}
	if runs[0].err != nil || runs[1].err != nil {
		return
	}
	ordered := hasOrderBy(text)
	a, b := runs[0].rows, runs[1].rows
	if !ordered {
		a, b = append([]string(nil), a...), append([]string(nil), b...)
		sort.Strings(a)
		sort.Strings(b)
	}
	same := len(a) == len(b)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == b[i]
	}
	how := "as multisets"
	if ordered {
		how = "in order"
	}
	if same {
		fmt.Fprintf(r.Err, "results agree (%s)\n", how)
	} else {
		fmt.Fprintf(r.Err, "RESULTS DIFFER (%s)\n", how)
	}
}

// showNotices prints the cluster's notices about the statement about to
// run (a retry after a lost executor) on stderr as they come; the
// returned function stops it.
func (r *Runner) showNotices() func() {
	r.Session.OnNotice = func(msg string) { fmt.Fprintf(r.Err, "NOTICE: %s\n", msg) }
	return func() { r.Session.OnNotice = nil }
}
