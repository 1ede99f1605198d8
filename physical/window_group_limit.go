package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/plan"
)

// WindowGroupLimit drops rows a filter above a window would drop anyway:
// below a Window computing only row_number, rank or dense_rank over one
// window, filtered by fn <= limit (Spark's WindowGroupLimit; TPC-DS q67
// keeps rank <= 100 of 167,000 rows in 11 partitions), it passes on only
// the rows whose fn, among the rows of its own partition it has seen, is
// at most limit. A row's fn among a subset of its window partition is never
// more than among all of it, so every row the filter keeps is passed on,
// and the ranking functions of those rows come out as over all rows (see
// docs/architecture.md). It works on any partitioning of its input: the
// planner puts it below the exchange and the sort that bring a window's
// rows together, so they move and sort only the candidates.
//
// It holds the candidates of each input partition: it adds batches, and
// when the candidates reach a bound it sorts them by the partition and
// order keys and keeps those within the limit. A window partition that
// then has limit rows within it (limit distinct values for dense_rank) has
// a boundary row, and a later row of that partition ordered strictly
// after its boundary is dropped on arrival. When sorting at least
// GroupLimitCompactRows candidates keeps more than three quarters of
// them, or the memory they need is refused, it gives up: it passes on what it holds and every later row unchanged.
// Either way the filter above stays and decides.
type WindowGroupLimit struct {
	input       Operator
	partitionBy []expr.Expr
	orderBy     []SortKey
	fn          plan.WindowFunc
	limit       int64
}

var _ Operator = (*WindowGroupLimit)(nil)

// NewWindowGroupLimit returns a WindowGroupLimit of input, for fn (row_number,
// rank or dense_rank) over the window (partitionBy, orderBy) at most limit.
func NewWindowGroupLimit(input Operator, partitionBy []expr.Expr, orderBy []SortKey, fn plan.WindowFunc, limit int64) (*WindowGroupLimit, error) {
	switch fn {
	case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank:
	default:
		return nil, fmt.Errorf("window group limit: %s is not a ranking function", fn)
	}
	if _, err := newRowComparator(WindowSortKeys(partitionBy, orderBy)); err != nil {
		return nil, fmt.Errorf("window group limit: %w", err)
	}
	return &WindowGroupLimit{input: input, partitionBy: partitionBy, orderBy: orderBy, fn: fn, limit: limit}, nil
}

// PartitionBy are the window's partition keys.
func (w *WindowGroupLimit) PartitionBy() []expr.Expr { return w.partitionBy }

// OrderBy are the window's order keys.
func (w *WindowGroupLimit) OrderBy() []SortKey { return w.orderBy }

// Func is the ranking function limited.
func (w *WindowGroupLimit) Func() plan.WindowFunc { return w.fn }

// Limit is the largest value of Func a row passed on may have.
func (w *WindowGroupLimit) Limit() int64 { return w.limit }

// Schema implements Operator.
func (w *WindowGroupLimit) Schema() *arrow.Schema { return w.input.Schema() }

// Children implements Operator.
func (w *WindowGroupLimit) Children() []Operator { return []Operator{w.input} }

// OutputPartitioning implements Operator: rows stay in their partition.
func (w *WindowGroupLimit) OutputPartitioning() Partitioning { return w.input.OutputPartitioning() }

func (w *WindowGroupLimit) String() string {
	ps := make([]string, len(w.partitionBy))
	for i, p := range w.partitionBy {
		ps[i] = p.String()
	}
	return fmt.Sprintf("WindowGroupLimit: partitionBy=[%s] orderBy=[%s] %s() <= %d",
		strings.Join(ps, ", "), sortKeysString(w.orderBy), w.fn, w.limit)
}

// GroupLimitCompactRows is how many candidates a WindowGroupLimit holds
// before it first sorts them down to the limit; later it sorts when they
// have doubled since. Tests vary it.
var GroupLimitCompactRows = 16384

// groupLimitCompactSlots is how many input batches it holds candidates of
// before it sorts them, whatever their number: few rows of many batches
// would otherwise pin all of them.
const groupLimitCompactSlots = 32

// Execute implements Operator.
func (w *WindowGroupLimit) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	cmp, err := newRowComparator(WindowSortKeys(w.partitionBy, w.orderBy))
	if err != nil {
		return nil, fmt.Errorf("window group limit: %w", err)
	}
	in, err := ExecuteOp(ctx, w.input, partition, tc)
	if err != nil {
		cmp.release()
		return nil, err
	}
	return &groupLimitStream{
		op:        w,
		in:        in,
		tc:        tc,
		cmp:       cmp,
		np:        len(w.partitionBy),
		res:       tc.NewReservation(ctx, fmt.Sprintf("WindowGroupLimit[%d]", partition)),
		compactAt: max(GroupLimitCompactRows, 1),
	}, nil
}

