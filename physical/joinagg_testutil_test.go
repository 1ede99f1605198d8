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
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

// jaSource is an in-memory test operator: parts[p] are partition p's batches.
type jaSource struct {
	schema *arrow.Schema
	parts  [][]arrow.RecordBatch
}

func (s *jaSource) Schema() *arrow.Schema { return s.schema }
func (s *jaSource) Children() []Operator  { return nil }
func (s *jaSource) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: len(s.parts)}
}
func (s *jaSource) String() string { return "jaSource" }
func (s *jaSource) Execute(_ context.Context, p int, _ *TaskContext) (Stream, error) {
	return &jaSourceStream{batches: s.parts[p]}, nil
}

// release frees the source's batches.
func (s *jaSource) release() {
	for _, p := range s.parts {
		for _, b := range p {
			b.Release()
		}
	}
}

type jaSourceStream struct {
	batches []arrow.RecordBatch
	i       int
}

func (s *jaSourceStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for s.i < len(s.batches) {
		b := s.batches[s.i]
		s.i++
		if b.NumRows() > 0 {
			b.Retain()
			return b, nil
		}
	}
	return nil, io.EOF
}

func (s *jaSourceStream) Close() { s.i = len(s.batches) }

// jaSchema builds a schema of nullable fields from name/type pairs.
func jaSchema(nameTypes ...any) *arrow.Schema {
	var fs []arrow.Field
	for i := 0; i < len(nameTypes); i += 2 {
		fs = append(fs, arrow.Field{Name: nameTypes[i].(string), Type: nameTypes[i+1].(arrow.DataType), Nullable: true})
	}
	return arrow.NewSchema(fs, nil)
}

