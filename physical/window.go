package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/plan"
)

// WindowExpr is one window function a Window operator computes.
type WindowExpr struct {
	Func plan.WindowFunc
	// Agg is the aggregate of a plan.WinAggregate.
	Agg plan.AggFunc
	// Args are evaluated on the input rows; see plan.WindowCall.
	Args  []expr.Expr
	Frame plan.WindowFrame
	// Name is the output column name; Type its type.
	Name string
	Type arrow.DataType
}

func (w WindowExpr) String() string {
	args := make([]string, len(w.Args))
	for i, a := range w.Args {
		args[i] = a.String()
	}
	fn := w.Func.String()
	if w.Func == plan.WinAggregate {
		fn = w.Agg.String()
		if w.Agg == plan.AggCountStar {
			fn, args = "count", []string{"*"}
		}
	}
	s := fn + "(" + strings.Join(args, ", ") + ")"
	if w.Func.UsesFrame() {
		s += " " + w.Frame.String()
	}
	return s
}

// Window computes window functions that share one window: its input must
// arrive sorted by the partition keys and then the order keys within each
// of its partitions (the planner puts a Sort below it), with all rows of a
// window partition in the same operator partition (the planner hash
// partitions by the partition keys, or coalesces when there are none).
//
// It buffers one window partition at a time (plus the rows of the next one
// seen so far), charging them to the task's memory reservation, evaluates
// every function over it and emits the input columns followed by one column
// per function. Input order is kept.
type Window struct {
	input       Operator
	partitionBy []expr.Expr
	orderBy     []SortKey
	funcs       []WindowExpr
	schema      *arrow.Schema
}

var _ Operator = (*Window)(nil)

