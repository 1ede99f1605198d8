package write

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/physical/internal/testutil"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/rpc"
)

var (
	makeBatch        = testutil.MakeBatch
	sortedRowsString = testutil.SortedRowsString
)

// batchSource is a test operator serving fixed batches per partition;
// with errAt >= 0, partition errPart fails after errAt batches.
type batchSource struct {
	schema         *arrow.Schema
	parts          [][]arrow.RecordBatch
	errPart, errAt int
}

var errInjected = errors.New("injected failure")

func newBatchSource(schema *arrow.Schema, parts [][]arrow.RecordBatch) *batchSource {
	return &batchSource{schema: schema, parts: parts, errAt: -1}
}

func (s *batchSource) Schema() *arrow.Schema         { return s.schema }
func (s *batchSource) Children() []physical.Operator { return nil }
func (s *batchSource) String() string                { return "BatchSource" }
func (s *batchSource) OutputPartitioning() physical.Partitioning {
	return physical.Partitioning{Kind: physical.PartUnknown, Count: len(s.parts)}
}

func (s *batchSource) Execute(_ context.Context, p int, _ *physical.TaskContext) (physical.Stream, error) {
	if p < 0 || p >= len(s.parts) {
		return nil, fmt.Errorf("batchSource: partition %d out of range", p)
	}
	return &batchStream{src: s, part: p}, nil
}

// release releases the source's batches.
func (s *batchSource) release() {
	for _, p := range s.parts {
		kernels.ReleaseAll(p)
	}
}

type batchStream struct {
	src  *batchSource
	part int
	i    int
}

func (s *batchStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.src.errAt >= 0 && s.part == s.src.errPart && s.i == s.src.errAt {
		return nil, errInjected
	}
	batches := s.src.parts[s.part]
	if s.i >= len(batches) {
		return nil, io.EOF
	}
	b := batches[s.i]
	s.i++
	b.Retain()
	return b, nil
}

func (s *batchStream) Close() {}

func newTestTC(mem memory.Allocator, batchSize int) *physical.TaskContext {
	return &physical.TaskContext{Alloc: mem, Memory: mempool.NewPool("test", 0, nil), BatchSize: batchSize}
}

// collectPartitions drains each partition of op in turn.
func collectPartitions(t testing.TB, op physical.Operator, tc *physical.TaskContext) [][][]any {
	t.Helper()
	out := make([][][]any, op.OutputPartitioning().Count)
	for p := range out {
		s, err := op.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatalf("Execute(%d): %v", p, err)
		}
		for {
			b, err := s.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				s.Close()
				t.Fatalf("Next: %v", err)
			}
			out[p] = append(out[p], testutil.BatchRows(b)...)
			b.Release()
		}
		s.Close()
	}
	return out
}

// collectAll returns every row of op, partitions concatenated.
func collectAll(t testing.TB, op physical.Operator, tc *physical.TaskContext) [][]any {
	t.Helper()
	var rows [][]any
	for _, p := range collectPartitions(t, op, tc) {
		rows = append(rows, p...)
	}
	return rows
}

// shipPlan encodes op with this package's codec, marshals and unmarshals
// the message, and decodes it, as a plan travels to an executor.
func shipPlan(t *testing.T, op physical.Operator) physical.Operator {
	t.Helper()
	m, err := physical.EncodePlan(op, Codec{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back rpc.PhysicalPlan
	if err := proto.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := physical.DecodePlan(&back, Codec{}, physical.NewTableCache())
	if err != nil {
		t.Fatal(err)
	}
	if g, w := physical.Format(got), physical.Format(op); g != w {
		t.Fatalf("decoded plan:\n%s\nwant:\n%s", g, w)
	}
	return got
}
