package physical

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// slowOp delays every batch of its input, so that its time dominates the
// plan's and the operators above it can be checked not to count it.
type slowOp struct {
	input Operator
	delay time.Duration
}

func (s *slowOp) Schema() *arrow.Schema            { return s.input.Schema() }
func (s *slowOp) Children() []Operator             { return []Operator{s.input} }
func (s *slowOp) OutputPartitioning() Partitioning { return s.input.OutputPartitioning() }
func (s *slowOp) String() string                   { return "Slow" }
func (s *slowOp) Execute(ctx context.Context, p int, tc *TaskContext) (Stream, error) {
	in, err := ExecuteOp(ctx, s.input, p, tc)
	if err != nil {
		return nil, err
	}
	return &slowStream{in: in, delay: s.delay}, nil
}

type slowStream struct {
	in    Stream
	delay time.Duration
}

func (s *slowStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := s.in.Next(ctx)
	if err == nil {
		time.Sleep(s.delay) // stands for work: the metric must see it
	}
	return b, err
}
func (s *slowStream) Close() { s.in.Close() }

// analyzeTestPlan is Coalesce(Sort(Filter(Slow(source)))) over two
// partitions of 0..9 in batches of 3; the filter keeps the even values.
func analyzeTestPlan(t *testing.T, mem memory.Allocator) (*memSource, Operator) {
	t.Helper()
	var parts [][]arrow.RecordBatch
	for p := 0; p < 2; p++ {
		var bs []arrow.RecordBatch
		for i := 0; i < 10; i += 3 {
			var vals, keep []any
			for j := i; j < min(i+3, 10); j++ {
				vals = append(vals, j)
				keep = append(keep, j%2 == 0)
			}
			bs = append(bs, makeBatch(t, mem, analyzeSchema, vals, keep))
		}
		parts = append(parts, bs)
	}
	src := newMemSource(analyzeSchema, parts)
	slow := &slowOp{input: src, delay: 5 * time.Millisecond}
	filter := NewFilter(slow, col(1, "keep", plan.Bool))
	sort := NewSort(filter, []SortKey{{Expr: col(0, "v", plan.Int64)}}, -1)
	return src, NewCoalescePartitions(sort)
}

var analyzeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "v", Type: plan.Int64, Nullable: true},
	{Name: "keep", Type: plan.Bool, Nullable: true},
}, nil)

func TestAnalyzerCountsEveryOperator(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src, root := analyzeTestPlan(t, mem)
	tc := newTestTC(mem, 8)
	tc.Analyzer = NewAnalyzer(root)
	s, err := ExecuteOp(context.Background(), root, 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(drainStream(t, s)); got != 10 {
		t.Fatalf("got %d rows, want 10", got)
	}
	ms := tc.Analyzer.Metrics()
	ops := PreOrder(root)
	if len(ms) != 5 || len(ops) != 5 {
		t.Fatalf("%d metrics for %d operators, want 5", len(ms), len(ops))
	}
	// Pre-order: Coalesce, Sort, Filter, Slow, source.
	wantRows := []int64{10, 10, 10, 20, 20}
	for i, m := range ms {
		if m.Rows != wantRows[i] {
			t.Errorf("%s: rows %d, want %d", ops[i], m.Rows, wantRows[i])
		}
	}
	if ms[4].Batches != 8 || ms[3].Batches != 8 {
		t.Errorf("source and slow batches %d, %d, want 8", ms[4].Batches, ms[3].Batches)
	}
	if !ms[1].Reserved || ms[1].MemPeak <= 0 {
		t.Errorf("sort memory %+v, want a reservation with a peak", ms[1])
	}
	for _, i := range []int{0, 2, 3, 4} {
		if ms[i].Reserved {
			t.Errorf("%s reserved memory: %+v", ops[i], ms[i])
		}
	}
	// The slow operator's 8 batches slept 40ms; the filter above it calls
	// it directly, so none of that is the filter's.
	if ms[3].Time < 40*time.Millisecond {
		t.Errorf("slow operator time %v, want >= 40ms", ms[3].Time)
	}
	if ms[2].Time >= ms[3].Time/2 {
		t.Errorf("filter time %v includes its input's (%v)", ms[2].Time, ms[3].Time)
	}
	text := FormatAnalyzed(root, ms)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("formatted plan has %d lines, want 5:\n%s", len(lines), text)
	}
	for _, l := range lines {
		if !strings.Contains(l, " metrics=[rows=") {
			t.Errorf("line without metrics: %q", l)
		}
	}
	if !strings.Contains(lines[1], "Sort:") || !strings.Contains(lines[1], ", mem=") {
		t.Errorf("sort line lacks its memory: %q", lines[1])
	}
	if !strings.HasPrefix(lines[2], "    Filter: ") || !strings.Contains(lines[2], "rows=10, batches=") {
		t.Errorf("filter line: %q", lines[2])
	}
	if src.open.Load() != 0 {
		t.Errorf("source streams left open: %d", src.open.Load())
	}
	src.release()
	mem.AssertSize(t, 0)
}

// TestExecuteOpWithoutAnalyzer: a task that is not analyzed gets the
// operators' own streams, unwrapped.
func TestExecuteOpWithoutAnalyzer(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src, root := analyzeTestPlan(t, mem)
	s, err := ExecuteOp(context.Background(), root.Children()[0], 0, newTestTC(mem, 8))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*analyzedStream); ok {
		t.Errorf("stream wrapped without an analyzer")
	}
	s.Close()
	src.release()
	mem.AssertSize(t, 0)
}

func TestOperatorMetricsAddAndString(t *testing.T) {
	var m OperatorMetrics
	m.Add(OperatorMetrics{Rows: 3, Batches: 1, Time: 1500 * time.Microsecond})
	m.Add(OperatorMetrics{Rows: 4, Batches: 2, Time: 500 * time.Microsecond, MemPeak: 2048, Reserved: true})
	if got, want := m.String(), "metrics=[rows=7, batches=3, time=2ms, mem=2 KiB]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

}

// A pipelined reader's queue reads are counted on its own metrics, summed
// over tasks like the rest, and shown only when it read any.
func TestCountQueueRead(t *testing.T) {
	// The plan is not executed: only its operators' identities matter.
	src, root := analyzeTestPlan(t, memory.NewGoAllocator())
	var none *Analyzer
	none.CountQueueRead(src, true) // a task not analyzed records nothing
	a := NewAnalyzer(root)
	a.CountQueueRead(src, true)
	a.CountQueueRead(src, true)
	a.CountQueueRead(src, false)
	a.CountQueueRead(NewFilter(src, col(1, "keep", plan.Bool)), false) // not in the plan
	ms := a.Metrics()
	for i, op := range PreOrder(root) {
		local, remote := int64(0), int64(0)
		if op == Operator(src) {
			local, remote = 2, 1
		}
		if ms[i].LocalReads != local || ms[i].RemoteReads != remote {
			t.Errorf("%s: reads %d local, %d remote; want %d, %d", op, ms[i].LocalReads, ms[i].RemoteReads, local, remote)
		}
	}
	var sum OperatorMetrics
	sum.Add(OperatorMetrics{Rows: 1, Batches: 1, LocalReads: 2, RemoteReads: 1})
	sum.Add(OperatorMetrics{Rows: 1, Batches: 1, LocalReads: 1})
	if got, want := sum.String(), "metrics=[rows=2, batches=2, time=0ns, local_reads=3, remote_reads=1]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (OperatorMetrics{Rows: 1}).String(); strings.Contains(got, "reads") {
		t.Errorf("an operator that read no queue shows %q", got)
	}
}
