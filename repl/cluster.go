package repl

import (
	"context"
	"fmt"
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

// progressLine draws a one-line progress report on a terminal's stderr for
// statements running longer than a second, redrawn every quarter second
// from the job's latest progress, and clears it when output starts or the
// statement ends.
type progressLine struct {
	mu      sync.Mutex
	r       *Runner
	start   time.Time
	last    session.Progress
	shown   bool
	stopped bool
	done    chan struct{}
	exited  chan struct{}
}

func (r *Runner) startProgress() *progressLine {
	p := &progressLine{r: r, start: time.Now(), done: make(chan struct{}), exited: make(chan struct{})}
	if !r.Progress {
		p.stopped = true
		close(p.exited)
		return p
	}
	r.Session.OnProgress = p.update
	go p.loop()
	return p
}

func (p *progressLine) loop() {
	defer close(p.exited)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			p.draw()
		}
	}
}

func (p *progressLine) update(pr session.Progress) {
	p.mu.Lock()
	p.last = pr
	p.mu.Unlock()
}

func (p *progressLine) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || time.Since(p.start) < time.Second {
		return
	}
	pr := p.last
	fmt.Fprintf(p.r.Err, "\r\x1b[K[%.1fs] stages %d/%d, tasks running %d, done %d/%d, rows %d",
		time.Since(p.start).Seconds(), pr.StagesDone, pr.StagesTotal, pr.TasksRunning, pr.TasksDone, pr.TasksTotal, pr.Rows)
	p.shown = true
}

// stop clears the line and waits for the drawing goroutine; safe to call
// more than once.
func (p *progressLine) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		<-p.exited
		return
	}
	p.stopped = true
	if p.shown {
		fmt.Fprint(p.r.Err, "\r\x1b[K")
		p.shown = false
	}
	p.mu.Unlock()
	close(p.done)
	<-p.exited
	p.r.Session.OnProgress = nil
}

// rowCounter redraws, on a terminal's stderr, how many rows a table has
// counted past the ones it draws, while they still arrive; stop clears it.
// Its methods are no-ops on a nil counter.
type rowCounter struct {
	r      *Runner
	start  time.Time
	shown  int
	rows   atomic.Int64
	done   chan struct{}
	exited chan struct{}
	once   sync.Once
}

func (r *Runner) startRowCounter(start time.Time, shown int) *rowCounter {
	c := &rowCounter{r: r, start: start, shown: shown, done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(c.exited)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		drawn := false
		for {
			select {
			case <-c.done:
				if drawn {
					fmt.Fprint(r.Err, "\r\x1b[K")
				}
				return
			case <-tick.C:
				fmt.Fprintf(r.Err, "\r\x1b[K[%.1fs] %d rows so far (%d shown); Ctrl-C stops",
					time.Since(c.start).Seconds(), c.rows.Load(), c.shown)
				drawn = true
			}
		}
	}()
	return c
}

func (c *rowCounter) set(rows int64) {
	if c != nil {
		c.rows.Store(rows)
	}
}

// stop clears the line and waits for the drawing goroutine; safe to call
// more than once.
func (c *rowCounter) stop() {
	if c == nil {
		return
	}
	c.once.Do(func() { close(c.done) })
	<-c.exited
}
