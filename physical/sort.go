package physical

import (
	"context"
	"errors"
	"fmt"
	"io"

	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/physical/spill"

	"github.com/apache/arrow-go/v18/arrow"
)

// Sort sorts each input partition independently by keys. With fetch >= 0 it
// is a top-K: only the first fetch rows of each partition are kept, using a
// bounded heap instead of sorting everything.
//
// The full sort buffers the partition (reserving its bytes from the task
// pool), sorts a permutation of row references with a multi-key comparator
// and gathers the output in batches of tc.BatchSize. When the pool refuses
// a batch and the task may spill (TaskContext.SpillDir), it sorts what it
// holds, writes it to a spill file as one sorted run, frees it and goes on;
// at the end the rest becomes a last run and the runs are merged with
// SortPreservingMerge (an external merge sort).
type Sort struct {
	input Operator
	keys  []SortKey
	fetch int64
}

// NewSort returns a Sort of input by keys; fetch >= 0 keeps only the first
// fetch rows of each partition.
func NewSort(input Operator, keys []SortKey, fetch int64) *Sort {
	return &Sort{input: input, keys: keys, fetch: fetch}
}

// Keys are the sort keys.
func (s *Sort) Keys() []SortKey { return s.keys }

// Fetch is the top-K limit, or < 0 for none.
func (s *Sort) Fetch() int64 { return s.fetch }

// Schema implements Operator.
func (s *Sort) Schema() *arrow.Schema { return s.input.Schema() }

// Children implements Operator.
func (s *Sort) Children() []Operator { return []Operator{s.input} }

// OutputPartitioning implements Operator: each partition is sorted on its
// own, so its rows stay where they were.
func (s *Sort) OutputPartitioning() Partitioning { return s.input.OutputPartitioning() }

func (s *Sort) String() string {
	str := "Sort: " + sortKeysString(s.keys)
	if s.fetch >= 0 {
		str += fmt.Sprintf(" fetch=%d", s.fetch)
	}
	return str
}

// Execute implements Operator.
func (s *Sort) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	cmp, err := newRowComparator(s.keys)
	if err != nil {
		return nil, fmt.Errorf("sort: %w", err)
	}
	in, err := ExecuteOp(ctx, s.input, partition, tc)
	if err != nil {
		cmp.release()
		return nil, err
	}
	res := tc.NewReservation(ctx, fmt.Sprintf("Sort[%d]", partition))
	// A sort that may spill runs takes its fair share of the task's
	// limit (mempool.Reservation.SetSpillable).
	res.SetSpillable(tc.SpillDir != "" && s.fetch < 0)
	return &sortStream{
		op:  s,
		in:  in,
		tc:  tc,
		cmp: cmp,
		res: res,
	}, nil
}

type sortStream struct {
	op  *Sort
	in  Stream
	tc  *TaskContext
	cmp *rowComparator
	res *mempool.Reservation

	batches []arrow.RecordBatch // slot per input batch (nil: released)
	sorted  bool
	refs    []kernels.RowRef // sorted output rows not yet emitted
	closed  bool
	err     error // sticky: consuming the input failed

	// External sort: the sorted runs spilled so far, and the merge of
	// them that produces the output once the input is read.
	runs   []*spill.File
	merged Stream

	// batchRuns counts the runs of one batch written while refused
	// (addBatch).
	batchRuns int

	// top-K state
	heap     []kernels.RowRef
	counts   []int // heap entries per slot
	live     int   // slots with a batch
	retained int   // rows in live slots
}

func (s *sortStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, io.EOF
	}
	if s.err != nil {
		return nil, s.err
	}
	if !s.sorted {
		var err error
		if s.op.fetch >= 0 {
			err = s.consumeTopK(ctx)
		} else {
			err = s.consumeAll(ctx)
		}
		if err != nil {
			// The partial state cannot be resumed: fail every later call.
			s.err = err
			return nil, err
		}
		s.sorted = true
		// The input is exhausted: release it and its resources now.
		s.in.Close()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.merged != nil {
		return s.merged.Next(ctx)
	}
	if len(s.refs) == 0 {
		return nil, io.EOF
	}
	n := min(len(s.refs), max(s.tc.BatchSize, 1))
	out, err := kernels.InterleaveBatches(s.tc.Alloc, s.op.input.Schema(), s.batches, s.refs[:n])
	if err != nil {
		return nil, fmt.Errorf("sort: %w", err)
	}
	s.refs = s.refs[n:]
	return out, nil
}