// NewWindow returns a Window over input; it checks that each function's
// arguments, frame and result type are ones the operator can compute.
func NewWindow(input Operator, partitionBy []expr.Expr, orderBy []SortKey, funcs []WindowExpr) (*Window, error) {
	fields := append([]arrow.Field(nil), input.Schema().Fields()...)
	for _, f := range funcs {
		if err := checkWindowExpr(f, orderBy); err != nil {
			return nil, fmt.Errorf("window: %s: %w", f, err)
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
	}
	for _, k := range partitionBy {
		if _, err := newKeyColumn(k.DataType()); err != nil {
			return nil, fmt.Errorf("window: partitioning by %s: %w", k, err)
		}
	}
	for _, k := range orderBy {
		if _, err := newKeyColumn(k.Expr.DataType()); err != nil {
			return nil, fmt.Errorf("window: ordering by %s: %w", k.Expr, err)
		}
	}
	return &Window{input: input, partitionBy: partitionBy, orderBy: orderBy, funcs: funcs, schema: arrow.NewSchema(fields, nil)}, nil
}

// WindowSortKeys are the keys a window's rows are sorted by: the
// partition keys, then the order keys. The planner sorts a window's input
// by them, and a group limit its candidates.
func WindowSortKeys(partitionBy []expr.Expr, orderBy []SortKey) []SortKey {
	keys := make([]SortKey, 0, len(partitionBy)+len(orderBy))
	for _, e := range partitionBy {
		keys = append(keys, SortKey{Expr: e})
	}
	return append(keys, orderBy...)
}

// checkWindowExpr validates one function against the window's ORDER BY.
func checkWindowExpr(f WindowExpr, orderBy []SortKey) error {
	want := func(n int) error {
		if len(f.Args) != n {
			return fmt.Errorf("takes %d arguments, got %d", n, len(f.Args))
		}
		return nil
	}
	var rt arrow.DataType
	switch f.Func {
	case plan.WinAggregate:
		n := 1
		if f.Agg == plan.AggCountStar {
			n = 0
		}
		if err := want(n); err != nil {
			return err
		}
		a := AggregateExpr{Func: f.Agg}
		if n == 1 {
			a.Arg = f.Args[0]
		}
		if _, err := newWindowAggregator(f.Agg, aggArgType(a), f.Type); err != nil {
			return err
		}
		rt = aggResultType(a)
	case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank:
		if err := want(0); err != nil {
			return err
		}
		rt = plan.Int64
	case plan.WinPercentRank, plan.WinCumeDist:
		if err := want(0); err != nil {
			return err
		}
		rt = plan.Float64
	case plan.WinNtile:
		if err := want(1); err != nil {
			return err
		}
		rt = plan.Int64
	case plan.WinLag, plan.WinLead:
		if err := want(3); err != nil {
			return err
		}
		if !arrow.TypeEqual(f.Args[0].DataType(), f.Args[2].DataType()) && f.Args[2].DataType().ID() != arrow.NULL {
			return fmt.Errorf("default of type %s for values of type %s", f.Args[2].DataType(), f.Args[0].DataType())
		}
		rt = f.Args[0].DataType()
	case plan.WinFirstValue, plan.WinLastValue:
		if err := want(1); err != nil {
			return err
		}
		rt = f.Args[0].DataType()
	case plan.WinNthValue:
		if err := want(2); err != nil {
			return err
		}
		rt = f.Args[0].DataType()
	default:
		return fmt.Errorf("unknown window function %d", f.Func)
	}
	for i, a := range f.Args {
		if (f.Func == plan.WinNtile && i == 0) || ((f.Func == plan.WinLag || f.Func == plan.WinLead || f.Func == plan.WinNthValue) && i == 1) {
			if a.DataType().ID() != arrow.INT64 {
				return fmt.Errorf("argument %d must be BIGINT, not %s", i+1, a.DataType())
			}
		}
	}
	if !arrow.TypeEqual(rt, f.Type) {
		return fmt.Errorf("result type %s, expected %s", rt, f.Type)
	}
	if f.Func.UsesFrame() {
		return checkFrame(f.Frame, orderBy)
	}
	return nil
}

// Input is the operator's input.
func (w *Window) Input() Operator { return w.input }

// PartitionBy are the window's partition keys.
func (w *Window) PartitionBy() []expr.Expr { return w.partitionBy }

// OrderBy are the window's order keys.
func (w *Window) OrderBy() []SortKey { return w.orderBy }

// Funcs are the window functions computed.
func (w *Window) Funcs() []WindowExpr { return w.funcs }

// Schema implements Operator.
func (w *Window) Schema() *arrow.Schema { return w.schema }

// Children implements Operator.
func (w *Window) Children() []Operator { return []Operator{w.input} }

// OutputPartitioning implements Operator: rows stay in their partition.
func (w *Window) OutputPartitioning() Partitioning { return w.input.OutputPartitioning() }

func (w *Window) String() string {
	fs := make([]string, len(w.funcs))
	for i, f := range w.funcs {
		fs[i] = f.String() + " AS " + f.Name
	}
	ps := make([]string, len(w.partitionBy))
	for i, p := range w.partitionBy {
		ps[i] = p.String()
	}
	return fmt.Sprintf("Window: partitionBy=[%s] orderBy=[%s] [%s]", strings.Join(ps, ", "), sortKeysString(w.orderBy), strings.Join(fs, ", "))
}

// Execute implements Operator.
func (w *Window) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	pcmp, err := newRowComparator(w.partitionSortKeys())
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	in, err := ExecuteOp(ctx, w.input, partition, tc)
	if err != nil {
		pcmp.release()
		return nil, err
	}
	return &windowStream{op: w, in: in, tc: tc, pcmp: pcmp, res: tc.NewReservation(ctx, fmt.Sprintf("Window[%d]", partition))}, nil
}

func (w *Window) partitionSortKeys() []SortKey {
	keys := make([]SortKey, len(w.partitionBy))
	for i, p := range w.partitionBy {
		keys[i] = SortKey{Expr: p}
	}
	return keys
}

type windowStream struct {
	op   *Window
	in   Stream
	tc   *TaskContext
	res  *mempool.Reservation
	pcmp *rowComparator // partition keys of the pending batches, one slot each

	// pending holds the rows of the window partition not yet known to be
	// complete (the input's tail); pendingBytes is their reservation.
	pending      []arrow.RecordBatch
	pendingSizes []int64 // each pending batch's reservation
	pendingBytes int64
	// ready holds complete window partitions not yet evaluated (readyBytes
	// of reservation), starting at row readyParts[0]; readyParts are the
	// partitions' starts, then its end. They are evaluated a few at a time,
	// each group once the previous one's output has been returned.
	ready      arrow.RecordBatch
	readyBytes int64
	readyParts []int
	// out holds computed batches not yet returned; outBytes is their
	// reservation, released when the last one is returned.
	out      []arrow.RecordBatch
	outBytes int64
	// spill is a window partition too large for memory, being written to
	// disk or evaluated from it (see window_spill.go); deferred holds the
	// input rows read after it (deferredBytes reserved), added once it is
	// evaluated.
	spill         *spilledWindow
	queued        []*spilledWindow // spilled partitions to evaluate after it
	deferred      arrow.RecordBatch
	deferredBytes int64
	eof           bool
	closed        bool
	err           error // sticky: the buffered state cannot be resumed after one
}