type groupLimitStream struct {
	op  *WindowGroupLimit
	in  Stream
	tc  *TaskContext
	cmp *rowComparator // partition keys, then order keys
	np  int            // partition keys
	res *mempool.Reservation

	batches []arrow.RecordBatch // slot per held batch (nil: released)
	live    int                 // slots with a batch
	cands   []kernels.RowRef    // the candidates, in slots' order
	// bounds maps a hash of a full window partition's keys to its
	// boundary row (a row of slot 0, which sorting wrote).
	bounds    map[uint64]kernels.RowRef
	compactAt int
	compacted int // candidates the last sort kept (all of slot 0)

	out     []kernels.RowRef // rows being emitted
	passing bool             // gave up: after out, the input passes unchanged
	refused bool             // memory for the candidates was refused
	ended   bool             // the input is exhausted (when not passing)
	closed  bool
	err     error
	hashes  []uint64
}

func (s *groupLimitStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, io.EOF
	}
	if s.err != nil {
		return nil, s.err
	}
	if !s.passing && !s.ended {
		if err := s.consume(ctx); err != nil {
			s.err = err
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.out) > 0 {
		n := min(len(s.out), max(s.tc.BatchSize, 1))
		b, err := kernels.InterleaveBatches(s.tc.Alloc, s.op.input.Schema(), s.batches, s.out[:n])
		if err != nil {
			s.err = fmt.Errorf("window group limit: %w", err)
			return nil, s.err
		}
		s.out = s.out[n:]
		if len(s.out) == 0 {
			s.dropAll()
		}
		return b, nil
	}
	if s.passing {
		return s.in.Next(ctx)
	}
	return nil, io.EOF
}

