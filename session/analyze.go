package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/engine"
	"sluice/physical"
	"sluice/physical/metrics"
	"sluice/rpc"
)

// EXPLAIN ANALYZE runs the query to completion, reading and discarding its
// rows, and answers with rows shaped as EXPLAIN's (plan_type, plan):
// "analyzed_plan", the plan with each operator's metrics (in process: the
// physical plan; on a cluster: every stage with its tasks' summed metrics
// and its body), and "summary", the rows the query returned and how long
// it took from submission to the last row.

// analyze runs an EXPLAIN ANALYZE in process: the plan's one task is
// analyzed directly.
func (l *local) analyze(ctx context.Context, q *engine.Query, s *Session, start time.Time) (*Result, error) {
	op, tc := l.task(q, s)
	defer tc.Memory.Release()
	tc.Analyzer = physical.NewAnalyzer(op)
	stream, err := physical.ExecuteOp(ctx, op, 0, tc)
	if err != nil {
		return nil, err
	}
	rows, err := drain(ctx, &Result{stream: stream})
	stream.Close()
	if err != nil {
		return nil, err
	}
	summary := fmt.Sprintf("rows=%d, time=%s, mem=%s (the query's memory pool at its peak)",
		rows, metrics.FormatDuration(time.Since(start)), metrics.FormatBytes(tc.Memory.Peak()))
	return analyzeResult(physical.FormatAnalyzed(op, tc.Analyzer.Metrics()), summary), nil
}

// analyze reads an EXPLAIN ANALYZE job's result to the end, waits for the
// job to end (it ends once its tasks have reported their metrics) and
// answers with the scheduler's rendering of them.
func (j *job) analyze(ctx context.Context, st *rpc.JobStatus, schema *arrow.Schema, s *Session, start time.Time) (*Result, error) {
	res, err := j.read(ctx, st, schema, s, start)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	rows, err := drain(ctx, res)
	if err != nil {
		return nil, err
	}
	w := res.stream.(*jobStream)
	if err := w.awaitEnd(ctx); err != nil {
		return nil, err
	}
	total := time.Since(start)
	res.Close()
	if w.final == nil || w.final.AnalyzedPlan == "" {
		state := "unknown"
		if w.final != nil {
			state = strings.ToLower(strings.TrimPrefix(w.final.State.String(), "JOB_"))
		}
		return nil, fmt.Errorf("the job's metrics are not available (job state %s)", state)
	}
	summary := fmt.Sprintf("rows=%d, time=%s, stages=%d, tasks=%d, queued=%s", rows, metrics.FormatDuration(total), w.stats.Stages, w.stats.Tasks,
		metrics.FormatDuration(time.Duration(w.final.QueuedMs)*time.Millisecond))
	return analyzeResult(w.final.AnalyzedPlan, summary), nil
}

// awaitEnd waits until the status stream says the job ended, and returns
// its error if it failed.
func (w *jobStream) awaitEnd(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		w.watchers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		w.job.cancelJob()
		<-done
		return fmt.Errorf("query cancelled")
	}
	select {
	case err := <-w.failed:
		return err
	default:
	}
	return nil
}

// drain reads res to the end, releasing its batches, and counts its rows.
func drain(ctx context.Context, res *Result) (int64, error) {
	var n int64
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return n, fmt.Errorf("query cancelled")
			}
			return n, err
		}
		n += b.NumRows()
		b.Release()
	}
}

// analyzeResult is EXPLAIN ANALYZE's answer.
func analyzeResult(plan, summary string) *Result {
	rows := engine.StringRows([]string{"plan_type", "plan"}, [][]string{
		{"analyzed_plan", strings.TrimRight(plan, "\n")},
		{"summary", summary},
	})
	return &Result{Schema: rows.Schema(), stream: &batchStream{batches: []arrow.RecordBatch{rows}}}
}
