package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// countingSource counts how often each partition of its input is executed
// and can fail partition failAt after its first batch.
type countingSource struct {
	Operator
	executes []atomic.Int32
	failAt   int           // -1: never
	gate     chan struct{} // when set, batches after the first wait for it to close
}

func (c *countingSource) Execute(ctx context.Context, p int, tc *TaskContext) (Stream, error) {
	c.executes[p].Add(1)
	s, err := c.Operator.Execute(ctx, p, tc)
	if err != nil {
		return nil, err
	}
	if c.gate != nil {
		s = &gatedStream{Stream: s, gate: c.gate}
	}
	if p == c.failAt {
		s = &failingStream{Stream: s}
	}
	return s, nil
}

type gatedStream struct {
	Stream
	gate chan struct{}
	n    int
}

func (g *gatedStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if g.n++; g.n > 1 {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Stream.Next(ctx)
}

type failingStream struct {
	Stream
	n int
}

func (f *failingStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if f.n++; f.n > 1 {
		return nil, errors.New("input broke")
	}
	return f.Stream.Next(ctx)
}

// sharedFixture is a two-partition source of 4 batches each and a
// SharedOutput of it for two consumers.
func sharedFixture(t *testing.T, mem memory.Allocator, failAt int) (*jaSource, *countingSource, *SharedOutput, []string) {
	schema := jaSchema("k", arrow.PrimitiveTypes.Int64, "v", arrow.BinaryTypes.String)
	src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 2)}
	var want []string
	for p := range 2 {
		for b := range 4 {
			var rows [][]any
			for r := range 3 {
				k := p*100 + b*10 + r
				rows = append(rows, []any{k, fmt.Sprint("v", k)})
				want = append(want, fmt.Sprintf("%d|v%d", k, k))
			}
			src.parts[p] = append(src.parts[p], jaBatch(t, mem, schema, rows))
		}
	}
	slices.Sort(want)
	cs := &countingSource{Operator: src, executes: make([]atomic.Int32, 2), failAt: failAt}
	return src, cs, NewSharedOutput(cs, 2), want
}

// readShared reads every partition of op, the partitions concurrently,
// and returns the rows sorted.
func readShared(t *testing.T, op Operator, tc *TaskContext) ([]string, error) {
	t.Helper()
	var mu sync.Mutex
	var rows []string
	var wg sync.WaitGroup
	errs := make([]error, op.OutputPartitioning().Count)
	for p := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := op.Execute(context.Background(), p, tc)
			if err != nil {
				errs[p] = err
				return
			}
			defer s.Close()
			for {
				b, err := s.Next(context.Background())
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					errs[p] = err
					return
				}
				mu.Lock()
				rows = append(rows, jaRows([]arrow.RecordBatch{b})...)
				mu.Unlock()
				b.Release()
			}
		}()
	}
	wg.Wait()
	slices.Sort(rows)
	return rows, errors.Join(errs...)
}

// TestSharedOutputComputesOnce: two consumers reading at once, or one
// after the other, both get every row, the input runs once per partition,
// and every batch is released when both are done; a third consumer after
// that computes the input again.
func TestSharedOutputComputesOnce(t *testing.T) {
	for _, concurrent := range []bool{true, false} {
		t.Run(fmt.Sprint("concurrent=", concurrent), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src, cs, shared, want := sharedFixture(t, mem, -1)
			defer src.release()
			tc := jaTC(mem, 8, 0)
			got := make([][]string, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				read := func() { got[i], errs[i] = readShared(t, shared, tc) }
				if concurrent {
					wg.Add(1)
					go func() { defer wg.Done(); read() }()
				} else {
					read()
				}
			}
			wg.Wait()
			for i := range 2 {
				if errs[i] != nil || !slices.Equal(got[i], want) {
					t.Fatalf("consumer %d: %v, %d rows, want %d", i, errs[i], len(got[i]), len(want))
				}
			}
			for p := range 2 {
				if n := cs.executes[p].Load(); n != 1 {
					t.Errorf("partition %d executed %d times, want once", p, n)
				}
			}
			// Both consumers closed: the batches are released (the source
			// still holds its own), and another stream recomputes.
			again, err := readShared(t, shared, tc)
			if err != nil || !slices.Equal(again, want) {
				t.Fatalf("a third read after release: %v, %d rows", err, len(again))
			}
			if n := cs.executes[0].Load(); n != 2 {
				t.Errorf("partition 0 executed %d times after release, want 2", n)
			}
		})
	}
}

