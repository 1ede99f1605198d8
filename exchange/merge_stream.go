package exchange

import (
	"context"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical"
)

// mergeStream is the physical.Stream both readers return: fetch goroutines
// started by run send batches to one channel, and Next hands them out in
// arrival order. The stream owns the goroutines: Close cancels them and
// waits for run to return. The first error of run is the stream's error.
type mergeStream struct {
	schema *arrow.Schema
	ch     chan arrow.RecordBatch
	done   chan struct{} // closed when run has returned; err is set before
	err    error
	cancel context.CancelFunc
	once   sync.Once
}

// startMerge starts run under a context derived from ctx, which Close
// cancels. run must return only once every goroutine it started has.
func startMerge(ctx context.Context, schema *arrow.Schema, buffer int, run func(ctx context.Context, m *mergeStream) error) *mergeStream {
	ctx, cancel := context.WithCancel(ctx)
	m := &mergeStream{schema: schema, ch: make(chan arrow.RecordBatch, buffer), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(m.done)
		err := physical.RunSafe(func() error { return run(ctx, m) })
		if err == nil {
			err = ctx.Err()
		}
		m.err = err
	}()
	return m
}

// send relabels b with the stream's schema and queues it, taking ownership.
func (m *mergeStream) send(ctx context.Context, b arrow.RecordBatch) error {
	b, err := withSchema(m.schema, b)
	if err != nil {
		return err
	}
	if b.NumRows() == 0 {
		b.Release()
		return nil
	}
	select {
	case m.ch <- b:
		return nil
	case <-ctx.Done():
		b.Release()
		return ctx.Err()
	}
}

// Next implements physical.Stream.
func (m *mergeStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case b := <-m.ch:
		return b, nil
	case <-m.done:
		if m.err != nil {
			return nil, m.err
		}
		select {
		case b := <-m.ch:
			return b, nil
		default:
			return nil, io.EOF
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements physical.Stream.
func (m *mergeStream) Close() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
		for {
			select {
			case b := <-m.ch:
				b.Release()
			default:
				return
			}
		}
	})
}
