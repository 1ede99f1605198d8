package repl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/render"
	"sluice/session"
	"sluice/sql"
)

// Runner executes statements and dot commands and renders their results.
// It holds the shell's output settings, which dot commands change.
type Runner struct {
	Session *session.Session
	Out     io.Writer // query results
	Err     io.Writer // errors, status lines, timings
	Format  string
	// MaxRows limits rows drawn by the table format (0: all).
	MaxRows int
	// MaxWidth caps table column widths (0: render's default; negative:
	// no cap).
	MaxWidth int
	// TermWidth, when set, returns the width of the terminal results are
	// drawn on; with Fit, a wider table hides middle columns, or prints
	// one line per column (render.Options.TermWidth).
	TermWidth func() int
	Fit       bool
	NullValue string
	Timer     bool
	Echo      bool
	Quiet     bool // no footers
	// Progress shows a progress line on Err for long statements (terminals).
	Progress bool
	// ContinueOnError keeps running a script after a failed statement.
	ContinueOnError bool
	// Verbose prints, under an error of the query itself, where it
	// happened (stage, task, executor, operators).
	Verbose bool

	outFile *os.File // set by .output FILE
	stdout  io.Writer
	compare bool // .mode compare
	// formatBeforeExpanded is the format \x on replaced, for \x off.
	formatBeforeExpanded string
	// pending is the statement typed so far at the prompt, before the
	// current line (for completing aliases it defines).
	pending string
	// lastErrDetail is where the last failed statement's error happened,
	// if it says (.explain alone shows it).
	lastErrDetail string
	// lastReport is the stage report of the last cluster query (.explain).
	lastReport string
}

// reportedError is an error already printed where it happened (a
// statement of a script run by .read): it still fails the command that
// ran it, but is not printed again.
type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// ErrExit is returned by RunStatement for .quit/.exit.
var ErrExit = errors.New("exit requested")

// RunScript runs every statement of text in order. It stops at the first
// error (already printed to Err) unless ContinueOnError, and returns the
// first error. source names the script in messages ("-c", a file, "stdin").
func (r *Runner) RunScript(ctx context.Context, source, text string) error {
	return r.RunReader(ctx, source, strings.NewReader(text))
}

// scriptChunk is how much of a script is read at a time: a line longer
// than this reaches the splitter in pieces, so an endless line costs no
// more memory than the statement size limit.
const scriptChunk = 64 << 10

