package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"sluice/repl"
	"sluice/session"
)

// Query is one benchmark query: its set, its number and its script, which
// may hold several statements (TPC-H q15 creates and drops a view around
// its SELECT).
type Query struct {
	Set  string
	N    int
	Text string
}

// Measurement is how one statement ran, measured by the client from
// submission: time to the first batch, time to end of stream, rows read.
type Measurement struct {
	TTFR, Total time.Duration
	Rows        int64
}

// RunScript runs every statement of text on sess and returns the
// measurement of the last one that returned rows; the other statements
// (views, SET) run untimed. It fails if no statement returned rows.
func RunScript(ctx context.Context, sess *session.Session, text string) (Measurement, error) {
	return runScript(ctx, sess, text, false)
}

// RunScriptWhole runs every statement of text on sess and measures them
// all: the rows of every statement that returned rows, the first one's
// time to first row, and the total from the first submission to the end
// of the last statement. TPC-DS scripts that hold several queries (q14,
// q23, q24, q39) are timed whole this way, as DuckDB's peer times them.
func RunScriptWhole(ctx context.Context, sess *session.Session, text string) (Measurement, error) {
	return runScript(ctx, sess, text, true)
}

func runScript(ctx context.Context, sess *session.Session, text string, whole bool) (Measurement, error) {
	sp := repl.NewSplitter()
	pieces, err := sp.Feed(text)
	if err != nil {
		return Measurement{}, err
	}
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p)
	}
	var m Measurement
	timed := false
	start := time.Now()
	for _, p := range pieces {
		got, rows, err := runStatement(ctx, sess, p.SQL)
		if err != nil {
			return Measurement{}, fmt.Errorf("line %d: %w", p.Line, err)
		}
		switch {
		case !rows:
		case whole && timed:
			m.Rows += got.Rows
		case whole:
			// The first statement's first row, counted from the script's
			// start (statements before it, such as SET, included).
			m, timed = got, true
			m.TTFR = time.Since(start) - got.Total + got.TTFR
		default:
			m, timed = got, true
		}
	}
	if whole && timed {
		m.Total = time.Since(start)
	}
	if !timed {
		return Measurement{}, errors.New("no statement returned rows")
	}
	return m, nil
}

// runStatement runs one statement, reads its rows to the end and reports
// whether it had a row schema.
func runStatement(ctx context.Context, sess *session.Session, sql string) (Measurement, bool, error) {
	start := time.Now()
	res, err := sess.Execute(ctx, sql)
	if err != nil {
		return Measurement{}, false, err
	}
	defer res.Close()
	var m Measurement
	first := false
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Measurement{}, false, err
		}
		if !first {
			m.TTFR, first = time.Since(start), true
		}
		m.Rows += b.NumRows()
		b.Release()
	}
	m.Total = time.Since(start)
	if !first {
		// No batch at all: the first (absent) row is known at the end.
		m.TTFR = m.Total
	}
	return m, res.Schema != nil, nil
}

// ModeInProcess is the suite mode that runs queries on InProcess, the
// engine in the benchmark's own process, instead of the cluster.
const ModeInProcess = "in-process"

// ModePipelinedLazy is the suite mode that runs queries pipelined with
// execution.lazy_producers on, to compare with eager producers.
const ModePipelinedLazy = "pipelined-lazy"

// ModePipelinedMux is the suite mode that runs queries pipelined with
// exchange.multiplex on; ModePipelinedNoMux with it off. Run in one suite
// they compare the two in the same moment.
const (
	ModePipelinedMux   = "pipelined-mux"
	ModePipelinedNoMux = "pipelined-nomux"
)

// setMode makes sess run queries in the suite mode mode. The settings a
// mode does not name keep the session's values.
func setMode(sess *session.Session, mode string) error {
	lazy := "false"
	mux := ""
	switch mode {
	case ModePipelinedLazy:
		mode, lazy = "pipelined", "true"
	case ModePipelinedMux:
		mode, mux = "pipelined", "on"
	case ModePipelinedNoMux:
		mode, mux = "pipelined", "off"
	}
	if err := sess.Settings.Set("execution.lazy_producers", lazy); err != nil {
		return err
	}
	if mux != "" {
		if err := sess.Settings.Set("exchange.multiplex", mux); err != nil {
			return err
		}
	}
	return sess.Settings.Set("execution.mode", mode)
}