// jaBatch builds a batch from rows of Go values (nil = NULL; decimals as
// strings; ints as int for any integer type).
func jaBatch(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, row := range rows {
		for c, v := range row {
			fb := b.Field(c)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(int64(v.(int)))
			case *array.Int32Builder:
				fb.Append(int32(v.(int)))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(v.(int)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.Decimal128Builder:
				dt := schema.Field(c).Type.(*arrow.Decimal128Type)
				n, err := decimal128.FromString(v.(string), dt.Precision, dt.Scale)
				if err != nil {
					t.Fatal(err)
				}
				fb.Append(n)
			default:
				t.Fatalf("jaBatch: unsupported builder %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// jaFormat renders value i of a as a string (NULL for nulls).
func jaFormat(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch a := a.(type) {
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Float64:
		return fmt.Sprintf("%g", a.Value(i))
	}
	return a.ValueStr(i)
}

// jaRows renders every row of the batches as "v1|v2|...", sorted.
func jaRows(batches []arrow.RecordBatch) []string {
	var out []string
	for _, b := range batches {
		for r := 0; r < int(b.NumRows()); r++ {
			vs := make([]string, b.NumCols())
			for c := range vs {
				vs[c] = jaFormat(b.Column(c), r)
			}
			out = append(out, strings.Join(vs, "|"))
		}
	}
	slices.Sort(out)
	return out
}

// jaRun executes every partition of op concurrently and collects all
// batches; it checks that no batch exceeds tc.BatchSize rows and matches
// the schema.
func jaRun(t testing.TB, op Operator, tc *TaskContext) ([]arrow.RecordBatch, error) {
	t.Helper()
	ctx := context.Background()
	n := op.OutputPartitioning().Count
	results := make([][]arrow.RecordBatch, n)
	errs := make([]error, n)
	// Open every partition's stream before draining any, as a task does:
	// a build shared by the streams lives as long as one of them is open.
	streams := make([]Stream, n)
	for p := range streams {
		s, err := op.Execute(ctx, p, tc)
		if err != nil {
			for _, o := range streams[:p] {
				o.Close()
			}
			return nil, err
		}
		streams[p] = s
	}
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := streams[p]
			defer s.Close()
			for {
				b, err := s.Next(ctx)
				if err == io.EOF {
					return
				}
				if err != nil {
					errs[p] = err
					return
				}
				if b.NumRows() == 0 || (tc.BatchSize > 0 && b.NumRows() > int64(tc.BatchSize)) {
					errs[p] = fmt.Errorf("batch of %d rows (batch size %d)", b.NumRows(), tc.BatchSize)
				}
				if !b.Schema().Equal(op.Schema()) {
					errs[p] = fmt.Errorf("batch schema %s, operator schema %s", b.Schema(), op.Schema())
				}
				results[p] = append(results[p], b)
			}
		}()
	}
	wg.Wait()
	var all []arrow.RecordBatch
	for _, r := range results {
		all = append(all, r...)
	}
	if err := errors.Join(errs...); err != nil {
		for _, b := range all {
			b.Release()
		}
		return nil, err
	}
	return all, nil
}

// jaCollect runs op and returns its sorted rendered rows.
func jaCollect(t testing.TB, op Operator, tc *TaskContext) []string {
	t.Helper()
	bs, err := jaRun(t, op, tc)
	if err != nil {
		t.Fatal(err)
	}
	rows := jaRows(bs)
	for _, b := range bs {
		b.Release()
	}
	return rows
}

// jaTC returns a task context over mem with the given batch size and pool
// limit (0 = unlimited).
func jaTC(mem memory.Allocator, batchSize int, limit int64) *TaskContext {
	return &TaskContext{Alloc: mem, Memory: mempool.NewPool("test", limit, nil), BatchSize: batchSize}
}

// jaCol is a column reference.
func jaCol(i int, name string, t arrow.DataType) *expr.Column {
	return &expr.Column{Index: i, Name: name, Type: t}
}

// jaCmp is a test-only expression comparing two int64 columns (the real
// expression library is written elsewhere). NULL operands yield NULL.
type jaCmp struct {
	L, R int
	Op   string // "<>", "=", "<", ">"
}

func (c *jaCmp) DataType() arrow.DataType { return plan.Bool }
func (c *jaCmp) String() string           { return fmt.Sprintf("#%d %s #%d", c.L, c.Op, c.R) }
func (c *jaCmp) Eval(b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	l, ok1 := b.Column(c.L).(*array.Int64)
	r, ok2 := b.Column(c.R).(*array.Int64)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("jaCmp: int64 columns expected")
	}
	out := array.NewBooleanBuilder(mem)
	defer out.Release()
	for i := 0; i < int(b.NumRows()); i++ {
		if l.IsNull(i) || r.IsNull(i) {
			out.AppendNull()
			continue
		}
		x, y := l.Value(i), r.Value(i)
		var v bool
		switch c.Op {
		case "<>":
			v = x != y
		case "=":
			v = x == y
		case "<":
			v = x < y
		case ">":
			v = x > y
		default:
			return nil, fmt.Errorf("jaCmp: unknown op %q", c.Op)
		}
		out.Append(v)
	}
	return out.NewArray(), nil
}

var _ expr.Expr = (*jaCmp)(nil)

// jaCoalesce is a test operator reading every partition of its input, one
// after another, as a single partition.
type jaCoalesce struct{ in Operator }

func (c *jaCoalesce) Schema() *arrow.Schema            { return c.in.Schema() }
func (c *jaCoalesce) Children() []Operator             { return []Operator{c.in} }
func (c *jaCoalesce) OutputPartitioning() Partitioning { return SinglePartition }
func (c *jaCoalesce) String() string                   { return "jaCoalesce" }
func (c *jaCoalesce) Execute(ctx context.Context, _ int, tc *TaskContext) (Stream, error) {
	return &jaCoalesceStream{op: c.in, tc: tc}, nil
}

type jaCoalesceStream struct {
	op  Operator
	tc  *TaskContext
	p   int
	cur Stream
}

func (s *jaCoalesceStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if s.cur == nil {
			if s.p >= s.op.OutputPartitioning().Count {
				return nil, io.EOF
			}
			st, err := s.op.Execute(ctx, s.p, s.tc)
			if err != nil {
				return nil, err
			}
			s.cur = st
			s.p++
		}
		b, err := s.cur.Next(ctx)
		if err == io.EOF {
			s.cur.Close()
			s.cur = nil
			continue
		}
		return b, err
	}
}

func (s *jaCoalesceStream) Close() {
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
	s.p = s.op.OutputPartitioning().Count
}

// jaCountingOp counts Execute calls of the wrapped operator.
type jaCountingOp struct {
	Operator
	executions atomic.Int64
}

func (c *jaCountingOp) Execute(ctx context.Context, p int, tc *TaskContext) (Stream, error) {
	c.executions.Add(1)
	return c.Operator.Execute(ctx, p, tc)
}

// jaDrain runs partition 0 of op and returns the number of output rows.
func jaDrain(b *testing.B, op Operator, tc *TaskContext) int64 {
	ctx := context.Background()
	s, err := op.Execute(ctx, 0, tc)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n int64
	for {
		rb, err := s.Next(ctx)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n += rb.NumRows()
		rb.Release()
	}
}