// RunReader runs every statement read from in, as RunScript does, reading
// as it goes rather than the whole input first. Input the splitter refuses
// (a NUL byte, a statement over the size limit) stops the script even with
// ContinueOnError: what follows cannot be split reliably.
func (r *Runner) RunReader(ctx context.Context, source string, in io.Reader) error {
	sp := NewSplitter()
	var first error
	run := func(p Piece) bool {
		if r.Echo {
			fmt.Fprintln(r.Out, p.SQL+terminator(p.SQL))
		}
		err := r.RunStatement(ctx, p)
		if errors.Is(err, ErrExit) {
			first = err
			return false
		}
		if err != nil {
			r.PrintError(source, p, err)
			if first == nil {
				first = err
			}
			return r.ContinueOnError
		}
		return true
	}
	br := bufio.NewReaderSize(in, scriptChunk)
	lineStart := true
	for {
		chunk, rerr := br.ReadSlice('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, bufio.ErrBufferFull) {
			err := fmt.Errorf("reading %s: %w", source, rerr)
			fmt.Fprintf(r.Err, "Error: %v\n", err)
			return err
		}
		line := string(chunk)
		wholeLine := lineStart && (rerr == nil || errors.Is(rerr, io.EOF))
		lineStart = rerr == nil
		// Shell commands stand alone on a line, outside any pending
		// statement.
		cmd, isCmd := shellCommand(line)
		if _, pending := sp.Pending(); wholeLine && !pending && isCmd {
			p := Piece{SQL: cmd, Line: sp.line}
			sp.line++
			if !run(p) {
				return first
			}
		} else {
			pieces, err := sp.Feed(line)
			for _, p := range pieces {
				if !run(p) {
					return first
				}
			}
			if err != nil {
				fmt.Fprintf(r.Err, "Error: %s: %v\n", source, err)
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
	}
	if p, ok := sp.Pending(); ok { // a last statement may omit its `;`
		run(p)
	}
	return first
}

func terminator(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, `\`) {
		return ""
	}
	return ";"
}

// RunStatement executes one statement or dot command and renders its result.
func (r *Runner) RunStatement(ctx context.Context, p Piece) error {
	if strings.HasPrefix(p.SQL, ".") || strings.HasPrefix(p.SQL, `\`) {
		return r.dot(ctx, p.SQL)
	}
	if r.compare && isQuery(p.SQL) {
		return r.runCompare(ctx, p)
	}
	_, err := r.render(ctx, p, nil)
	return err
}

// render runs a statement and renders its result; observe (if set) sees
// every batch before it is rendered. It returns the query's statistics
// (zero for statements without a query).
func (r *Runner) render(ctx context.Context, p Piece, observe func(arrow.RecordBatch)) (session.Stats, error) {
	start := time.Now()
	r.lastErrDetail = ""
	prog := r.startProgress()
	defer prog.stop()
	defer r.showNotices()()
	res, err := r.Session.Execute(ctx, p.SQL)
	if err != nil {
		return session.Stats{}, err
	}
	defer res.Close()
	if res.Schema == nil {
		r.timing(start, time.Time{})
		return session.Stats{}, nil
	}
	if isExplain(p.SQL) && isPlanSchema(res.Schema) {
		err := r.renderPlans(ctx, res)
		r.timing(start, time.Time{})
		return session.Stats{}, err
	}
	opts := render.Options{NullValue: r.NullValue, MaxRows: r.MaxRows, MaxWidth: r.MaxWidth, NoFooter: r.Quiet}
	if r.Fit && r.TermWidth != nil && r.outFile == nil {
		opts.TermWidth = r.TermWidth()
	}
	w, err := render.New(r.Format, r.Out, opts)
	if err != nil {
		return session.Stats{}, err
	}
	if err := w.Begin(res.Schema); err != nil {
		return session.Stats{}, err
	}
	var firstRow time.Time
	var rows int64
	var counter *rowCounter
	defer func() { counter.stop() }()
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			counter.stop()
			if a, ok := w.(render.Aborter); ok {
				_ = a.Abort()
			}
			if ctx.Err() != nil {
				return session.Stats{}, fmt.Errorf("query cancelled")
			}
			return session.Stats{}, err
		}
		if firstRow.IsZero() {
			firstRow = time.Now()
			prog.stop()
		}
		if observe != nil {
			observe(b)
		}
		rows += b.NumRows()
		err = w.Write(b)
		b.Release()
		if err != nil {
			return session.Stats{}, err
		}
		// Past .maxrows the table draws nothing more: say on stderr that
		// rows still arrive, so a long result is not mistaken for a hang.
		if counter == nil && r.Progress && r.Format == "table" && r.MaxRows > 0 && rows > int64(r.MaxRows) {
			counter = r.startRowCounter(start, r.MaxRows)
		}
		counter.set(rows)
	}
	counter.stop()
	if _, err = w.End(); err != nil {
		return session.Stats{}, err
	}
	r.timing(start, firstRow)
	res.Close()
	var st session.Stats
	if s := res.Stats(); s != nil {
		st = *s
		if st.Report != "" {
			r.lastReport = st.Report
		}
	}
	return st, nil
}

func (r *Runner) timing(start, firstRow time.Time) {
	if !r.Timer {
		return
	}
	total := time.Since(start)
	if firstRow.IsZero() {
		fmt.Fprintf(r.Err, "Time: total %.1f ms\n", ms(total))
		return
	}
	fmt.Fprintf(r.Err, "Time: first row %.1f ms, total %.1f ms\n", ms(firstRow.Sub(start)), ms(total))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// PrintError writes err for statement p of source to r.Err: syntax and
// binder errors show the line and column in the script and mark the spot.
func (r *Runner) PrintError(source string, p Piece, err error) {
	if errors.As(err, new(*reportedError)) {
		return
	}
	var d interface{ ErrorDetail() string }
	if errors.As(err, &d) {
		r.lastErrDetail = d.ErrorDetail()
		defer func() {
			if r.Verbose {
				fmt.Fprintf(r.Err, "Detail: %s\n", r.lastErrDetail)
			}
		}()
	}
	var se *sql.Error
	if errors.As(err, &se) && se.Line > 0 {
		line := p.Line + se.Line - 1
		fmt.Fprintf(r.Err, "Error: %s\n", se.Msg)
		if source != "" {
			fmt.Fprintf(r.Err, "  at %s line %d, column %d\n", source, line, se.Column)
		} else {
			fmt.Fprintf(r.Err, "  at line %d, column %d\n", line, se.Column)
		}
		lines := strings.Split(p.SQL, "\n")
		if se.Line-1 < len(lines) {
			src := lines[se.Line-1]
			fmt.Fprintf(r.Err, "  %s\n  %s^\n", src, strings.Repeat(" ", max(0, se.Column-1)))
		}
		if se.Hint != "" {
			fmt.Fprintf(r.Err, "Hint: %s\n", se.Hint)
		}
		return
	}
	fmt.Fprintf(r.Err, "Error: %v\n", err)
}

// planFormats are the formats for people, in which EXPLAIN prints its plans
// as plain text, as .explain does, rather than as cells cut to the width.
var planFormats = map[string]bool{"table": true, "markdown": true}

// isExplain reports whether a statement, past its leading comments, is an
// EXPLAIN.
func isExplain(text string) bool {
	for {
		text = strings.TrimSpace(text)
		switch {
		case strings.HasPrefix(text, "--"):
			_, rest, ok := strings.Cut(text, "\n")
			if !ok {
				return false
			}
			text = rest
			continue
		case strings.HasPrefix(text, "/*"):
			_, rest, ok := strings.Cut(text[2:], "*/")
			if !ok {
				return false
			}
			text = rest
			continue
		}
		f := strings.Fields(text)
		return len(f) > 0 && strings.EqualFold(f[0], "explain")
	}
}

// isPlanSchema reports whether s is EXPLAIN's result: (plan_type, plan),
// both text.
func isPlanSchema(s *arrow.Schema) bool {
	return s.NumFields() == 2 && s.Field(0).Name == "plan_type" && s.Field(1).Name == "plan" &&
		s.Field(0).Type.ID() == arrow.STRING && s.Field(1).Type.ID() == arrow.STRING
}

// renderPlans prints EXPLAIN's rows as titled blocks of plain text.
// In the other formats, as psql prints EXPLAIN, each line of that text is
// a row of one column, "plan", so the plans stay plain text lines and
// still parse as the format.
func (r *Runner) renderPlans(ctx context.Context, res *session.Result) error {
	var text strings.Builder
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		kinds, plans := b.Column(0).(*array.String), b.Column(1).(*array.String)
		for i := 0; i < int(b.NumRows()); i++ {
			writePlan(&text, kinds.Value(i), plans.Value(i))
		}
		b.Release()
	}
	if planFormats[r.Format] {
		_, err := io.WriteString(r.Out, text.String())
		return err
	}
	var lines []string
	for _, l := range strings.Split(text.String(), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.AppendValues(lines, nil)
	col := sb.NewArray()
	sb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "plan", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(lines)))
	col.Release()
	defer b.Release()
	w, err := render.New(r.Format, r.Out, render.Options{NullValue: r.NullValue, NoFooter: true})
	if err != nil {
		return err
	}
	if err := w.Begin(schema); err != nil {
		return err
	}
	if err := w.Write(b); err != nil {
		return err
	}
	_, err = w.End()
	return err
}

// writePlan writes one plan under its kind as a title ("physical plan:").
func writePlan(w io.Writer, kind, plan string) {
	fmt.Fprintf(w, "%s:\n%s\n\n", strings.ReplaceAll(kind, "_", " "), plan)
}

// isQuery reports whether a statement returns rows from the cluster (a
// SELECT, WITH or VALUES), which .mode compare runs in both modes.
func isQuery(text string) bool {
	f := strings.Fields(strings.ToLower(text))
	return len(f) > 0 && (f[0] == "select" || f[0] == "with" || f[0] == "values" || strings.HasPrefix(f[0], "("))
}
