package physical

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// Limit skips the first offset rows of each partition and then passes at
// most count rows (count < 0: all). The planner applies it to a
// single-partition input for a global LIMIT. Once satisfied it stops pulling
// and closes its child, so upstream work ends early.
type Limit struct {
	input  Operator
	offset int64
	count  int64
}

// NewLimit returns a Limit of input.
func NewLimit(input Operator, offset, count int64) *Limit {
	return &Limit{input: input, offset: max(offset, 0), count: count}
}

// Schema implements Operator.
func (l *Limit) Schema() *arrow.Schema { return l.input.Schema() }

// Children implements Operator.
func (l *Limit) Children() []Operator { return []Operator{l.input} }

// OutputPartitioning implements Operator.
func (l *Limit) OutputPartitioning() Partitioning { return l.input.OutputPartitioning() }

func (l *Limit) String() string {
	if l.count < 0 {
		return fmt.Sprintf("Limit: skip=%d", l.offset)
	}
	return fmt.Sprintf("Limit: skip=%d fetch=%d", l.offset, l.count)
}

// Execute implements Operator.
func (l *Limit) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if l.count == 0 {
		// Nothing will be read: do not even start the child.
		return &limitStream{}, nil
	}
	in, err := ExecuteOp(ctx, l.input, partition, tc)
	if err != nil {
		return nil, err
	}
	return &limitStream{in: in, skip: l.offset, left: l.count}, nil
}

type limitStream struct {
	in   Stream // nil once satisfied or closed
	skip int64
	left int64 // < 0: unlimited
}

func (s *limitStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for s.in != nil {
		b, err := s.in.Next(ctx)
		if err != nil {
			if err == io.EOF {
				s.Close()
			}
			return nil, err
		}
		n := b.NumRows()
		if s.skip >= n {
			s.skip -= n
			b.Release()
			continue
		}
		start := s.skip
		s.skip = 0
		end := n
		if s.left >= 0 && end-start > s.left {
			end = start + s.left
		}
		if s.left >= 0 {
			s.left -= end - start
			if s.left == 0 {
				// Satisfied: release the child now rather than on the next
				// call, so upstream goroutines and memory go away early.
				s.Close()
			}
		}
		if start == 0 && end == n {
			return b, nil
		}
		out := b.NewSlice(start, end)
		b.Release()
		return out, nil
	}
	return nil, io.EOF
}

func (s *limitStream) Close() {
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
}
