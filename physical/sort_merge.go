package physical

import (
	"context"
	"fmt"
	"io"

	"sluice/physical/kernels"

	"github.com/apache/arrow-go/v18/arrow"
)

// SortPreservingMerge merges its input's partitions, each already sorted by
// keys, into one sorted partition with a k-way heap merge. Every input
// partition is pulled by its own goroutine into a small channel, so the
// sorts below run in parallel. fetch >= 0 stops after that many rows.
type SortPreservingMerge struct {
	input Operator
	keys  []SortKey
	fetch int64
}

// NewSortPreservingMerge returns a merge of input's sorted partitions.
func NewSortPreservingMerge(input Operator, keys []SortKey, fetch int64) *SortPreservingMerge {
	return &SortPreservingMerge{input: input, keys: keys, fetch: fetch}
}

// Keys are the sort keys.
func (m *SortPreservingMerge) Keys() []SortKey { return m.keys }

// Schema implements Operator.
func (m *SortPreservingMerge) Schema() *arrow.Schema { return m.input.Schema() }

// Children implements Operator.
func (m *SortPreservingMerge) Children() []Operator { return []Operator{m.input} }

// OutputPartitioning implements Operator.
func (m *SortPreservingMerge) OutputPartitioning() Partitioning { return SinglePartition }

func (m *SortPreservingMerge) String() string {
	s := "SortPreservingMerge: " + sortKeysString(m.keys)
	if m.fetch >= 0 {
		s += fmt.Sprintf(" fetch=%d", m.fetch)
	}
	return s
}

// Execute implements Operator.
func (m *SortPreservingMerge) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition != 0 {
		return nil, fmt.Errorf("sort preserving merge: partition %d out of range", partition)
	}
	n := m.input.OutputPartitioning().Count
	if m.fetch == 0 {
		return &limitStream{}, nil
	}
	if n == 1 {
		// One sorted partition is already the answer.
		in, err := ExecuteOp(ctx, m.input, 0, tc)
		if err != nil {
			return nil, err
		}
		return &limitStream{in: in, left: m.fetch}, nil
	}
	cmp, err := newRowComparator(m.keys)
	if err != nil {
		return nil, fmt.Errorf("sort preserving merge: %w", err)
	}
	s := &mergeStream{
		op:   m,
		tc:   tc,
		cmp:  cmp,
		g:    startGroup(ctx),
		chs:  make([]chan arrow.RecordBatch, n),
		errs: make([]error, n),
		cur:  make([]int32, n),
		pos:  make([]int32, n),
		left: m.fetch,
	}
	for i := 0; i < n; i++ {
		ch := make(chan arrow.RecordBatch, 2)
		s.chs[i] = ch
		s.g.goStream(m.input, i, tc, func(gctx context.Context, b arrow.RecordBatch) error {
			select {
			case ch <- b:
				return nil
			case <-gctx.Done():
				b.Release()
				return gctx.Err()
			}
		}, func(err error) {
			s.errs[i] = err // read only after ch is closed
			close(ch)
		})
	}
	s.g.finish()
	return s, nil
}

type mergeStream struct {
	op  *SortPreservingMerge
	tc  *TaskContext
	cmp *rowComparator
	g   *taskGroup
	chs []chan arrow.RecordBatch

	errs    []error
	batches []arrow.RecordBatch // slots; an input's current batch is cur[i]
	retired []int32             // slots to release after the next output
	cur     []int32             // slot of each input's current batch
	pos     []int32             // next row of each input's current batch
	heap    []int               // inputs with rows, min-heap by current row
	started bool
	left    int64 // rows still to emit; < 0: unlimited
	closed  bool
	err     error // sticky
}

func (s *mergeStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed || s.left == 0 {
		return nil, io.EOF
	}
	if s.err != nil {
		return nil, s.err
	}
	b, err := s.next(ctx)
	if err != nil && err != io.EOF {
		// The merge state is mid-update: fail every later call.
		s.err = err
	}
	return b, err
}