// consume reads the input until it ends (the candidates left are the
// output) or the stream gives up (what it holds is output first).
func (s *groupLimitStream) consume(ctx context.Context) error {
	for {
		b, err := s.in.Next(ctx)
		if errors.Is(err, io.EOF) {
			s.ended = true
			if len(s.cands) > s.compacted || s.live > 1 {
				if err := s.compact(); err != nil {
					return err
				}
			}
			s.out = s.cands
			s.cands = nil
			s.in.Close()
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.add(b); err != nil {
			return err
		}
		if s.passing {
			return nil
		}
		if len(s.cands) >= s.compactAt || s.live > groupLimitCompactSlots {
			before := len(s.cands)
			if err := s.compact(); err != nil {
				return err
			}
			if s.refused || (before >= GroupLimitCompactRows && 4*len(s.cands) > 3*before) {
				s.giveUp()
				return nil
			}
			s.compactAt = max(2*len(s.cands), GroupLimitCompactRows, 1)
		}
	}
}

// giveUp passes on the candidates held, then the rest of the input.
func (s *groupLimitStream) giveUp() {
	s.passing = true
	s.out = s.cands
	s.cands = nil
	s.bounds = nil
}

// add takes b in: its rows not after their partition's boundary become
// candidates.
func (s *groupLimitStream) add(b arrow.RecordBatch) error {
	keys, err := s.cmp.evalKeys(b, s.tc.Alloc)
	if err != nil {
		b.Release()
		return fmt.Errorf("window group limit: %w", err)
	}
	slot := int32(len(s.batches))
	s.batches = append(s.batches, b)
	s.cmp.addBatch(keys)
	s.live++
	n := int(b.NumRows())
	start := len(s.cands)
	if len(s.bounds) == 0 {
		for r := 0; r < n; r++ {
			s.cands = append(s.cands, kernels.RowRef{Batch: slot, Row: int32(r)})
		}
	} else {
		h, err := s.partitionHashes(keys, n)
		if err != nil {
			return err
		}
		nk := len(s.cmp.cols)
		for r := 0; r < n; r++ {
			ref := kernels.RowRef{Batch: slot, Row: int32(r)}
			// A hash shared by two partitions finds the other's
			// boundary: the row is kept, which is always correct.
			if bd, ok := s.bounds[h[r]]; ok && s.cmp.compareKeys(bd, ref, 0, s.np) == 0 &&
				s.cmp.compareKeys(bd, ref, s.np, nk) < 0 {
				continue
			}
			s.cands = append(s.cands, ref)
		}
	}
	if len(s.cands) == start {
		s.drop(slot)
		return nil
	}
	if err := s.res.Grow(kernels.BatchBytes(b)); err != nil {
		if !errors.Is(err, mempool.ErrResourcesExhausted) {
			return fmt.Errorf("window group limit: %w", err)
		}
		// The batch is held already; it leaves with the candidates.
		s.giveUp()
	}
	return nil
}

// partitionHashes hashes the partition keys of n rows (keys: their
// evaluated sort keys) into a buffer reused until the next call.
func (s *groupLimitStream) partitionHashes(keys []arrow.Array, n int) ([]uint64, error) {
	if cap(s.hashes) < n {
		s.hashes = make([]uint64, n)
	}
	h := s.hashes[:n]
	if err := HashRows(keys[:s.np], h); err != nil {
		return nil, fmt.Errorf("window group limit: %w", err)
	}
	return h, nil
}

// drop releases slot i.
func (s *groupLimitStream) drop(i int32) {
	b := s.batches[i]
	if b == nil {
		return
	}
	s.batches[i] = nil
	s.cmp.dropBatch(int(i))
	s.live--
	b.Release()
}

// dropAll releases every slot and the memory reserved for them.
func (s *groupLimitStream) dropAll() {
	for i := range s.batches {
		s.drop(int32(i))
	}
	s.batches = s.batches[:0]
	s.cmp.reset()
	s.res.Free()
}

// compact sorts the candidates, keeps those within the limit in their
// partition, copies them into one batch (slot 0) and records the boundary
// of every partition that has reached the limit.
func (s *groupLimitStream) compact() error {
	c := s.cands
	sortRefsByPrefix(s.cmp, c)
	nk := len(s.cmp.cols)
	limit := s.op.limit
	var kept []kernels.RowRef
	var boundAt []int // indexes into kept
	var pos, value int64
	lastKept, full := -1, false
	samePart := false // row i is in row i-1's partition
	for i, r := range c {
		if !samePart {
			pos, value, lastKept, full = 0, 0, -1, false
		}
		peer := samePart && s.cmp.compareKeys(c[i-1], r, s.np, nk) == 0
		pos++
		switch s.op.fn {
		case plan.WinRowNumber:
			value = pos
		case plan.WinRank:
			if !peer {
				value = pos
			}
		case plan.WinDenseRank:
			if !peer {
				value++
			}
		}
		if value <= limit {
			kept = append(kept, r)
			lastKept = len(kept) - 1
			// Full once limit rows (limit distinct values for
			// dense_rank) are kept: a later row ordered after the
			// last of them is beyond the limit.
			full = pos >= limit
			if s.op.fn == plan.WinDenseRank {
				full = value >= limit
			}
		}
		samePart = i+1 < len(c) && s.cmp.compareKeys(r, c[i+1], 0, s.np) == 0
		if !samePart && full {
			boundAt = append(boundAt, lastKept)
		}
	}
	s.bounds = nil
	if len(kept) == 0 {
		s.cands = nil
		s.compacted = 0
		s.dropAll()
		return nil
	}
	b, err := kernels.InterleaveBatches(s.tc.Alloc, s.op.input.Schema(), s.batches, kept)
	if err != nil {
		return fmt.Errorf("window group limit: %w", err)
	}
	s.dropAll()
	keys, err := s.cmp.evalKeys(b, s.tc.Alloc)
	if err != nil {
		b.Release()
		return fmt.Errorf("window group limit: %w", err)
	}
	s.batches = append(s.batches, b)
	s.cmp.addBatch(keys)
	s.live = 1
	if err := s.res.Grow(kernels.BatchBytes(b)); err != nil {
		if !errors.Is(err, mempool.ErrResourcesExhausted) {
			return fmt.Errorf("window group limit: %w", err)
		}
		s.refused = true
	}
	n := int(b.NumRows())
	s.cands = make([]kernels.RowRef, n)
	for r := range s.cands {
		s.cands[r] = kernels.RowRef{Batch: 0, Row: int32(r)}
	}
	s.compacted = n
	if len(boundAt) > 0 {
		h, err := s.partitionHashes(keys, n)
		if err != nil {
			return err
		}
		s.bounds = make(map[uint64]kernels.RowRef, len(boundAt))
		for _, i := range boundAt {
			s.bounds[h[i]] = s.cands[i]
		}
	}
	return nil
}

func (s *groupLimitStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.out, s.cands, s.bounds = nil, nil, nil
	s.dropAll()
	s.in.Close()
}
