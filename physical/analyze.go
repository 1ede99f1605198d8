package physical

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/physical/metrics"
)

// EXPLAIN ANALYZE instrumentation. A task that is analyzed carries an
// Analyzer in its TaskContext; every operator is executed through
// ExecuteOp, which, only then, wraps the operator's stream to count its
// rows and batches and time its Execute and Next calls. The plan itself is
// not changed: operators still see their real children (a Filter still
// hands its predicate to the Parquet scan below it, a join still finds the
// scan its runtime filter applies to), so the plan measured is the plan
// that runs without EXPLAIN ANALYZE. A task that is not analyzed pays a
// nil check per Execute and per reservation change, nothing else.
//
// Time is exclusive where the call chain is direct: an operator's calls
// carry a context of their own, and an input's Next (or Execute) called
// with exactly that context is subtracted from the operator's time. An
// operator that reads its inputs on goroutines of its own (repartition,
// coalescing of partitions, the build side of a join, folded unions,
// sort-preserving merges) passes them derived contexts, so its time includes
// the time it waited for them. Times are summed over partitions (and, on a
// cluster, over tasks), so they can exceed the query's wall time.
//
// Memory is per operator: a reservation taken through
// TaskContext.NewReservation under an operator's context counts toward
// that operator, and its peak is the most its reservations held at once.
// Operators that hold no reservation show none.

// Analyzer collects the metrics of one plan's operators while a task runs
// it. Safe for concurrent use by the task's goroutines.
type Analyzer struct {
	index map[Operator]int
	m     []opMetrics
}

// opMetrics are one operator's counters, shared by all its partitions.
type opMetrics struct {
	rows, batches, nanos atomic.Int64
	memUsed, memPeak     atomic.Int64
	reserved             atomic.Bool
	// A Parquet scan's cross-stage dynamic filters (dynamic_filter.go).
	dynExpected, dynReceived, dynDropped atomic.Int64
	// Rows of a Parquet scan that the page index ruled out.
	pageSkipped atomic.Int64
	// A pipelined reader's producer queues, taken from the executor's own
	// registry or streamed over Flight.
	localReads, remoteReads atomic.Int64
	// The multiplexed streams a pipelined reader opened.
	muxStreams atomic.Int64
}

// OperatorMetrics are what one operator did: output rows and batches, time
// spent in the operator itself, and the peak bytes its memory reservations
// held (Reserved says whether it took any).
type OperatorMetrics struct {
	Rows, Batches int64
	Time          time.Duration
	MemPeak       int64
	Reserved      bool
	// DynExpected and DynReceived count a Parquet scan's cross-stage
	// dynamic filters (summed over tasks: a filter applies in each task of
	// the scan's stage), the ones waited for and the ones whose keys came;
	// DynDropped is the rows they dropped, skipped row groups included.
	DynExpected, DynReceived, DynDropped int64
	// PageSkipped is the rows a Parquet scan did not read because the
	// page index ruled their pages out.
	PageSkipped int64
	// LocalReads and RemoteReads count the producer queues a pipelined
	// reader read: taken from its own executor's registry (the producer
	// task ran there) or streamed over Flight from another executor.
	LocalReads, RemoteReads int64
	// MuxStreams counts the multiplexed streams (exchange.multiplex) a
	// pipelined reader opened, each carrying one or more remote reads.
	MuxStreams int64
}

// Add sums o into m (another partition set, another task). Memory peaks
// add too: tasks may hold their peaks at the same time.
func (m *OperatorMetrics) Add(o OperatorMetrics) {
	m.Rows += o.Rows
	m.Batches += o.Batches
	m.Time += o.Time
	m.MemPeak += o.MemPeak
	m.Reserved = m.Reserved || o.Reserved
	m.DynExpected += o.DynExpected
	m.DynReceived += o.DynReceived
	m.DynDropped += o.DynDropped
	m.PageSkipped += o.PageSkipped
	m.LocalReads += o.LocalReads
	m.RemoteReads += o.RemoteReads
	m.MuxStreams += o.MuxStreams
}

