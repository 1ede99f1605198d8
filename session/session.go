// Package session is the client side of a sluice connection: it holds the
// session's settings, runs statements and hands results to the renderer as a
// stream of record batches.
//
// Today statements run on an in-process engine: the engine prepares each
// statement and the session pulls the physical plan's partitions.
package session

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/engine"
	"sluice/physical"
)

// Session runs statements with its own settings. A Session is used by one
// goroutine at a time.
type Session struct {
	Catalog  *catalog.Catalog
	Settings *engine.Settings
	// Alloc allocates query memory; memory.DefaultAllocator when nil.
	Alloc  memory.Allocator
	engine *engine.Engine
}

// New returns a session over cat with default settings.
func New(cat *catalog.Catalog) *Session {
	return &Session{Catalog: cat, Settings: engine.NewSettings(), engine: engine.New(cat)}
}

// Execute runs one statement (text may hold exactly one). The caller must
// Close the result.
func (s *Session) Execute(ctx context.Context, text string) (*Result, error) {
	out, err := s.engine.Prepare(text, s.Settings)
	if err != nil {
		return nil, err
	}
	switch {
	case out.Rows != nil:
		return &Result{Schema: out.Rows.Schema(), stream: &batchStream{batches: []arrow.RecordBatch{out.Rows}}}, nil
	case out.Query != nil:
		return s.runQuery(ctx, out.Query)
	}
	return messageResult(out.Message), nil
}

func (s *Session) runQuery(ctx context.Context, q *engine.Query) (*Result, error) {
	op := q.Physical
	if op.OutputPartitioning().Count > 1 {
		op = physical.NewCoalescePartitions(op)
	}
	alloc := s.Alloc
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	tc := &physical.TaskContext{
		Alloc:     alloc,
		Memory:    physical.NewMemoryPool("query", s.Settings.Int("execution.memory_limit"), nil),
		BatchSize: int(s.Settings.Int("execution.batch_size")),
	}
	stream, err := op.Execute(ctx, 0, tc)
	if err != nil {
		return nil, err
	}
	return &Result{Schema: q.Schema, stream: &renamed{Stream: stream, schema: q.Schema}}, nil
}
