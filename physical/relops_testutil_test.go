package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/internal/testutil"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
)

// memSource is a test Operator serving fixed batches per partition.
type memSource struct {
	schema *arrow.Schema
	parts  [][]arrow.RecordBatch
	// errAt, if >= 0, makes partition errPart fail after errAt batches.
	errPart, errAt int
	// block makes every stream block in Next (after its batches) until ctx
	// is done.
	block bool
	open  atomic.Int64 // streams executed but not closed
	pulls atomic.Int64 // batches handed out
}

var errInjected = errors.New("injected failure")

func newMemSource(schema *arrow.Schema, parts [][]arrow.RecordBatch) *memSource {
	return &memSource{schema: schema, parts: parts, errAt: -1}
}

func (m *memSource) Schema() *arrow.Schema { return m.schema }
func (m *memSource) Children() []Operator  { return nil }
func (m *memSource) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: len(m.parts)}
}
func (m *memSource) String() string { return "MemSource" }

func (m *memSource) Execute(ctx context.Context, p int, tc *TaskContext) (Stream, error) {
	if p < 0 || p >= len(m.parts) {
		return nil, fmt.Errorf("memSource: partition %d out of range", p)
	}
	m.open.Add(1)
	return &memSourceStream{src: m, part: p}, nil
}

// release releases the source's batches.
func (m *memSource) release() {
	for _, p := range m.parts {
		kernels.ReleaseAll(p)
	}
}

type memSourceStream struct {
	src    *memSource
	part   int
	i      int
	closed bool
}

func (s *memSourceStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.src.errAt >= 0 && s.part == s.src.errPart && s.i == s.src.errAt {
		return nil, errInjected
	}
	batches := s.src.parts[s.part]
	if s.i >= len(batches) {
		if s.src.block {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, io.EOF
	}
	b := batches[s.i]
	s.i++
	b.Retain()
	s.src.pulls.Add(1)
	return b, nil
}

func (s *memSourceStream) Close() {
	if !s.closed {
		s.closed = true
		s.src.open.Add(-1)
	}
}

// newTestTC returns a task context over mem with the given batch size.
func newTestTC(mem memory.Allocator, batchSize int) *TaskContext {
	return &TaskContext{Alloc: mem, Memory: mempool.NewPool("test", 0, nil), BatchSize: batchSize}
}

// The batch builders and row renderers shared with the subpackages' tests.
var (
	makeBatch        = testutil.MakeBatch
	batchRows        = testutil.BatchRows
	rowsString       = testutil.RowsString
	sortedRowsString = testutil.SortedRowsString
)

// drainStream pulls s to the end and closes it, returning all rows.
func drainStream(t testing.TB, s Stream) [][]any {
	t.Helper()
	defer s.Close()
	var rows [][]any
	for {
		b, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if b.NumRows() == 0 {
			t.Errorf("stream returned an empty batch")
		}
		rows = append(rows, batchRows(b)...)
		b.Release()
	}
}

// collectPartitions executes every partition of op (one after another) and
// returns their rows.
func collectPartitions(t testing.TB, op Operator, tc *TaskContext) [][][]any {
	t.Helper()
	n := op.OutputPartitioning().Count
	out := make([][][]any, n)
	for p := 0; p < n; p++ {
		s, err := op.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatalf("Execute(%d): %v", p, err)
		}
		out[p] = drainStream(t, s)
	}
	return out
}

// collectAll returns every row of op, partitions concatenated.
func collectAll(t testing.TB, op Operator, tc *TaskContext) [][]any {
	t.Helper()
	var rows [][]any
	for _, p := range collectPartitions(t, op, tc) {
		rows = append(rows, p...)
	}
	return rows
}

// waitGoroutines fails unless the goroutine count drops back to at most
// want. Goroutines that a Close waited for may still be exiting their last
// instructions, hence the yield loop with a deadline.
func waitGoroutines(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), want, buf[:n])
		}
		runtime.Gosched()
	}
}

func col(i int, name string, typ arrow.DataType) *expr.Column {
	return &expr.Column{Index: i, Name: name, Type: typ}
}
