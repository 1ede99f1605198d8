package scheduler

import (
	"fmt"

	"sluice/engine"
	"sluice/plan"
	"sluice/scheduler/dplan"
)

// modeChoice is auto mode's decision for one job and what it rested on.
type modeChoice struct {
	// Mode is ModePipelined or ModeBlocking.
	Mode string
	// Need is the vcores the job needs at once pipelined (its widest
	// stage's partitions); Free the vcores free now.
	Need, Free int
	// Rows is the largest estimated intermediate result; Limit the
	// setting execution.auto_max_pipelined_rows.
	Rows, Limit int64
	// Pull is set when the scheduler runs the pull policy, which has no
	// pipelined mode.
	Pull bool
}

// String is the one line EXPLAIN and the job's status show.
func (c modeChoice) String() string {
	switch {
	case c.Pull:
		return "auto: blocking (the scheduler runs the pull policy, which has no pipelined mode)"
	case c.Need > c.Free:
		return fmt.Sprintf("auto: blocking (pipelined needs %d vcores at once, %d are free now)", c.Need, c.Free)
	case c.Rows > c.Limit:
		return fmt.Sprintf("auto: blocking (largest estimated intermediate %d rows > execution.auto_max_pipelined_rows %d)", c.Rows, c.Limit)
	}
	return fmt.Sprintf("auto: pipelined (needs %d vcores at once, %d free; largest estimated intermediate %d rows <= %d)", c.Need, c.Free, c.Rows, c.Limit)
}

// chooseModeLocked is auto mode: a query runs pipelined when every stage
// can start now (its widest stage fits the vcores free on the executors
// not in avoid, so it neither waits nor fails for capacity) and its
// largest estimated intermediate result is at most
// execution.auto_max_pipelined_rows (a pipelined job holds every stage's
// state at once and loses all of it with one executor, where blocking
// mode keeps finished stages on disk and re-runs only lost tasks).
// Otherwise it runs blocking. Callers hold s.mu.
func (s *Scheduler) chooseModeLocked(q *engine.Query, dg *dplan.Graph, settings *engine.Settings, avoid []string) modeChoice {
	c := modeChoice{Mode: ModeBlocking, Free: s.freeVcoresLocked(avoid), Rows: LargestIntermediate(q.Logical),
		Limit: settings.Int("execution.auto_max_pipelined_rows"), Pull: s.cfg.Policy == PolicyPull}
	for _, st := range dg.Stages {
		c.Need = max(c.Need, st.Partitions())
	}
	if !c.Pull && c.Need <= c.Free && c.Rows <= c.Limit {
		c.Mode = ModePipelined
	}
	return c
}

// LargestIntermediate estimates (plan.EstimateRows) the largest result
// that crosses an exchange in the distributed plan: a join's inputs (one
// side repartitioned or broadcast, the other repartitioned or streamed),
// an aggregate's grouped output (its partial results are repartitioned by
// key) and a sort's input (merged). 0 when the plan has none (a scan, a
// filter): such a query only streams.
func LargestIntermediate(n plan.Node) int64 {
	var most float64
	var walk func(n plan.Node)
	walk = func(n plan.Node) {
		switch x := n.(type) {
		case *plan.Join:
			for _, c := range x.Children() {
				most = max(most, plan.EstimateRows(c))
			}
		case *plan.Aggregate:
			most = max(most, plan.EstimateRows(x))
		case *plan.Sort:
			most = max(most, plan.EstimateRows(x.Input))
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(n)
	return int64(most)
}
