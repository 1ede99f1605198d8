package physical

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/physical/spill"
)

// A window partition larger than the memory a task has left is spilled
// where the task may spill: its rows, which arrive sorted, are written to
// a spill file in blocks, each row with the first row of its peer group
// (the rows equal on the ORDER BY keys), and the window functions are then
// computed a block at a time, reading the file back through cursors that
// each hold a block or two. Every frame's start and end only move
// forward as the current row does, so a cursor per moving position (the
// frame's start, its end, the end of the current peer group, a RANGE
// bound) reads each block about once: running and sliding aggregates,
// ranks, lag/lead and first/last/nth_value each take one pass beside the
// output's, and what needs the partition's size (ntile, percent_rank,
// cume_dist, frames to UNBOUNDED FOLLOWING) has it, since the partition
// is written whole before it is read. The file is in the Arrow IPC file
// format, whose footer indexes the blocks, so a cursor may also go back
// (an aggregate that cannot remove rows starting its frame over, a lag
// whose offset varies from row to row).

// windowPeerColumn is the column a spilled window partition's rows carry
// beside the input's: the partition row its peer group starts at.
const windowPeerColumn = "__window_peer_start"

// windowSpillBlockBytes is about how large a block of a spilled window
// partition is (at most a 64th of the task's limit): small enough that
// the cursors of several functions fit, large enough to read efficiently.
var windowSpillBlockBytes int64 = 128 << 10

// spilledWindow is one window partition written to disk, then evaluated
// from it.
type spilledWindow struct {
	op     *Window
	tc     *TaskContext
	res    *mempool.Reservation
	schema *arrow.Schema // the input's, then windowPeerColumn
	// refused wraps a refused reservation, naming the partition.
	refused func(err error, first arrow.RecordBatch, doing string) error

	f   *os.File
	buf *bufio.Writer
	w   *ipc.FileWriter
	rd  *ipc.FileReader
	// starts are the partition rows each block starts at, then n.
	starts []int64
	n      int64
	per    int64 // rows per block
	// nullKeys counts the rows whose first ORDER BY key is NULL (they
	// are all first or all last): RANGE offset frames skip them.
	nullKeys int64
	peer     int64 // the peer group start of the last row written
	ocmp     *rowComparator
	prevKeys []arrow.Array // the ORDER BY keys of the last batch written
	pcmp     *rowComparator
	// first is the partition's first row, and firstKeys its partition
	// keys: a row of a later partition ends this one.
	first     arrow.RecordBatch
	firstKeys []arrow.Array

	eval *windowSpillEval
}

// newSpilledWindow starts spilling the window partition whose first row
// is first's.
func newSpilledWindow(s *windowStream, first arrow.RecordBatch) (*spilledWindow, error) {
	op := s.op
	fields := append(append([]arrow.Field(nil), op.input.Schema().Fields()...), arrow.Field{Name: windowPeerColumn, Type: arrow.PrimitiveTypes.Int64})
	sp := &spilledWindow{op: op, tc: s.tc, res: s.res, refused: s.refused, schema: arrow.NewSchema(fields, nil)}
	var err error
	if sp.ocmp, err = newRowComparator(op.orderBy); err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	if sp.pcmp, err = newRowComparator(op.partitionSortKeys()); err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	if sp.first, err = kernels.SelectRows(s.tc.Alloc, first, []int32{0}); err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	if sp.firstKeys, err = sp.pcmp.evalKeys(sp.first, s.tc.Alloc); err != nil {
		sp.close()
		return nil, fmt.Errorf("window: %w", err)
	}
	f, err := spill.CreateTemp(s.tc.SpillDir, "sluice-spill-*.arrow")
	if err != nil {
		sp.close()
		return nil, fmt.Errorf("window: spilling to disk: %w", err)
	}
	sp.f, sp.buf = f, bufio.NewWriterSize(f, 256<<10)
	if sp.w, err = ipc.NewFileWriter(sp.buf, ipc.WithSchema(sp.schema), ipc.WithAllocator(s.tc.Alloc)); err != nil {
		sp.close()
		return nil, fmt.Errorf("window: spilling to disk: %w", err)
	}
	return sp, nil
}