func (s *windowStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, io.EOF
	}
	if s.err != nil {
		return nil, s.err
	}
	b, err := s.next(ctx)
	if err != nil && !errors.Is(err, io.EOF) {
		s.err = err
	}
	return b, err
}

func (s *windowStream) next(ctx context.Context) (arrow.RecordBatch, error) {
	for len(s.out) == 0 {
		if s.outBytes > 0 {
			s.res.Shrink(s.outBytes)
			s.outBytes = 0
		}
		if s.spill != nil && s.spill.eval != nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := s.nextSpilled(); err != nil {
				return nil, err
			}
			continue
		}
		if s.ready != nil {
			if err := s.evaluateGroup(); err != nil {
				return nil, err
			}
			continue
		}
		if s.eof {
			return nil, io.EOF
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := s.in.Next(ctx)
		if errors.Is(err, io.EOF) {
			s.eof = true
			if s.spill != nil {
				if err := s.spill.finish(); err != nil {
					return nil, err
				}
				continue
			}
			if len(s.pending) > 0 {
				if err := s.flush(len(s.pending), -1); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if b.NumRows() == 0 {
			b.Release()
			continue
		}
		if s.spill != nil {
			err = s.spillMore(b)
		} else {
			err = s.add(b)
		}
		if err != nil {
			return nil, err
		}
	}
	b := s.out[0]
	s.out = s.out[1:]
	return b, nil
}

// add buffers b and, when a new window partition starts in it, evaluates
// the complete partitions before that point.
func (s *windowStream) add(b arrow.RecordBatch) error {
	keys, err := s.pcmp.evalKeys(b, s.tc.Alloc)
	if err != nil {
		b.Release()
		return fmt.Errorf("window: %w", err)
	}
	n := kernels.BatchBytes(b)
	if err := s.res.Grow(n); err != nil {
		kernels.ReleaseAll(keys)
		if canSpill(s.tc, err) {
			return s.startSpill(b)
		}
		first, rows := b, int64(0)
		if len(s.pending) > 0 {
			first = s.pending[0]
		}
		for _, p := range s.pending {
			rows += p.NumRows()
		}
		err = s.refused(err, first, fmt.Sprintf("reading the window partition %%s: %d rows so far, and an input batch of %d", rows, b.NumRows()))
		b.Release()
		return err
	}
	s.pending = append(s.pending, b)
	s.pendingSizes = append(s.pendingSizes, n)
	s.pendingBytes += n
	s.pcmp.addBatch(keys)
	slot := int32(len(s.pending) - 1)
	// The last row of b that starts a partition, scanning backwards.
	for r := int32(b.NumRows()) - 1; r >= 0; r-- {
		prev := kernels.RowRef{Batch: slot, Row: r - 1}
		if r == 0 {
			if slot == 0 {
				break
			}
			prev = kernels.RowRef{Batch: slot - 1, Row: int32(s.pending[slot-1].NumRows()) - 1}
		}
		if s.pcmp.compare(prev, kernels.RowRef{Batch: slot, Row: r}) != 0 {
			return s.flush(int(slot), int(r))
		}
	}
	return nil
}

// flush evaluates the pending rows before row splitRow of pending batch
// splitSlot (all pending rows when splitRow < 0) and keeps the rest
// pending.
func (s *windowStream) flush(splitSlot, splitRow int) error {
	done := append([]arrow.RecordBatch(nil), s.pending[:splitSlot]...)
	var head, rest arrow.RecordBatch
	keep := int64(0) // the reservation the rest keeps: its batch's buffers
	// A rest of a few rows is copied, so that it does not keep its whole
	// batch in memory (and reserved) while the next batch is read.
	compact := false
	lastSize := int64(0)
	if splitRow >= 0 {
		lastSize = s.pendingSizes[splitSlot]
		last := s.pending[splitSlot]
		if splitRow > 0 {
			head = last.NewSlice(0, int64(splitRow))
			done = append(done, head)
		}
		rest = last.NewSlice(int64(splitRow), last.NumRows())
		compact = rest.NumRows()*4 <= last.NumRows()
		if !compact {
			keep = lastSize
		}
	}
	var in arrow.RecordBatch
	var err error
	if len(done) > 0 {
		in, err = kernels.ConcatBatches(s.tc.Alloc, s.op.input.Schema(), done)
	}
	if head != nil {
		head.Release()
	}
	// The rows are in `in` (and `rest`) now: the pending batches go, and
	// with them their reservation, before the functions are computed.
	kernels.ReleaseAll(s.pending)
	s.pending, s.pendingSizes = s.pending[:0], s.pendingSizes[:0]
	s.pcmp.reset()
	s.res.Shrink(s.pendingBytes - keep)
	s.pendingBytes = keep
	if err == nil && in != nil {
		// A head alone shares the buffers of its batch: the rest's
		// reservation covers them, unless the rest is copied, when the
		// head takes the batch's.
		n := kernels.BatchBytes(in)
		if len(done) == 1 && head != nil {
			n = 0
			if compact {
				n = lastSize
			}
		}
		err = s.setReady(in, n)
	}
	if err == nil && compact {
		err = s.compactRest(&rest)
		keep = s.pendingBytes
	}
	if in != nil {
		in.Release()
	}
	if rest == nil {
		return err
	}
	if err != nil {
		rest.Release()
		return err
	}
	keys, err := s.pcmp.evalKeys(rest, s.tc.Alloc)
	if err != nil {
		rest.Release()
		return fmt.Errorf("window: %w", err)
	}
	s.pending = append(s.pending, rest)
	s.pendingSizes = append(s.pendingSizes, keep)
	s.pcmp.addBatch(keys)
	return nil
}

// compactRest replaces *rest with a copy of its rows, reserved as the
// pending bytes.
func (s *windowStream) compactRest(rest *arrow.RecordBatch) error {
	n := (*rest).NumRows()
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	c, err := kernels.SelectRows(s.tc.Alloc, *rest, idx)
	if err != nil {
		return fmt.Errorf("window: %w", err)
	}
	size := kernels.BatchBytes(c)
	if err := s.res.Grow(size); err != nil {
		err = s.refused(err, c, fmt.Sprintf("reading the window partition %%s: %d rows so far", n))
		c.Release()
		return err
	}
	(*rest).Release()
	*rest = c
	s.pendingBytes = size
	return nil
}

// setReady queues in, which holds complete window partitions, for
// evaluation (retaining it), reserving n bytes for it.
func (s *windowStream) setReady(in arrow.RecordBatch, n int64) error {
	if err := s.res.Grow(n); err != nil {
		if canSpill(s.tc, err) {
			return s.spillAll(in)
		}
		return s.refused(err, in, fmt.Sprintf("holding complete window partitions from %%s on: %d rows", in.NumRows()))
	}
	parts, err := s.partitionStarts(in)
	if err != nil {
		s.res.Shrink(n)
		return err
	}
	in.Retain()
	s.ready, s.readyBytes, s.readyParts = in, n, parts
	return nil
}

// partitionStarts returns the rows of b that start a window partition,
// then b's length.
func (s *windowStream) partitionStarts(b arrow.RecordBatch) ([]int, error) {
	cmp, err := newRowComparator(s.op.partitionSortKeys())
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	defer cmp.release()
	keys, err := cmp.evalKeys(b, s.tc.Alloc)
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	cmp.addBatch(keys)
	n := int(b.NumRows())
	starts := []int{0}
	for r := 1; r < n; r++ {
		if cmp.compare(kernels.RowRef{Row: int32(r - 1)}, kernels.RowRef{Row: int32(r)}) != 0 {
			starts = append(starts, r)
		}
	}
	return append(starts, n), nil
}

// evaluateGroup computes the window functions over the next ready
// partitions, as many as make a batch (at least one; fewer when their
// output is refused memory), and queues the output. Each group's output
// is returned before the next is computed, so the window holds one
// group's results at a time.
func (s *windowStream) evaluateGroup() error {
	size := max(s.tc.BatchSize, 1)
	first := s.readyParts[0]
	k := 1 // partitions in the group
	for k+1 < len(s.readyParts) && s.readyParts[k+1]-first <= size {
		k++
	}
	for {
		group := s.ready.NewSlice(int64(first), int64(s.readyParts[k]))
		err := s.evaluate(group)
		group.Release()
		if err == nil {
			break
		}
		if !canSpill(s.tc, err) {
			return err
		}
		if k == 1 {
			// One partition whose results do not fit: it is evaluated
			// from disk.
			if err := s.spillReady(first, s.readyParts[1]); err != nil {
				return err
			}
			break
		}
		k /= 2
	}
	s.readyParts = s.readyParts[k:]
	if len(s.readyParts) == 1 {
		s.ready.Release()
		s.ready = nil
		s.res.Shrink(s.readyBytes)
		s.readyBytes = 0
	}
	return nil
}

// evaluate computes the window functions over in, complete window
// partitions of the ready batch, and queues the output.
func (s *windowStream) evaluate(in arrow.RecordBatch) error {
	whole, err := s.compute(in)
	if err != nil {
		return err
	}
	defer whole.Release()
	// The output's input columns are the ready batch's, reserved with it:
	// the results are what is new.
	need := max(kernels.BatchBytes(whole)-kernels.BatchBytes(in), 0)
	if err := s.res.Grow(need); err != nil {
		return s.refused(err, in, fmt.Sprintf("evaluating window partitions from %%s on: %d rows", in.NumRows()))
	}
	s.outBytes += need
	size := int64(max(s.tc.BatchSize, 1))
	for off := int64(0); off < whole.NumRows(); off += size {
		s.out = append(s.out, whole.NewSlice(off, min(off+size, whole.NumRows())))
	}
	return nil
}

// refused wraps a refused reservation. In a task that may spill it says
// which window partition the window was reading or evaluating: it spills
// a partition too large for memory, so a refusal means the task has too
// little left for an input batch, a batch's worth of results or the
// blocks of a spilled partition it reads back. first is a batch whose
// first row starts that partition (a pending or ready batch always
// starts at a partition's first row); doing says what the window was
// doing, with a %s for the partition. The explanation goes into the
// LimitError, as that is what a cluster shows the user.
func (s *windowStream) refused(err error, first arrow.RecordBatch, doing string) error {
	var le *mempool.LimitError
	if !canSpill(s.tc, err) || !errors.As(err, &le) {
		return fmt.Errorf("window: %w", err)
	}
	what := "(the whole input, as the window has no PARTITION BY)"
	if len(s.op.partitionBy) > 0 {
		what = "PARTITION BY " + s.partitionKeys(first)
	}
	e := *le
	e.Owner = fmt.Sprintf("%s, %s,", le.Owner, fmt.Sprintf(doing, what))
	e.Hint = "a window holds in memory the input batch it reads and a batch's worth of results, and spills a window partition larger than memory to evaluate it from disk a block at a time, with a few blocks per window function"
	if le.Hint != "" {
		e.Hint += "; " + le.Hint
	}
	return fmt.Errorf("window: %w", &e)
}

// partitionKeys renders the partition keys of b's first row, for an
// error message.
func (s *windowStream) partitionKeys(b arrow.RecordBatch) string {
	parts := make([]string, len(s.op.partitionBy))
	row := b.NewSlice(0, min(b.NumRows(), 1))
	defer row.Release()
	vals, err := kernels.EvalAll(s.op.partitionBy, row, s.tc.Alloc)
	for i, p := range s.op.partitionBy {
		v := "?"
		switch {
		case err != nil || vals[i].Len() == 0:
		case vals[i].IsNull(0):
			v = "NULL"
		default:
			v = vals[i].ValueStr(0)
			if vals[i].DataType().ID() == arrow.STRING {
				v = "'" + v + "'"
			}
		}
		name := p.String()
		if c, ok := p.(*expr.Column); ok && c.Name != "" {
			name = c.Name
		}
		parts[i] = name + " = " + v
	}
	if err == nil {
		kernels.ReleaseAll(vals)
	}
	return strings.Join(parts, ", ")
}

// compute appends the window functions' results to in.
func (s *windowStream) compute(in arrow.RecordBatch) (arrow.RecordBatch, error) {
	p, err := newWindowPartitions(s.op, in, s.tc)
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	defer p.release()
	cols := append([]arrow.Array(nil), in.Columns()...)
	results := make([]arrow.Array, 0, len(s.op.funcs))
	defer func() { kernels.ReleaseAll(results) }()
	for _, f := range s.op.funcs {
		a, err := p.compute(f)
		if err != nil {
			return nil, fmt.Errorf("window: %s: %w", f, err)
		}
		results = append(results, a)
	}
	return array.NewRecordBatch(s.op.schema, append(cols, results...), in.NumRows()), nil
}

func (s *windowStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.in.Close()
	kernels.ReleaseAll(s.pending)
	s.pending = nil
	kernels.ReleaseAll(s.out)
	s.out = nil
	if s.ready != nil {
		s.ready.Release()
		s.ready = nil
	}
	if s.spill != nil {
		s.spill.close()
		s.spill = nil
	}
	for _, sp := range s.queued {
		sp.close()
	}
	s.queued = nil
	if s.deferred != nil {
		s.deferred.Release()
		s.deferred = nil
	}
	s.pcmp.release()
	s.res.Free()
}