// String renders the metrics as EXPLAIN ANALYZE shows them on an operator's
// line: metrics=[rows=.., batches=.., time=..(, mem=..)].
func (m OperatorMetrics) String() string {
	s := fmt.Sprintf("metrics=[rows=%d, batches=%d, time=%s", m.Rows, m.Batches, metrics.FormatDuration(m.Time))
	if m.Reserved {
		s += ", mem=" + metrics.FormatBytes(m.MemPeak)
	}
	if m.DynExpected > 0 {
		s += fmt.Sprintf(", dynamic_filters=%d/%d, dynamic_dropped=%d", m.DynReceived, m.DynExpected, m.DynDropped)
	}
	if m.PageSkipped > 0 {
		s += fmt.Sprintf(", page_index_skipped=%d", m.PageSkipped)
	}
	if m.LocalReads+m.RemoteReads > 0 {
		s += fmt.Sprintf(", local_reads=%d, remote_reads=%d", m.LocalReads, m.RemoteReads)
	}
	if m.MuxStreams > 0 {
		s += fmt.Sprintf(", mux_streams=%d", m.MuxStreams)
	}
	return s + "]"
}

// NewAnalyzer prepares to analyze the plan under root: its operators are
// identified by their position in PreOrder(root).
func NewAnalyzer(root Operator) *Analyzer {
	ops := PreOrder(root)
	return &Analyzer{index: operatorIndex(ops), m: make([]opMetrics, len(ops))}
}

// Metrics returns each operator's metrics so far, by pre-order position.
func (a *Analyzer) Metrics() []OperatorMetrics {
	out := make([]OperatorMetrics, len(a.m))
	for i := range a.m {
		m := &a.m[i]
		out[i] = OperatorMetrics{
			Rows: m.rows.Load(), Batches: m.batches.Load(), Time: time.Duration(m.nanos.Load()),
			MemPeak: m.memPeak.Load(), Reserved: m.reserved.Load(),
			DynExpected: m.dynExpected.Load(), DynReceived: m.dynReceived.Load(), DynDropped: m.dynDropped.Load(),
			PageSkipped: m.pageSkipped.Load(),
			LocalReads:  m.localReads.Load(), RemoteReads: m.remoteReads.Load(),
			MuxStreams: m.muxStreams.Load(),
		}
	}
	return out
}

// PreOrder lists the operators of the plan under root as Format prints
// them: parents before children, children in order; a SharedOutput read a
// second time is listed again but not its input.
func PreOrder(root Operator) []Operator {
	var out []Operator
	shown := map[*SharedOutput]bool{}
	var rec func(op Operator)
	rec = func(op Operator) {
		out = append(out, op)
		if s, ok := op.(*SharedOutput); ok {
			if shown[s] {
				return
			}
			shown[s] = true
		}
		for _, c := range op.Children() {
			rec(c)
		}
	}
	rec(root)
	return out
}

// operatorIndex maps each operator to its first position in ops.
func operatorIndex(ops []Operator) map[Operator]int {
	idx := make(map[Operator]int, len(ops))
	for i, op := range ops {
		if !hashable(op) {
			continue
		}
		if _, ok := idx[op]; !ok {
			idx[op] = i
		}
	}
	return idx
}

// hashable reports whether op can be a map key (an operator that is a
// struct holding slices cannot).
func hashable(op Operator) bool { return reflect.TypeOf(op).Comparable() }

// metricsOf returns op's counters, or nil when op is not in the plan
// (a helper operator an operator builds for itself).
func (a *Analyzer) metricsOf(op Operator) *opMetrics {
	if !hashable(op) {
		return nil
	}
	if i, ok := a.index[op]; ok {
		return &a.m[i]
	}
	return nil
}

// CountQueueRead records that op, a pipelined reader, read one producer
// queue, locally (from its executor's registry) or over Flight. A nil
// Analyzer (a task not analyzed) records nothing.
func (a *Analyzer) CountQueueRead(op Operator, local bool) {
	if a == nil {
		return
	}
	m := a.metricsOf(op)
	switch {
	case m == nil:
	case local:
		m.localReads.Add(1)
	default:
		m.remoteReads.Add(1)
	}
}

// CountMuxStream records that op, a pipelined reader, opened a
// multiplexed stream to a producer task. A nil Analyzer records nothing.
func (a *Analyzer) CountMuxStream(op Operator) {
	if a == nil {
		return
	}
	if m := a.metricsOf(op); m != nil {
		m.muxStreams.Add(1)
	}
}

// ExecuteOp executes partition of op. Operators execute their inputs
// through it (and task runners their roots), so that an analyzed task
// (tc.Analyzer set) measures every operator; otherwise it is op.Execute.
func ExecuteOp(ctx context.Context, op Operator, partition int, tc *TaskContext) (Stream, error) {
	if tc == nil || tc.Analyzer == nil {
		return op.Execute(ctx, partition, tc)
	}
	return tc.Analyzer.execute(ctx, op, func(ctx context.Context) (Stream, error) {
		return op.Execute(ctx, partition, tc)
	})
}