// Suite runs queries in each mode on one session.
type Suite struct {
	Session *session.Session
	// InProcess, when set, is the session ModeInProcess runs on.
	InProcess *session.Session
	Queries   []Query
	// Modes are values of the execution.mode setting (or ModeInProcess,
	// or ModePipelinedLazy), run in this order.
	Modes []string
	// Whole times every statement of a script (RunScriptWhole) instead of
	// its last query only.
	Whole bool
	// SkipFailing records a query whose warm-up run fails in a mode as
	// skipped there (with its error) and goes on; otherwise the suite stops.
	SkipFailing bool
	// Runs is how many timed runs each query gets per mode, after one
	// warm-up run that is not recorded.
	Runs int
	// Interleave runs each query's modes in turn (its warm-ups, then run
	// 1 in every mode, run 2 in every mode, ...) instead of one mode's
	// whole suite after another's, so that the modes of a query are
	// timed in the same minute of the machine's drift. Memory figures
	// are then per mode over its runs only.
	Interleave bool
	// Progress, when set, receives a line per query and mode.
	Progress io.Writer
	// QueuePeak, when set, returns the cluster's peak queued exchange bytes
	// since ResetQueuePeak; both are called once per mode.
	QueuePeak      func() int64
	ResetQueuePeak func()
	// ReservedPeaks, when set, returns each executor's peak reserved
	// memory since ResetReservedPeaks; both are called once per mode.
	ReservedPeaks      func() []int64
	ResetReservedPeaks func()
	// Answers, when set, is a directory of TPC-H answers (qN.out, the
	// kit's format): each TPC-H query's warm-up run in every mode is
	// compared with its answer, and the verdicts are in Checks.
	Answers string
	// Checks receives the verdicts of the answer checks.
	Checks []Check
}

// Run measures every query in every mode. Memory holds the process's peak
// RSS after each mode (see Memory for why it only grows).
func (s *Suite) Run(ctx context.Context) ([]Run, []Memory, error) {
	runs, mem, _, err := s.RunSkipping(ctx)
	return runs, mem, err
}

// RunSkipping is Run that also returns the queries skipped because their
// warm-up failed (only with SkipFailing).
func (s *Suite) RunSkipping(ctx context.Context) ([]Run, []Memory, []Skip, error) {
	if s.Runs < 1 {
		return nil, nil, nil, fmt.Errorf("benchmark: runs must be at least 1, got %d", s.Runs)
	}
	if s.Interleave {
		return s.runInterleaved(ctx)
	}
	var runs []Run
	var mem []Memory
	var skipped []Skip
	for _, mode := range s.Modes {
		cpuStart, cpuErr := SampleCPU()
		if s.ResetQueuePeak != nil {
			s.ResetQueuePeak()
		}
		if s.ResetReservedPeaks != nil {
			s.ResetReservedPeaks()
		}
		sess, err := s.sessionFor(mode)
		if err != nil {
			return nil, nil, nil, err
		}
		run := s.runner()
		for _, q := range s.Queries {
			skip, err := s.warmUpOrSkip(ctx, sess, q, mode)
			if err != nil {
				return nil, nil, nil, err
			}
			if skip != nil {
				skipped = append(skipped, *skip)
				continue
			}
			var totals []float64
			for i := 1; i <= s.Runs; i++ {
				use0 := ProcessUsage()
				m, err := run(ctx, sess, q.Text)
				use := ProcessUsage().Sub(use0)
				if err != nil {
					return nil, nil, nil, fmt.Errorf("benchmark: %s (%s, run %d): %w", Label(q.Set, q.N), mode, i, err)
				}
				runs = append(runs, Run{Set: q.Set, Query: q.N, Mode: mode, Run: i, TTFRMs: ms(m.TTFR), TotalMs: ms(m.Total), Rows: m.Rows, CPUMs: ms(use.CPU), PageFaults: use.PageFaults, GCCycles: use.GCCycles})
				totals = append(totals, ms(m.Total))
			}
			if s.Progress != nil {
				fmt.Fprintf(s.Progress, "%-3s %-10s median %8.1f ms\n", Label(q.Set, q.N), mode, Median(totals))
			}
		}
		m := Memory{Mode: mode}
		if cpuEnd, err := SampleCPU(); err == nil && cpuErr == nil {
			m.OtherCPUs = cpuStart.OtherCPUs(cpuEnd)
		}
		if rss, err := PeakRSS(); err == nil {
			m.PeakRSSBytes = rss
		}
		if s.QueuePeak != nil {
			m.PeakQueuedBytes = s.QueuePeak()
		}
		if s.ReservedPeaks != nil && mode != ModeInProcess {
			m.PeakReservedBytes = s.ReservedPeaks()
		}
		mem = append(mem, m)
	}
	return runs, mem, skipped, nil
}

