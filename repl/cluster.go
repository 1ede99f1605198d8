package repl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluice/session"
)

func (r *Runner) dotCluster(ctx context.Context, _ []string) error {
	info, err := r.Session.Cluster(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.Err, "scheduler %s (policy %s)\n", info.Scheduler, info.Policy)
	for _, e := range info.Executors {
		fmt.Fprintf(r.Err, "  executor %-24s %-21s vcores %d free / %d  (heartbeat %.1fs ago)\n",
			e.ID, e.Address, e.FreeVcores, e.Vcores, e.SinceHeartbeat.Seconds())
	}
	if len(info.Executors) == 0 {
		fmt.Fprintln(r.Err, "  no executors")
	}
	if len(info.RunningJobs) == 0 {
		fmt.Fprintln(r.Err, "running jobs: none")
	} else {
		fmt.Fprintf(r.Err, "running jobs: %s\n", strings.Join(info.RunningJobs, ", "))
	}
	return nil
}

func (r *Runner) dotExplain(ctx context.Context, args []string) error {
	if len(args) == 0 && r.lastErrDetail != "" {
		fmt.Fprintf(r.Out, "the last query failed: %s\n", r.lastErrDetail)
		return nil
	}
	if len(args) == 0 {
		if r.lastReport == "" {
			return fmt.Errorf("usage: .explain QUERY (or .explain alone, after a query on the cluster, for its stages and tasks)")
		}
		fmt.Fprintln(r.Out, r.lastReport)
		return nil
	}
	q := strings.TrimSuffix(strings.TrimSpace(strings.Join(args, " ")), ";")
	rows, _, err := r.collect(ctx, "EXPLAIN "+q)
	if err != nil {
		return err
	}
	for _, row := range rows {
		kind, plan, _ := strings.Cut(row, "\x1f")
		writePlan(r.Out, kind, plan)
	}
	return nil
}

// statusLine redraws one line on a terminal's stderr every quarter second,
// from after until stop, which clears it. Its methods are no-ops on a nil
// line.
type statusLine struct {
	w      io.Writer
	text   func(elapsed time.Duration) string
	start  time.Time
	after  time.Duration
	done   chan struct{}
	exited chan struct{}
	once   sync.Once
}

func startStatusLine(w io.Writer, start time.Time, after time.Duration, text func(time.Duration) string) *statusLine {
	l := &statusLine{w: w, text: text, start: start, after: after, done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(l.exited)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		shown := false
		for {
			select {
			case <-l.done:
				if shown {
					fmt.Fprint(l.w, "\r\x1b[K")
				}
				return
			case <-tick.C:
				if elapsed := time.Since(l.start); elapsed >= l.after {
					fmt.Fprint(l.w, "\r\x1b[K"+l.text(elapsed))
					shown = true
				}
			}
		}
	}()
	return l
}

// stop clears the line and waits for the drawing goroutine; safe to call
// more than once.
func (l *statusLine) stop() {
	if l == nil {
		return
	}
	l.once.Do(func() { close(l.done) })
	<-l.exited
}

// progressLine draws a one-line progress report on a terminal's stderr for
// statements running longer than a second, from the job's latest progress,
// and clears it when output starts or the statement ends.
type progressLine struct {
	r    *Runner
	line *statusLine
	mu   sync.Mutex
	last session.Progress
}

func (r *Runner) startProgress() *progressLine {
	p := &progressLine{r: r}
	if !r.Progress {
		return p
	}
	r.Session.OnProgress = p.update
	p.line = startStatusLine(r.Err, time.Now(), time.Second, func(elapsed time.Duration) string {
		p.mu.Lock()
		pr := p.last
		p.mu.Unlock()
		return fmt.Sprintf("[%.1fs] stages %d/%d, tasks running %d, done %d/%d, rows %d",
			elapsed.Seconds(), pr.StagesDone, pr.StagesTotal, pr.TasksRunning, pr.TasksDone, pr.TasksTotal, pr.Rows)
	})
	return p
}

func (p *progressLine) update(pr session.Progress) {
	p.mu.Lock()
	p.last = pr
	p.mu.Unlock()
}

// stop clears the line; safe to call more than once.
func (p *progressLine) stop() {
	if p.line == nil {
		return
	}
	p.line.stop()
	p.r.Session.OnProgress = nil
}

// rowCounter counts, on a terminal's stderr, the rows a table receives past
// the ones it draws, while they still arrive. Its methods are no-ops on a
// nil counter.
type rowCounter struct {
	rows atomic.Int64
	line *statusLine
}

func (r *Runner) startRowCounter(start time.Time, shown int) *rowCounter {
	c := &rowCounter{}
	c.line = startStatusLine(r.Err, start, 0, func(elapsed time.Duration) string {
		return fmt.Sprintf("[%.1fs] %d rows so far (%d shown); Ctrl-C stops", elapsed.Seconds(), c.rows.Load(), shown)
	})
	return c
}

func (c *rowCounter) set(rows int64) {
	if c != nil {
		c.rows.Store(rows)
	}
}

// stop clears the line; safe to call more than once.
func (c *rowCounter) stop() {
	if c != nil {
		c.line.stop()
	}
}