// rowsIn returns how many leading rows of b belong to the partition (b
// is sorted by the partition keys, so the rest belong to later ones).
func (sp *spilledWindow) rowsIn(b arrow.RecordBatch) (int, error) {
	keys, err := sp.pcmp.evalKeys(b, sp.tc.Alloc)
	if err != nil {
		return 0, fmt.Errorf("window: %w", err)
	}
	for _, k := range sp.firstKeys {
		k.Retain()
	}
	sp.pcmp.addBatch(sp.firstKeys)
	sp.pcmp.addBatch(keys)
	defer sp.pcmp.reset()
	n := int(b.NumRows())
	for r := 0; r < n; r++ {
		if sp.pcmp.compare(kernels.RowRef{Batch: 0, Row: 0}, kernels.RowRef{Batch: 1, Row: int32(r)}) != 0 {
			return r, nil
		}
	}
	return n, nil
}

// write appends b, rows of the partition, to the file.
func (sp *spilledWindow) write(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	if n == 0 {
		return nil
	}
	keys, err := sp.ocmp.evalKeys(b, sp.tc.Alloc)
	if err != nil {
		return fmt.Errorf("window: %w", err)
	}
	if len(keys) > 0 {
		sp.nullKeys += int64(keys[0].NullN())
	}
	for _, k := range keys {
		k.Retain()
	}
	sp.ocmp.addBatch(sp.prevKeys) // slot 0: the previous batch's (nil for none)
	sp.ocmp.addBatch(keys)
	peers := make([]int64, n)
	for i := range peers {
		r := sp.n + int64(i)
		if r == 0 {
			sp.peer = 0
		} else {
			prev := kernels.RowRef{Batch: 1, Row: int32(i - 1)}
			if i == 0 {
				prev = kernels.RowRef{Batch: 0, Row: int32(sp.prevKeysRows() - 1)}
			}
			if sp.ocmp.compare(prev, kernels.RowRef{Batch: 1, Row: int32(i)}) != 0 {
				sp.peer = r
			}
		}
		peers[i] = sp.peer
	}
	sp.ocmp.reset()
	sp.prevKeys = keys
	pb := array.NewInt64Builder(sp.tc.Alloc)
	pb.AppendValues(peers, nil)
	peerArr := pb.NewArray()
	pb.Release()
	cols := append(append([]arrow.Array(nil), b.Columns()...), peerArr)
	full := array.NewRecordBatch(sp.schema, cols, int64(n))
	peerArr.Release()
	defer full.Release()
	if sp.per == 0 {
		// Under a small limit, smaller blocks: the cursors of several
		// functions hold a few each.
		block := windowSpillBlockBytes
		if limit := sp.tc.Memory.Limit(); limit > 0 {
			block = max(min(block, limit/64), 1)
		}
		sp.per = max(8, min(int64(max(sp.tc.BatchSize, 1)), block*int64(n)/max(kernels.BatchBytes(full), 1)))
	}
	for off := int64(0); off < int64(n); off += sp.per {
		piece := full.NewSlice(off, min(off+sp.per, int64(n)))
		err := sp.w.Write(piece)
		piece.Release()
		if err != nil {
			return fmt.Errorf("window: spilling to disk: %w", err)
		}
		sp.starts = append(sp.starts, sp.n+off)
	}
	sp.n += int64(n)
	return nil
}

// prevKeysRows is the length of the previous batch's keys (with no ORDER
// BY there are none, and every row is a peer of every other).
func (sp *spilledWindow) prevKeysRows() int {
	if len(sp.prevKeys) == 0 {
		return 1
	}
	return sp.prevKeys[0].Len()
}

// finish ends writing and starts the evaluation.
func (sp *spilledWindow) finish() error {
	if err := sp.w.Close(); err != nil {
		return fmt.Errorf("window: spilling to disk: %w", err)
	}
	sp.w = nil
	if err := sp.buf.Flush(); err != nil {
		return fmt.Errorf("window: spilling to disk: %w", err)
	}
	size, err := sp.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("window: spilling to disk: %w", err)
	}
	spill.Wrote(size)
	sp.starts = append(sp.starts, sp.n)
	if sp.rd, err = ipc.NewFileReader(io.NewSectionReader(sp.f, 0, size), ipc.WithAllocator(sp.tc.Alloc)); err != nil {
		return fmt.Errorf("window: reading back the spilled window partition: %w", err)
	}
	if sp.rd.NumRecords() != len(sp.starts)-1 {
		return fmt.Errorf("window: reading back the spilled window partition: %d blocks, wrote %d", sp.rd.NumRecords(), len(sp.starts)-1)
	}
	sp.eval, err = newWindowSpillEval(sp)
	return err
}

// next returns the next batch of the partition's output, and the bytes
// of it (its results) reserved.
func (sp *spilledWindow) next() (arrow.RecordBatch, int64, error) {
	return sp.eval.next()
}