// addBatch retains b in a new slot, reserving its memory, and returns the
// slot.
func (s *sortStream) addBatch(b arrow.RecordBatch) (int32, error) {
	keys, err := s.cmp.evalKeys(b, s.tc.Alloc)
	if err != nil {
		b.Release()
		return 0, fmt.Errorf("sort: %w", err)
	}
	size := kernels.BatchBytes(b) + 8*b.NumRows()
	err = s.res.Grow(size)
	if err != nil && s.op.fetch < 0 && s.live > 0 && canSpill(s.tc, err) {
		if err = s.spillRun(); err == nil {
			err = s.res.Grow(size)
		}
	}
	if err != nil && s.op.fetch < 0 && s.live == 0 && canSpill(s.tc, err) &&
		size <= s.tc.Memory.Limit() && s.batchRuns < SortBatchRuns {
		// Refused even the one batch, holding nothing (or nothing more
		// after spilling: the operators beside it in its task hold the
		// limit): the batch is in memory already, so it is sorted and
		// written as a run of its own, and the next batch asks again.
		// Not a batch larger than the whole limit, and not more than
		// SortBatchRuns times: the merge reads a batch of every run at
		// once.
		s.batchRuns++
		s.batches = append(s.batches, b)
		s.counts = append(s.counts, 0)
		s.cmp.addBatch(keys)
		s.live++
		s.retained += int(b.NumRows())
		return int32(len(s.batches) - 1), s.spillRun()
	}
	if err != nil {
		kernels.ReleaseAll(keys)
		b.Release()
		return 0, fmt.Errorf("sort: %w", err)
	}
	s.batches = append(s.batches, b)
	s.counts = append(s.counts, 0)
	s.cmp.addBatch(keys)
	s.live++
	s.retained += int(b.NumRows())
	return int32(len(s.batches) - 1), nil
}

// dropBatch releases slot i.
func (s *sortStream) dropBatch(i int32) {
	b := s.batches[i]
	s.res.Shrink(kernels.BatchBytes(b) + 8*b.NumRows())
	b.Release()
	s.batches[i] = nil
	s.cmp.dropBatch(int(i))
	s.live--
	s.retained -= int(b.NumRows())
}

func (s *sortStream) consumeAll(ctx context.Context) error {
	for {
		b, err := s.in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if _, err := s.addBatch(b); err != nil {
			return err
		}
	}
	// A sort that ends its input with its rows in memory holds them until
	// its output is read, and the operators above it (a window holding a
	// partition, say) may find no memory left. In a task that may spill,
	// when less of the task's limit is free than the sort holds, its rows
	// become a run read back from disk.
	if len(s.runs) == 0 && s.live > 0 && s.tc.SpillDir != "" {
		if limit := s.tc.Memory.Limit(); limit > 0 && limit-s.tc.Memory.Used() < s.res.Size() {
			if err := s.spillRun(); err != nil {
				return err
			}
		}
	}
	if len(s.runs) > 0 {
		// What is still in memory is the last run; the output is the
		// merge of the runs.
		if s.live > 0 {
			if err := s.spillRun(); err != nil {
				return err
			}
		}
		merge := NewSortPreservingMerge(&spillRuns{schema: s.op.input.Schema(), runs: s.runs}, s.op.keys, -1)
		m, err := merge.Execute(ctx, 0, s.tc)
		if err != nil {
			return fmt.Errorf("sort: %w", err)
		}
		s.merged = m
		return nil
	}
	s.sortRefs()
	return nil
}

// sortRefs sorts references to every row held in memory into s.refs.
func (s *sortStream) sortRefs() {
	total := 0
	for _, b := range s.batches {
		if b != nil {
			total += int(b.NumRows())
		}
	}
	s.refs = make([]kernels.RowRef, 0, total)
	for i, b := range s.batches {
		if b == nil {
			continue
		}
		for r := int32(0); r < int32(b.NumRows()); r++ {
			s.refs = append(s.refs, kernels.RowRef{Batch: int32(i), Row: r})
		}
	}
	sortRefsByPrefix(s.cmp, s.refs)
}

