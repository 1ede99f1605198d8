package physical

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/expr"
)

// Sharing a scan's batches between the partitions of one task.
//
// A Parquet scan deals whole row groups to its partitions, so a table of
// fewer row groups than partitions (every table DuckDB writes under
// 122,880 rows is one row group) leaves partitions without rows, and
// whatever the task stacks on the scan in those partitions idles: TPC-DS
// q11 probed a join with the customer table and grouped the result by
// eight strings on one core while the other waited. Partitions that do
// get row groups rarely get equal work (row groups differ in size and in
// how many rows the filters keep), and in a stage of a blocking job the
// partition that finishes first leaves its core idle until the last one
// ends (TPC-DS q67's first stage, a scan of store_sales, did at every
// run). A scan cannot move work between its partitions by itself:
// it does not know whether they run in one task (on one executor, at the
// same time) or in several. The task runner knows, and says so with
// ShareScans before it executes anything; in those scans, when the
// partitions the task runs hold rows enough, their readers feed one
// channel and every partition of the task takes its batches from it as
// it is free, so the operators above run on all of them and end
// together. Row order within a partition was never promised.

// ShareMinRows is the fewest rows the row groups of a task's partitions
// must hold for their scan to share them between the partitions: below
// it, a partition's share would be a batch or two, not worth the
// hand-over. Tests randomize it.
var ShareMinRows int64 = 2 * DefaultBatchSize

// ShareScans records in tc which Parquet scans of root's plan run
// partitions that are each executed exactly once, all at the same time,
// in the task tc belongs to: those reached from root, whose partitions
// parts the task runs concurrently (a stage writer's RunTask, or a
// single-partition root), through operators whose partition p executes
// their input's partition p once (Filter, Projection, HashAggregate, a
// join's probe side), and those below a CoalescePartitions or a
// Repartition, which execute all their input's partitions at once. A scan
// reached by more than one path, or through any other operator, is left
// as it is. Call it before executing root in tc.
func (tc *TaskContext) ShareScans(root Operator, parts []int) {
	found := map[*ParquetScan][]int{}
	mixed := map[*ParquetScan]bool{}
	var visit func(op Operator, parts []int)
	visit = func(op Operator, parts []int) {
		switch x := op.(type) {
		case *ParquetScan:
			if _, seen := found[x]; seen || parts == nil {
				mixed[x] = true
			}
			found[x] = parts
			return
		case *Filter:
			visit(x.input, parts)
			return
		case *Projection:
			visit(x.input, parts)
			return
		case *HashAggregate:
			if _, cascade := x.groupingSetsCascadePlan(); !cascade {
				visit(x.input, parts)
				return
			}
		case *HashJoin:
			// The build side may read its input's partitions in any
			// order, one at a time.
			visit(x.left, nil)
			visit(x.right, parts)
			return
		case *CoalescePartitions:
			visit(x.input, allPartitions(x.input))
			return
		case *Repartition:
			visit(x.input, allPartitions(x.input))
			return
		}
		for _, c := range op.Children() {
			visit(c, nil)
		}
	}
	visit(root, parts)
	for s := range mixed {
		delete(found, s)
	}
	tc.sharedScans = found
}

// scanShare is the channel the readers of one task's partitions of a
// scan feed and all of them take batches from.
type scanShare struct {
	ch     chan prefetched
	cancel context.CancelFunc
	done   chan struct{} // closed when every reader has returned
	err    error         // the first reader's error; read only after ch is closed
	open   int           // the partitions' streams not yet closed
}