// close drops the cursors, the file and what the partition holds.
func (sp *spilledWindow) close() {
	if sp.eval != nil {
		sp.eval.close()
		sp.eval = nil
	}
	if sp.rd != nil {
		sp.rd.Close()
		sp.rd = nil
	}
	if sp.w != nil {
		sp.w.Close()
		sp.w = nil
	}
	if sp.f != nil {
		sp.f.Close()
		sp.f = nil
	}
	kernels.ReleaseAll(sp.prevKeys)
	sp.prevKeys = nil
	kernels.ReleaseAll(sp.firstKeys)
	sp.firstKeys = nil
	if sp.first != nil {
		sp.first.Release()
		sp.first = nil
	}
	if sp.ocmp != nil {
		sp.ocmp.release()
	}
	if sp.pcmp != nil {
		sp.pcmp.release()
	}
}

// blockOf returns the block holding partition row r.
func (sp *spilledWindow) blockOf(r int64) int {
	return sort.Search(len(sp.starts)-1, func(i int) bool { return sp.starts[i+1] > r })
}

// winBlock is a block of a spilled window partition a cursor holds.
type winBlock struct {
	idx   int
	base  int64 // the partition row of its row 0
	b     arrow.RecordBatch
	cols  []arrow.Array // the cursor's expressions, evaluated on b
	aux   any           // what the cursor's prep derived from them
	bytes int64         // reserved
}

// peers returns the block's peer group starts.
func (b *winBlock) peers() []int64 {
	return b.b.Column(int(b.b.NumCols()) - 1).(*array.Int64).Int64Values()
}

func (b *winBlock) release() {
	kernels.ReleaseAll(b.cols)
	b.b.Release()
}

// winCursor reads a spilled window partition's rows a block at a time,
// holding the last keep blocks it read.
type winCursor struct {
	sp     *spilledWindow
	exprs  []expr.Expr
	prep   func(*winBlock) error
	keep   int
	blocks []*winBlock
}

func (sp *spilledWindow) cursor(exprs []expr.Expr, keep int, prep func(*winBlock) error) *winCursor {
	return &winCursor{sp: sp, exprs: exprs, keep: keep, prep: prep}
}

// at returns the block holding partition row r, and r's row in it.
func (c *winCursor) at(r int64) (*winBlock, int, error) {
	for i := len(c.blocks) - 1; i >= 0; i-- {
		b := c.blocks[i]
		if r >= b.base && r < b.base+b.b.NumRows() {
			return b, int(r - b.base), nil
		}
	}
	if r < 0 || r >= c.sp.n {
		return nil, 0, fmt.Errorf("window: internal: row %d of a spilled partition of %d rows", r, c.sp.n)
	}
	b, err := c.load(c.sp.blockOf(r))
	if err != nil {
		return nil, 0, err
	}
	return b, int(r - b.base), nil
}

func (c *winCursor) load(idx int) (*winBlock, error) {
	if len(c.blocks) >= c.keep {
		c.drop(c.blocks[0])
		c.blocks = c.blocks[1:]
	}
	rec, err := c.sp.rd.RecordBatchAt(idx)
	if err != nil {
		return nil, fmt.Errorf("window: reading back the spilled window partition: %w", err)
	}
	blk := &winBlock{idx: idx, base: c.sp.starts[idx], b: rec}
	if blk.cols, err = evalWindowArgs(c.exprs, rec, c.sp.tc.Alloc); err != nil {
		rec.Release()
		return nil, fmt.Errorf("window: %w", err)
	}
	blk.bytes = kernels.BatchBytes(rec)
	for i, a := range blk.cols {
		if _, isCol := c.exprs[i].(*expr.Column); !isCol {
			blk.bytes += kernels.ArrayBytes(a.Data())
		}
	}
	if err := c.sp.res.Grow(blk.bytes); err != nil {
		blk.release()
		return nil, c.sp.refused(err, c.sp.first, fmt.Sprintf("evaluating the spilled window partition %%s (%d rows) a block of %d rows at a time", c.sp.n, rec.NumRows()))
	}
	if c.prep != nil {
		if err := c.prep(blk); err != nil {
			c.drop(blk)
			return nil, err
		}
	}
	c.blocks = append(c.blocks, blk)
	return blk, nil
}

func (c *winCursor) drop(b *winBlock) {
	c.sp.res.Shrink(b.bytes)
	b.release()
}

func (c *winCursor) close() {
	for _, b := range c.blocks {
		c.drop(b)
	}
	c.blocks = nil
}