func (s *mergeStream) next(ctx context.Context) (arrow.RecordBatch, error) {
	if !s.started {
		for i := range s.chs {
			ok, err := s.advance(ctx, i)
			if err != nil {
				return nil, err
			}
			if ok {
				s.heap = append(s.heap, i)
				s.siftUp(len(s.heap) - 1)
			}
		}
		s.started = true
	}
	limit := max(s.tc.BatchSize, 1)
	if s.left >= 0 {
		limit = int(min(int64(limit), s.left))
	}
	refs := make([]kernels.RowRef, 0, limit)
	for len(refs) < limit && len(s.heap) > 0 {
		i := s.heap[0]
		refs = append(refs, kernels.RowRef{Batch: s.cur[i], Row: s.pos[i]})
		s.pos[i]++
		if int64(s.pos[i]) < s.batches[s.cur[i]].NumRows() {
			s.siftDown(0)
			continue
		}
		// Input i's batch is used up; keep it until this output is built.
		s.retired = append(s.retired, s.cur[i])
		ok, err := s.advance(ctx, i)
		if err != nil {
			return nil, err
		}
		if ok {
			s.siftDown(0)
		} else {
			last := len(s.heap) - 1
			s.heap[0] = s.heap[last]
			s.heap = s.heap[:last]
			if last > 0 {
				s.siftDown(0)
			}
		}
	}
	if len(refs) == 0 {
		return nil, io.EOF
	}
	out, err := kernels.InterleaveBatches(s.tc.Alloc, s.op.input.Schema(), s.batches, refs)
	if err != nil {
		return nil, fmt.Errorf("sort preserving merge: %w", err)
	}
	for _, slot := range s.retired {
		s.dropSlot(slot)
	}
	s.retired = s.retired[:0]
	if s.left >= 0 {
		s.left -= int64(len(refs))
		if s.left == 0 {
			// Satisfied: stop the inputs now.
			s.Close()
		}
	}
	return out, nil
}

// advance receives input i's next batch into a new slot; false means the
// input is exhausted.
func (s *mergeStream) advance(ctx context.Context, i int) (bool, error) {
	var b arrow.RecordBatch
	var ok bool
	select {
	case b, ok = <-s.chs[i]:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	if !ok {
		if s.errs[i] == nil {
			return false, nil
		}
		// Report the group's first error, not a cancellation it caused.
		select {
		case <-s.g.done:
			return false, s.g.err
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	keys, err := s.cmp.evalKeys(b, s.tc.Alloc)
	if err != nil {
		b.Release()
		return false, fmt.Errorf("sort preserving merge: %w", err)
	}
	s.batches = append(s.batches, b)
	s.cmp.addBatch(keys)
	s.cur[i] = int32(len(s.batches) - 1)
	s.pos[i] = 0
	return true, nil
}

func (s *mergeStream) dropSlot(slot int32) {
	if b := s.batches[slot]; b != nil {
		b.Release()
		s.batches[slot] = nil
		s.cmp.dropBatch(int(slot))
	}
}

func (s *mergeStream) less(a, b int) bool {
	x, y := s.heap[a], s.heap[b]
	c := s.cmp.compare(kernels.RowRef{Batch: s.cur[x], Row: s.pos[x]}, kernels.RowRef{Batch: s.cur[y], Row: s.pos[y]})
	// Ties go to the lower input so equal rows keep partition order.
	return c < 0 || (c == 0 && x < y)
}

func (s *mergeStream) siftUp(i int)   { heapUp(s.heap, i, s.less) }
func (s *mergeStream) siftDown(i int) { heapDown(s.heap, i, s.less) }

func (s *mergeStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.g.stop()
	for _, ch := range s.chs {
		drain(ch)
	}
	for i := range s.batches {
		s.dropSlot(int32(i))
	}
	s.batches, s.heap, s.retired = nil, nil, nil
	s.cmp.release()
}