// sharedStream executes partition of the scan from the task's share of it,
// starting the share on the task's first partition; nil when the scan is
// not shared in tc, or not worth it: the task runs only one of the scan's
// partitions, or their rows are fewer than ShareMinRows.
func (s *ParquetScan) sharedStream(ctx context.Context, partition int, tc *TaskContext, filters []expr.Expr) *sharedScanStream {
	parts, ok := tc.sharedScans[s]
	if !ok || len(s.projection) == 0 || !s.worthSharing(parts) || !slices.Contains(parts, partition) {
		return nil
	}
	s.shareMu.Lock()
	defer s.shareMu.Unlock()
	sh := s.shares[tc]
	if sh == nil {
		if s.shares == nil {
			s.shares = map[*TaskContext]*scanShare{}
		}
		sh = s.startShare(ctx, tc, filters, parts)
		s.shares[tc] = sh
	}
	return &sharedScanStream{scan: s, tc: tc, share: sh}
}

// worthSharing reports whether the task's partitions parts (two or more)
// hold at least ShareMinRows rows in their row groups.
func (s *ParquetScan) worthSharing(parts []int) bool {
	if len(parts) < 2 {
		return false
	}
	var rows int64
	for _, p := range parts {
		if p < 0 || p >= len(s.parts) {
			return false
		}
		for _, u := range s.parts[p] {
			rows += u.rows
		}
	}
	return rows >= ShareMinRows
}

// startShare starts a reader for each of parts that has row groups, all
// feeding one channel, under ctx (the first partition's: cancelling it
// stops them all, as for a Repartition's exchange).
func (s *ParquetScan) startShare(ctx context.Context, tc *TaskContext, filters []expr.Expr, parts []int) *scanShare {
	pctx, cancel := context.WithCancel(ctx)
	sh := &scanShare{ch: make(chan prefetched, prefetchDepth*len(parts)), cancel: cancel, done: make(chan struct{}), open: len(parts)}
	emit := func(b arrow.RecordBatch, filtered bool) error {
		select {
		case sh.ch <- prefetched{b, filtered}:
			return nil
		case <-pctx.Done():
			b.Release()
			return pctx.Err()
		}
	}
	var wg sync.WaitGroup
	var once sync.Once
	for _, p := range parts {
		if len(s.parts[p]) == 0 {
			continue
		}
		produce := s.producer(p, tc, filters)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := RunSafe(func() error {
				checkFailpoint(FailpointScan)
				return produce(pctx, emit)
			})
			if err == nil && pctx.Err() != nil {
				err = pctx.Err() // never let a cancelled reader look finished
			}
			if err != nil {
				once.Do(func() {
					sh.err = err
					cancel() // the other readers' rows would be a short result
				})
			}
		}()
	}
	go func() {
		wg.Wait()
		close(sh.ch)
		close(sh.done)
	}()
	return sh
}

// sharedScanStream is one partition's stream of a shared scan.
type sharedScanStream struct {
	scan   *ParquetScan
	tc     *TaskContext
	share  *scanShare
	ended  bool
	closed bool
	// filtered: the batch Next returned last was marked filtered.
	filtered bool
}

// Next implements Stream.
func (s *sharedScanStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.ended {
		return nil, s.endErr()
	}
	select {
	case p, ok := <-s.share.ch:
		if ok {
			s.filtered = p.filtered
			return p.b, nil
		}
		s.ended = true
		return nil, s.endErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *sharedScanStream) endErr() error {
	if s.share.err != nil {
		return s.share.err
	}
	if s.closed {
		return fmt.Errorf("stream closed")
	}
	return io.EOF
}

// lastFiltered reports whether the batch Next returned last was marked
// filtered by its reader.
func (s *sharedScanStream) lastFiltered() bool { return s.filtered }

// Close implements Stream. The last of the task's partitions to close
// stops the readers, releases what they had queued and waits for them.
func (s *sharedScanStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.ended = true
	sc := s.scan
	sc.shareMu.Lock()
	s.share.open--
	last := s.share.open == 0
	if last {
		delete(sc.shares, s.tc)
	}
	sc.shareMu.Unlock()
	if !last {
		return
	}
	s.share.cancel()
	for p := range s.share.ch {
		p.b.Release()
	}
	<-s.share.done
}