// evalWindowArgs evaluates a window function's arguments on b; a NULL
// result of an argument of another type becomes an all-NULL array of
// that type.
func evalWindowArgs(exprs []expr.Expr, b arrow.RecordBatch, mem memory.Allocator) ([]arrow.Array, error) {
	args, err := kernels.EvalAll(exprs, b, mem)
	if err != nil {
		return nil, err
	}
	for i, a := range args {
		if a.DataType().ID() == arrow.NULL && exprs[i].DataType().ID() != arrow.NULL {
			na := array.MakeArrayOfNull(mem, exprs[i].DataType(), a.Len())
			a.Release()
			args[i] = na
		}
	}
	return args, nil
}

// startSpill spills the window partition being read, whose rows are the
// pending ones (if any), then b's first rows.
func (s *windowStream) startSpill(b arrow.RecordBatch) error {
	first := b
	if len(s.pending) > 0 {
		first = s.pending[0]
	}
	sp, err := newSpilledWindow(s, first)
	if err != nil {
		b.Release()
		return err
	}
	for _, p := range s.pending {
		if err == nil {
			err = sp.write(p)
		}
	}
	kernels.ReleaseAll(s.pending)
	s.pending, s.pendingSizes = s.pending[:0], s.pendingSizes[:0]
	s.pcmp.reset()
	s.res.Shrink(s.pendingBytes)
	s.pendingBytes = 0
	if err != nil {
		sp.close()
		b.Release()
		return err
	}
	s.spill = sp
	return s.spillMore(b)
}

// spillMore writes the rows of b that belong to the partition being
// spilled; when the partition ends in b, it starts evaluating it and
// keeps the rest of b for afterwards.
func (s *windowStream) spillMore(b arrow.RecordBatch) error {
	sp := s.spill
	// The batch is reserved while its rows are written, if the task has
	// room; if not, it is written anyway: it is in memory already, and
	// writing it is what frees it (refusing it would only fail the query).
	n := kernels.BatchBytes(b)
	if err := s.res.Grow(n); err != nil {
		if !canSpill(s.tc, err) {
			b.Release()
			return fmt.Errorf("window: %w", err)
		}
		n = 0
	}
	k, err := sp.rowsIn(b)
	if err == nil && k > 0 {
		head := b.NewSlice(0, int64(k))
		err = sp.write(head)
		head.Release()
	}
	if err != nil || k == int(b.NumRows()) {
		b.Release()
		s.res.Shrink(n)
		return err
	}
	s.deferred = b.NewSlice(int64(k), b.NumRows())
	s.deferredBytes = n
	b.Release()
	return sp.finish()
}

// spillReady spills the ready partition [from, to) of the ready batch,
// whose results were refused memory, and starts evaluating it.
func (s *windowStream) spillReady(from, to int) error {
	part := s.ready.NewSlice(int64(from), int64(to))
	defer part.Release()
	sp, err := newSpilledWindow(s, part)
	if err != nil {
		return err
	}
	if err := sp.write(part); err != nil {
		sp.close()
		return err
	}
	s.spill = sp
	return sp.finish()
}

// spillAll spills every window partition of in, complete partitions
// the window was refused the memory to hold, each to a file of its own,
// and queues them for evaluation. in is held (not reserved) only while
// its rows are written: they were reserved as pending rows until then.
func (s *windowStream) spillAll(in arrow.RecordBatch) error {
	parts, err := s.partitionStarts(in)
	if err != nil {
		return err
	}
	var spills []*spilledWindow
	for i := 0; i+1 < len(parts); i++ {
		part := in.NewSlice(int64(parts[i]), int64(parts[i+1]))
		sp, err := newSpilledWindow(s, part)
		if err == nil {
			spills = append(spills, sp)
			if err = sp.write(part); err == nil {
				err = sp.finish()
			}
		}
		part.Release()
		if err != nil {
			for _, sp := range spills {
				sp.close()
			}
			return err
		}
	}
	s.spill, s.queued = spills[0], spills[1:]
	return nil
}

// nextSpilled queues the next output batch of the spilled partition; at
// its end it drops the partition and goes on with the input rows after
// it.
func (s *windowStream) nextSpilled() error {
	b, n, err := s.spill.next()
	if errors.Is(err, io.EOF) {
		s.spill.close()
		s.spill = nil
		if len(s.queued) > 0 {
			s.spill, s.queued = s.queued[0], s.queued[1:]
			return nil
		}
		if d := s.deferred; d != nil {
			s.deferred = nil
			s.res.Shrink(s.deferredBytes)
			s.deferredBytes = 0
			return s.add(d)
		}
		return nil
	}
	if err != nil {
		return err
	}
	s.outBytes += n
	s.out = append(s.out, b)
	return nil
}