// executeScan executes a Parquet scan handed its reader's predicate, as
// ExecuteOp executes other operators.
func executeScan(ctx context.Context, scan *ParquetScan, partition int, tc *TaskContext, pred []expr.Expr) (Stream, error) {
	if tc == nil || tc.Analyzer == nil {
		return scan.execute(ctx, partition, tc, pred)
	}
	return tc.Analyzer.execute(ctx, scan, func(ctx context.Context) (Stream, error) {
		return scan.execute(ctx, partition, tc, pred)
	})
}

// execute runs exec, which executes op, measured as op.
func (a *Analyzer) execute(ctx context.Context, op Operator, exec func(context.Context) (Stream, error)) (Stream, error) {
	m := a.metricsOf(op)
	if m == nil {
		return exec(ctx)
	}
	f := &opContext{Context: ctx, m: m}
	start := time.Now()
	s, err := exec(f)
	f.account(ctx, time.Since(start))
	if err != nil {
		return nil, err
	}
	return &analyzedStream{in: s, m: m}, nil
}

// opContext is the context of one call into an operator: it names the
// operator (for memory reservations taken under it) and collects the time
// its inputs' calls made directly with it took.
type opContext struct {
	context.Context
	m     *opMetrics
	child atomic.Int64
}

// opContextKey finds the innermost operator's counters in a context.
type opContextKey struct{}

func (c *opContext) Value(key any) any {
	if key == (opContextKey{}) {
		return c.m
	}
	return c.Context.Value(key)
}

// account records a call that took d: its own share to the operator, all
// of it to the caller's call when the caller passed its own context.
func (c *opContext) account(caller context.Context, d time.Duration) {
	if p, ok := caller.(*opContext); ok {
		p.child.Add(int64(d))
	}
	c.m.nanos.Add(max(0, int64(d)-c.child.Load()))
}

// analyzedStream counts a stream's batches and times its Next calls.
type analyzedStream struct {
	in Stream
	m  *opMetrics
}

func (s *analyzedStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	f := &opContext{Context: ctx, m: s.m}
	start := time.Now()
	b, err := s.in.Next(f)
	f.account(ctx, time.Since(start))
	if err == nil {
		s.m.rows.Add(b.NumRows())
		s.m.batches.Add(1)
	}
	return b, err
}

func (s *analyzedStream) Close() { s.in.Close() }

// lastFiltered passes on a Parquet scan's mark to the Filter above it.
func (s *analyzedStream) lastFiltered() bool {
	m, ok := s.in.(filteredMarker)
	return ok && m.lastFiltered()
}

// NewReservation starts an empty reservation in the task's pool for owner
// (an operator name). ctx is the operator's Execute or Next context: in an
// analyzed task the reservation counts toward that operator's memory.
func (tc *TaskContext) NewReservation(ctx context.Context, owner string) *mempool.Reservation {
	r := tc.Memory.NewReservation(owner)
	if tc.Analyzer != nil {
		if m, ok := ctx.Value(opContextKey{}).(*opMetrics); ok {
			m.reserved.Store(true)
			r.Track(m)
		}
	}
	return r
}

// Grow and Shrink follow an operator's reservations, keeping their peak.
func (m *opMetrics) Grow(n int64) {
	used := m.memUsed.Add(n)
	for {
		p := m.memPeak.Load()
		if used <= p || m.memPeak.CompareAndSwap(p, used) {
			return
		}
	}
}

func (m *opMetrics) Shrink(n int64) { m.memUsed.Add(-n) }

// FormatAnalyzed renders the plan under root as Format does, each
// operator's line ending with its metrics (metrics[i] belongs to
// PreOrder(root)[i]; missing entries read as zero).
func FormatAnalyzed(root Operator, metrics []OperatorMetrics) string {
	ops := PreOrder(root)
	idx := operatorIndex(ops)
	var b strings.Builder
	var rec func(op Operator, d int)
	pos := 0
	shown := map[*SharedOutput]bool{}
	rec = func(op Operator, d int) {
		i := pos
		pos++
		b.WriteString(strings.Repeat("  ", d))
		b.WriteString(op.String())
		b.WriteString("  [" + op.OutputPartitioning().String() + "]")
		if s, ok := op.(*SharedOutput); ok {
			if shown[s] {
				b.WriteString(" (the one above)\n")
				return
			}
			shown[s] = true
		}
		first := i
		if hashable(op) {
			first = idx[op]
		}
		var m OperatorMetrics
		if first < len(metrics) {
			m = metrics[first]
		}
		b.WriteString(" " + m.String() + "\n")
		for _, c := range op.Children() {
			rec(c, d+1)
		}
	}
	rec(root, 0)
	return b.String()
}