// spillRun sorts the rows held in memory, writes them to a new spill file
// as one sorted run and frees them.
func (s *sortStream) spillRun() error {
	s.sortRefs()
	run, err := spill.NewFile(s.tc.SpillDir, s.op.input.Schema(), s.tc.Alloc)
	if err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	s.runs = append(s.runs, run)
	step := max(s.tc.BatchSize, 1)
	for len(s.refs) > 0 {
		n := min(len(s.refs), step)
		out, err := kernels.InterleaveBatches(s.tc.Alloc, s.op.input.Schema(), s.batches, s.refs[:n])
		if err != nil {
			return fmt.Errorf("sort: %w", err)
		}
		err = run.Write(out)
		out.Release()
		if err != nil {
			return fmt.Errorf("sort: %w", err)
		}
		s.refs = s.refs[n:]
	}
	if err := run.Finish(); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	s.refs = nil
	for i, b := range s.batches {
		if b != nil {
			s.dropBatch(int32(i))
		}
	}
	s.batches, s.counts = s.batches[:0], s.counts[:0]
	s.cmp.reset()
	return nil
}

// SortBatchRuns is how many runs of a single batch a sort refused even
// that batch may write before the refusal fails the query: each is one
// more batch the final merge holds at once. Tests vary it.
var SortBatchRuns = 64

// topKCompactSlots is how many retained batches top-K tolerates before it
// copies the surviving rows into one batch: few rows of many batches would
// otherwise pin their memory. It compacts only when at least half the
// retained rows are dead, so a large K is not copied over and over.
const topKCompactSlots = 32

func (s *sortStream) consumeTopK(ctx context.Context) error {
	k := int(s.op.fetch)
	if k == 0 {
		return nil
	}
	for {
		b, err := s.in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		slot, err := s.addBatch(b)
		if err != nil {
			return err
		}
		n := int32(s.batches[slot].NumRows())
		for r := int32(0); r < n; r++ {
			ref := kernels.RowRef{Batch: slot, Row: r}
			if len(s.heap) < k {
				s.counts[slot]++
				s.heap = append(s.heap, ref)
				s.siftUp(len(s.heap) - 1)
				continue
			}
			if s.cmp.compare(ref, s.heap[0]) >= 0 {
				continue
			}
			// Count the newcomer before dropping the evicted row so the
			// current slot never reaches zero while in use.
			s.counts[slot]++
			old := s.heap[0].Batch
			s.heap[0] = ref
			s.siftDown(0)
			if s.counts[old]--; s.counts[old] == 0 {
				s.dropBatch(old)
			}
		}
		if s.counts[slot] == 0 {
			s.dropBatch(slot)
		}
		if s.live >= topKCompactSlots && s.retained >= 2*len(s.heap) {
			if err := s.compact(); err != nil {
				return err
			}
		}
	}
	s.refs = append(s.refs[:0], s.heap...)
	s.heap = nil
	sortRefsByPrefix(s.cmp, s.refs)
	return nil
}

// compact copies the heap's rows into one batch and drops the old slots.
// Heap order is kept, so the heap stays valid.
func (s *sortStream) compact() error {
	b, err := kernels.InterleaveBatches(s.tc.Alloc, s.op.input.Schema(), s.batches, s.heap)
	if err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	for i, old := range s.batches {
		if old != nil {
			s.dropBatch(int32(i))
		}
	}
	s.batches = s.batches[:0]
	s.counts = s.counts[:0]
	s.cmp.reset()
	slot, err := s.addBatch(b)
	if err != nil {
		return err
	}
	for i := range s.heap {
		s.heap[i] = kernels.RowRef{Batch: slot, Row: int32(i)}
	}
	s.counts[slot] = len(s.heap)
	return nil
}

// The heap is a max-heap: its root is the worst row kept so far.
func (s *sortStream) less(i, j int) bool { return s.cmp.compare(s.heap[i], s.heap[j]) > 0 }

func (s *sortStream) siftUp(i int)   { heapUp(s.heap, i, s.less) }
func (s *sortStream) siftDown(i int) { heapDown(s.heap, i, s.less) }

func (s *sortStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.in.Close()
	if s.merged != nil {
		s.merged.Close()
	}
	for _, r := range s.runs {
		r.Close()
	}
	s.runs = nil
	for i, b := range s.batches {
		if b != nil {
			s.dropBatch(int32(i))
		}
	}
	s.batches = nil
	s.refs, s.heap = nil, nil
	s.cmp.release()
	s.res.SetSpillable(false)
	s.res.Free()
}