// TestSharedOutputEarlyClose: a consumer that stops after one batch (a
// LIMIT) while the input is still running does not cut the other short:
// closed first and cancelled after, it leaves the producer running for the
// other; cancelled before it closes (the query looks cancelled), it stops
// the producer and the other consumer computes the input again.
func TestSharedOutputEarlyClose(t *testing.T) {
	for _, cancelFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("cancelled before close=", cancelFirst), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src, cs, shared, want := sharedFixture(t, mem, -1)
			defer src.release()
			cs.gate = make(chan struct{})
			tc := jaTC(mem, 8, 0)
			for p := range 2 {
				ctx, cancel := context.WithCancel(context.Background())
				s, err := shared.Execute(ctx, p, tc)
				if err != nil {
					t.Fatal(err)
				}
				b, err := s.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
				if cancelFirst {
					cancel()
					s.Close()
				} else {
					s.Close()
					cancel()
				}
			}
			close(cs.gate)
			got, err := readShared(t, shared, tc)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("the other consumer: %v, %d rows, want %d", err, len(got), len(want))
			}
			wantRuns := int32(1)
			if cancelFirst {
				wantRuns = 2
			}
			for p := range 2 {
				if n := cs.executes[p].Load(); n != wantRuns {
					t.Errorf("partition %d executed %d times, want %d", p, n, wantRuns)
				}
			}
		})
	}
}

// TestSharedOutputInputError: an input failure reaches every consumer as
// an error, never as a short result.
func TestSharedOutputInputError(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src, _, shared, _ := sharedFixture(t, mem, 1)
	defer src.release()
	tc := jaTC(mem, 8, 0)
	for i := range 2 {
		if _, err := readShared(t, shared, tc); err == nil || !strings.Contains(err.Error(), "input broke") {
			t.Fatalf("consumer %d: error %v, want the input's", i, err)
		}
	}
}

// TestPlannerSharesRepeatedAggregates: with ShareSubplans, an aggregate
// subtree that occurs twice is planned once, as a SharedOutput read by
// both; without it, or for an aggregate that occurs once, nothing is
// shared.
func TestPlannerSharesRepeatedAggregates(t *testing.T) {
	scan := func() plan.Node { return testScan(t) }
	agg := func() plan.Node { return testAggregate(t, scan()) }
	twice := testJoinOf(t, agg(), agg())
	once := testJoinOf(t, agg(), scan())
	for _, tc := range []struct {
		name  string
		n     plan.Node
		share bool
		want  []int // Refs of the SharedOutputs found
	}{
		{"twice, shared", twice, true, []int{2, 2}},
		{"twice, not shared", twice, false, nil},
		{"once", once, true, nil},
	} {
		op, err := PlanForTests(tc.n, 2, tc.share)
		if err != nil {
			t.Fatal(err)
		}
		var refs []int
		var seen []*SharedOutput
		var walk func(Operator)
		walk = func(o Operator) {
			if s, ok := o.(*SharedOutput); ok {
				refs = append(refs, s.Refs)
				seen = append(seen, s)
			}
			for _, c := range o.Children() {
				walk(c)
			}
		}
		walk(op)
		if !slices.Equal(refs, tc.want) {
			t.Errorf("%s: SharedOutput refs %v, want %v\n%s", tc.name, refs, tc.want, Format(op))
		}
		if len(seen) == 2 && seen[0] != seen[1] {
			t.Errorf("%s: the two occurrences are different operators", tc.name)
		}
	}
}

// testValues is a two-row VALUES of one BIGINT column k, with a fresh
// column ID each time (as each expansion of a view gets).
var testIDs atomic.Int64

func testScan(t *testing.T) plan.Node {
	t.Helper()
	id := plan.ColumnID(1000 + testIDs.Add(1))
	lit := func(v int64) plan.Expr { return &plan.Literal{Typ: arrow.PrimitiveTypes.Int64, Val: v} }
	return &plan.Values{
		Rows: [][]plan.Expr{{lit(1)}, {lit(2)}},
		Cols: plan.Schema{{ID: id, Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}},
	}
}

// testAggregate groups in by its first column and counts.
func testAggregate(t *testing.T, in plan.Node) plan.Node {
	t.Helper()
	c := in.Schema()[0]
	id := plan.ColumnID(1000 + testIDs.Add(1))
	return &plan.Aggregate{
		Input:   in,
		GroupBy: []plan.Expr{c.Ref()},
		Aggs:    []*plan.AggCall{{Func: plan.AggCount, Arg: c.Ref(), Typ: arrow.PrimitiveTypes.Int64}},
		Cols:    plan.Schema{c, {ID: id, Name: "count", Type: arrow.PrimitiveTypes.Int64, Nullable: true}},
	}
}

// testJoinOf joins l and r on their first columns.
func testJoinOf(t *testing.T, l, r plan.Node) plan.Node {
	t.Helper()
	return &plan.Join{Kind: plan.JoinInner, Left: l, Right: r,
		Cond: &plan.Binary{Op: plan.OpEq, L: l.Schema()[0].Ref(), R: r.Schema()[0].Ref(), Typ: arrow.FixedWidthTypes.Boolean}}
}
