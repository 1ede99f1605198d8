package physical

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// Unnest expands arrays: for each input row, one output row per element,
// the input columns repeated, then one column per array holding the
// element. Several arrays are expanded in lockstep, the shorter padded
// with NULLs; a row whose arrays are all NULL or empty yields no rows
// (PostgreSQL's set-returning functions in a select list). Output batches
// hold at most the task's batch size rows, however long an array is.
type Unnest struct {
	input  Operator
	pass   []int // the input columns output, by index
	args   []expr.Expr
	names  []string
	schema *arrow.Schema
}

var _ Operator = (*Unnest)(nil)

// NewUnnest returns an Unnest of input expanding args (each an array),
// whose element columns are named names, after the input columns pass
// (indexes, in order).
func NewUnnest(input Operator, pass []int, args []expr.Expr, names []string) (*Unnest, error) {
	if len(args) == 0 || len(args) != len(names) {
		return nil, fmt.Errorf("unnest: %d arrays with %d names", len(args), len(names))
	}
	in := input.Schema()
	fields := make([]arrow.Field, 0, len(pass)+len(args))
	for _, i := range pass {
		if i < 0 || i >= in.NumFields() {
			return nil, fmt.Errorf("unnest: input column %d of %d", i, in.NumFields())
		}
		fields = append(fields, in.Field(i))
	}
	for i, a := range args {
		lt, ok := a.DataType().(*arrow.ListType)
		if !ok {
			return nil, fmt.Errorf("unnest: %s is %s, not an array", a, a.DataType())
		}
		fields = append(fields, arrow.Field{Name: names[i], Type: lt.Elem(), Nullable: true})
	}
	return &Unnest{input: input, pass: pass, args: args, names: names, schema: arrow.NewSchema(fields, nil)}, nil
}

// Pass are the indexes of the input columns output.
func (u *Unnest) Pass() []int { return u.pass }

// Args are the array expressions.
func (u *Unnest) Args() []expr.Expr { return u.args }

// Names are the element columns' names.
func (u *Unnest) Names() []string { return u.names }

// Schema implements Operator.
func (u *Unnest) Schema() *arrow.Schema { return u.schema }

// Children implements Operator.
func (u *Unnest) Children() []Operator { return []Operator{u.input} }

// OutputPartitioning implements Operator: rows only repeat, so hash
// partitioning on input columns that pass through holds.
func (u *Unnest) OutputPartitioning() Partitioning {
	in := u.input.OutputPartitioning()
	if in.Kind != PartHash {
		return in
	}
	exprs := make([]expr.Expr, len(u.pass))
	names := make([]string, len(u.pass))
	for j, i := range u.pass {
		f := u.input.Schema().Field(i)
		exprs[j], names[j] = &expr.Column{Index: i, Name: f.Name, Type: f.Type}, f.Name
	}
	return hashThrough(in, exprs, names)
}

func (u *Unnest) String() string {
	parts := make([]string, len(u.args))
	for i, a := range u.args {
		parts[i] = fmt.Sprintf("unnest(%s) AS %s", a, u.names[i])
	}
	return "Unnest: " + strings.Join(parts, ", ")
}

// Execute implements Operator.
func (u *Unnest) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	in, err := ExecuteOp(ctx, u.input, partition, tc)
	if err != nil {
		return nil, err
	}
	bs := tc.BatchSize
	if bs <= 0 {
		bs = DefaultBatchSize
	}
	return &unnestStream{op: u, in: in, mem: tc.Alloc, batchSize: bs}, nil
}

type unnestStream struct {
	op        *Unnest
	in        Stream
	mem       memory.Allocator
	batchSize int
	// The input batch being expanded, its arrays, and the next row and
	// element to output.
	cur    arrow.RecordBatch
	lists  []*array.List
	row, k int
}

func (s *unnestStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.cur == nil {
			if err := s.load(ctx); err != nil {
				return nil, err
			}
		}
		out, err := s.expand()
		if err != nil {
			return nil, err
		}
		if out != nil {
			return out, nil
		}
		s.drop()
	}
}

// load reads the next input batch and evaluates its arrays.
func (s *unnestStream) load(ctx context.Context) error {
	b, err := s.in.Next(ctx)
	if err != nil {
		return err
	}
	cols, err := kernels.EvalAll(s.op.args, b, s.mem)
	if err != nil {
		b.Release()
		return fmt.Errorf("unnest: %w", err)
	}
	s.lists = make([]*array.List, len(cols))
	for i, c := range cols {
		if c.DataType().ID() == arrow.NULL {
			// An untyped NULL: no elements on any row.
			c.Release()
			c = array.MakeArrayOfNull(s.mem, s.op.args[i].DataType(), int(b.NumRows()))
		}
		l, ok := c.(*array.List)
		if !ok {
			kernels.ReleaseAll(cols[i:])
			s.lists = s.lists[:i]
			s.releaseLists()
			b.Release()
			return fmt.Errorf("unnest: %s evaluated to %s, not an array", s.op.args[i], c.DataType())
		}
		s.lists[i] = l
	}
	s.cur, s.row, s.k = b, 0, 0
	return nil
}

// expand outputs the next run of at most batchSize rows of the current
// batch, nil when it has none left.
func (s *unnestStream) expand() (arrow.RecordBatch, error) {
	n := int(s.cur.NumRows())
	var rows []int32
	elems := make([][]int32, len(s.lists))
	for s.row < n && len(rows) < s.batchSize {
		count := 0
		for _, l := range s.lists {
			if l.IsValid(s.row) {
				lo, hi := l.ValueOffsets(s.row)
				count = max(count, int(hi-lo))
			}
		}
		for ; s.k < count && len(rows) < s.batchSize; s.k++ {
			rows = append(rows, int32(s.row))
			for j, l := range s.lists {
				at := int32(-1)
				if l.IsValid(s.row) {
					if lo, hi := l.ValueOffsets(s.row); int64(s.k) < hi-lo {
						at = int32(lo) + int32(s.k)
					}
				}
				elems[j] = append(elems[j], at)
			}
		}
		if s.k >= count {
			s.row, s.k = s.row+1, 0
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, 0, s.op.schema.NumFields())
	fail := func(err error) (arrow.RecordBatch, error) {
		kernels.ReleaseAll(cols)
		return nil, fmt.Errorf("unnest: %w", err)
	}
	for _, i := range s.op.pass {
		t, err := kernels.TakeArray(s.mem, s.cur.Column(i), rows)
		if err != nil {
			return fail(err)
		}
		cols = append(cols, t)
	}
	for j, l := range s.lists {
		vals := l.ListValues()
		b := array.NewBuilder(s.mem, vals.DataType())
		b.Reserve(len(rows))
		for _, at := range elems[j] {
			if at < 0 {
				b.AppendNull()
				continue
			}
			if err := expr.AppendValue(b, vals, int(at)); err != nil {
				b.Release()
				return fail(err)
			}
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	rb := array.NewRecordBatch(s.op.schema, cols, int64(len(rows)))
	kernels.ReleaseAll(cols)
	return rb, nil
}

func (s *unnestStream) releaseLists() {
	for _, l := range s.lists {
		l.Release()
	}
	s.lists = nil
}

// drop releases the current batch and its arrays.
func (s *unnestStream) drop() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	s.releaseLists()
}

func (s *unnestStream) Close() {
	s.drop()
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
}