// runner returns how the suite times a script.
func (s *Suite) runner() func(context.Context, *session.Session, string) (Measurement, error) {
	if s.Whole {
		return RunScriptWhole
	}
	return RunScript
}

// sessionFor returns the session that runs mode, set to run it.
func (s *Suite) sessionFor(mode string) (*session.Session, error) {
	if mode == ModeInProcess {
		if s.InProcess == nil {
			return nil, fmt.Errorf("benchmark: mode %s needs an in-process session", mode)
		}
		return s.InProcess, nil
	}
	if err := setMode(s.Session, mode); err != nil {
		return nil, fmt.Errorf("benchmark: mode %q: %w", mode, err)
	}
	return s.Session, nil
}

// warmUpOrSkip warms q up in mode. A failure is the query's skip in that
// mode when the suite skips failing queries, and the suite's error
// otherwise.
func (s *Suite) warmUpOrSkip(ctx context.Context, sess *session.Session, q Query, mode string) (*Skip, error) {
	err := s.warmUp(ctx, sess, q, mode)
	if err == nil {
		return nil, nil
	}
	if s.SkipFailing && ctx.Err() == nil {
		if s.Progress != nil {
			fmt.Fprintf(s.Progress, "%-3s %-10s skipped: %v\n", Label(q.Set, q.N), mode, err)
		}
		return &Skip{Set: q.Set, Query: q.N, Mode: mode, Error: err.Error()}, nil
	}
	return nil, fmt.Errorf("benchmark: %s (%s, warm-up): %w", Label(q.Set, q.N), mode, err)
}

// warmUp runs q once in mode, untimed, checking its answer when the suite
// has answers for it.
func (s *Suite) warmUp(ctx context.Context, sess *session.Session, q Query, mode string) error {
	run := s.runner()
	if s.Answers == "" || q.Set != SetTPCH {
		_, err := run(ctx, sess, q.Text)
		return err
	}
	c, ok, err := CheckAnswer(ctx, sess, s.Answers, q, mode)
	if err != nil || !ok {
		if !ok && err == nil {
			_, err = run(ctx, sess, q.Text)
		}
		return err
	}
	s.Checks = append(s.Checks, c)
	if !c.Pass && s.Progress != nil {
		fmt.Fprintf(s.Progress, "%-3s %-10s WRONG ANSWER: %s\n", Label(q.Set, q.N), mode, c.Detail)
	}
	return nil
}

// MeasureLatency runs sql once to warm up, then n times, each a full round
// trip (submit, read every row, close), and returns the median and p99.
func MeasureLatency(ctx context.Context, sess *session.Session, name, mode, sql string, n int) (Latency, error) {
	if err := setMode(sess, mode); err != nil {
		return Latency{}, fmt.Errorf("latency: mode %q: %w", mode, err)
	}
	if _, _, err := runStatement(ctx, sess, sql); err != nil {
		return Latency{}, fmt.Errorf("latency %s (%s): %w", name, mode, err)
	}
	xs := make([]float64, 0, n)
	for range n {
		m, _, err := runStatement(ctx, sess, sql)
		if err != nil {
			return Latency{}, fmt.Errorf("latency %s (%s): %w", name, mode, err)
		}
		xs = append(xs, ms(m.Total))
	}
	return Latency{Name: name, Mode: mode, Count: n, P50Ms: Median(xs), P99Ms: Percentile(xs, 99)}, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
