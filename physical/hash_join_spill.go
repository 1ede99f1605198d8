package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/physical/spill"
)

// A hash join whose build side the memory pool refuses, in a task that may
// spill, becomes a grace hash join: the build rows read so far and the
// rest are split by key hash into joinSpillBuckets files, then the probe
// side is split the same way, and each bucket is joined alone, building a
// table from its build rows and probing it with its probe rows. A row's
// matches all share its key, so they are in its bucket: every join type,
// unmatched rows included, gives the same rows as one table would, with a
// sixteenth of the memory.
//
// A bucket still too big for memory is split again the same way, by other
// bits of its keys' hash (spill.Bucket), up to maxSplitLevel times; past
// that its rows share nearly all of their hash, so they are one key with
// more rows than memory holds, and the join fails with the memory error.
//
// A collect-left join's build side is shared by the task's partitions: it
// spills once, to bucket files every partition reads, and each partition
// splits its own probe rows. A NOT IN (null-aware anti) join spills too:
// one NULL build key anywhere means no row is output, which the split
// notes; otherwise probe rows with a NULL key are dropped as they are
// split, and in each bucket the NOT IN of its own build keys is the
// answer (a bucket without build rows outputs all of its probe rows,
// which is right, as their keys are in no other bucket).

// joinSpillBuckets is how many files a spilling join splits each side into.
const joinSpillBuckets = 16

// joinSpilledBuild is a build side split into bucket files, finished and
// ready to read (by several partitions at once for a collect-left join).
type joinSpilledBuild struct {
	files []*spill.File
	// hasNullKey reports whether some build row has a NULL key.
	hasNullKey bool
}

func (b *joinSpilledBuild) close() {
	for _, f := range b.files {
		f.Close()
	}
}

// spillingJoinStream runs a hash join in a task that may spill: in memory,
// or bucket by bucket once its build side spilled, each bucket joined by a
// spillingJoinStream one split level down.
type spillingJoinStream struct {
	h     *HashJoin
	tc    *TaskContext
	owner string
	level int    // how many splits made this stream's inputs
	probe Stream // the probe rows, until split or handed on
	// getBuild returns the build side: a table in memory, or one whose
	// spilled field holds its rows in bucket files.
	getBuild func(ctx context.Context) (*joinBuildTable, error)
	// release gives the build side back (once, on Close); ownsBuild
	// reports whether the stream may close its bucket files as it goes.
	release   func()
	ownsBuild bool

	started bool
	table   *joinBuildTable
	cur     Stream        // the in-memory join, or the current bucket's
	probes  []*spill.File // per bucket: the probe rows
	bucket  int
	closed  bool
}

// newSpillingJoin returns the stream of a join whose build side it reads
// from partitions of build and owns.
func (h *HashJoin) newSpillingJoin(ctx context.Context, tc *TaskContext, probe Stream, build Operator, partitions []int, owner string, level int) *spillingJoinStream {
	s := &spillingJoinStream{h: h, tc: tc, owner: owner, level: level, probe: probe, ownsBuild: true}
	// The reservation is made, and counted among those that spill, when
	// the stream is: the task's partitions are all opened before any is
	// read, so each build side takes its share from the start.
	res := newJoinBuildReservation(ctx, tc, owner, level)
	s.getBuild = func(ctx context.Context) (*joinBuildTable, error) {
		return readJoinBuild(ctx, build, partitions, h.leftKeys, tc, res, level)
	}
	s.release = func() {
		if s.table != nil {
			s.table.release()
		} else {
			res.SetSpillable(false)
			res.Free()
		}
	}
	return s
}

// newJoinBuildReservation is the reservation of a build side; while it
// may spill, it takes its fair share of the task's limit
// (mempool.Reservation.SetSpillable).
func newJoinBuildReservation(ctx context.Context, tc *TaskContext, owner string, level int) *mempool.Reservation {
	res := tc.NewReservation(ctx, owner)
	res.SetSpillable(tc.SpillDir != "" && level < maxSplitLevel)
	return res
}

// Next implements Stream.
func (s *spillingJoinStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, errors.New("join: stream closed")
	}
	if !s.started {
		s.started = true
		if err := RunSafe(func() error { return s.start(ctx) }); err != nil {
			return nil, err
		}
	}
	for {
		if s.cur == nil {
			return nil, io.EOF
		}
		b, err := s.cur.Next(ctx)
		if err != io.EOF || s.table.spilled == nil {
			return b, err
		}
		s.cur.Close()
		s.cur = nil
		s.closeBucket()
		s.bucket++
		if err := s.openBucket(ctx); err != nil {
			return nil, err
		}
	}
}

// start gets the build side; when it spilled, it splits the probe rows
// into their buckets and opens the first.
func (s *spillingJoinStream) start(ctx context.Context) error {
	t, err := s.getBuild(ctx)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	s.table = t
	if t.spilled == nil {
		probe := s.probe
		s.probe = nil
		s.cur = s.h.probeStream(s.tc, probe, func(context.Context) (*joinBuildTable, error) { return t, nil }, func() {})
		return nil
	}
	if s.h.nullAware && t.spilled.hasNullKey {
		// x NOT IN (..., NULL, ...) is never true: no row, no bucket.
		s.bucket = len(t.spilled.files)
		return nil
	}
	s.probes = make([]*spill.File, len(t.spilled.files))
	for i := range s.probes {
		if s.probes[i], err = spill.NewFile(s.tc.SpillDir, s.h.right.Schema(), s.tc.Alloc); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	for {
		b, err := s.probe.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		_, err = splitByKey(s.tc, b, s.h.rightKeys, s.probes, s.level, s.h.nullAware)
		b.Release()
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	s.probe.Close()
	s.probe = nil
	return s.openBucket(ctx)
}

// openBucket starts joining the rows of bucket s.bucket, or of the next
// one that has any (none left: s.cur stays nil).
func (s *spillingJoinStream) openBucket(ctx context.Context) error {
	builds := s.table.spilled.files
	for s.bucket < len(builds) && builds[s.bucket].Rows() == 0 && s.probes[s.bucket].Rows() == 0 {
		s.closeBucket()
		s.bucket++
	}
	if s.bucket >= len(builds) {
		return nil
	}
	probe := s.probes[s.bucket]
	if err := probe.Finish(); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	in, err := (&spillRuns{schema: s.h.right.Schema(), runs: []*spill.File{probe}}).Execute(ctx, 0, s.tc)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	build := &spillRuns{schema: s.h.left.Schema(), runs: []*spill.File{builds[s.bucket]}}
	s.cur = s.h.newSpillingJoin(ctx, s.tc, in, build, []int{0}, s.owner, s.level+1)
	return nil
}

// closeBucket frees the disk space of the current bucket's files.
func (s *spillingJoinStream) closeBucket() {
	if s.bucket < len(s.probes) {
		s.probes[s.bucket].Close()
	}
	if s.ownsBuild && s.bucket < len(s.table.spilled.files) {
		s.table.spilled.files[s.bucket].Close()
	}
}

// Close implements Stream.
func (s *spillingJoinStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.cur != nil {
		s.cur.Close()
	}
	if s.probe != nil {
		s.probe.Close()
	}
	for _, f := range s.probes {
		f.Close()
	}
	s.release()
}

// readJoinBuild reads the given partitions of op concurrently into a
// join's build side, reserving its memory in res: a table in memory, or, when the pool refuses it and
// the task may spill, a table whose spilled field holds the rows split by
// key hash (at split level level) into bucket files.
func readJoinBuild(ctx context.Context, op Operator, partitions []int, keys []expr.Expr, tc *TaskContext, res *mempool.Reservation, level int) (*joinBuildTable, error) {
	sink := &joinBuildSink{tc: tc, schema: op.Schema(), keys: keys, level: level, res: res}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	// Open every partition before reading any (see buildJoinTable).
	streams := make([]Stream, 0, len(partitions))
	for _, p := range partitions {
		s, err := ExecuteOp(gctx, op, p, tc)
		if err != nil {
			for _, s := range streams {
				s.Close()
			}
			sink.abort()
			return nil, fmt.Errorf("reading build side: %w", err)
		}
		streams = append(streams, s)
	}
	for _, s := range streams {
		g.Go(Safe(func() error {
			defer s.Close()
			checkFailpoint(FailpointHashJoinBuild)
			for {
				b, err := s.Next(gctx)
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				mu.Lock()
				err = sink.add(b)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
		}))
	}
	if err := g.Wait(); err != nil {
		sink.abort()
		return nil, fmt.Errorf("reading build side: %w", err)
	}
	return sink.table()
}

// joinBuildSink collects a join's build rows: in memory while the pool
// allows, then split into bucket files.
type joinBuildSink struct {
	tc      *TaskContext
	schema  *arrow.Schema
	keys    []expr.Expr
	level   int
	res     *mempool.Reservation
	batches []arrow.RecordBatch
	spilled *joinSpilledBuild
}

// add takes b.
func (k *joinBuildSink) add(b arrow.RecordBatch) error {
	if k.spilled != nil {
		defer b.Release()
		return k.split(b)
	}
	err := k.res.Grow(kernels.BatchBytes(b))
	if err == nil {
		k.batches = append(k.batches, b)
		return nil
	}
	defer b.Release()
	if !k.maySpill(err) {
		return k.refused(err)
	}
	// Split what is held, and everything after it.
	if err := k.spillHeld(); err != nil {
		return err
	}
	return k.split(b)
}

// maySpill reports whether refusal err may be answered by splitting.
func (k *joinBuildSink) maySpill(err error) bool {
	return canSpill(k.tc, err) && k.level < maxSplitLevel
}

// refused is the error of a build side the pool refused.
func (k *joinBuildSink) refused(err error) error {
	if canSpill(k.tc, err) {
		return fmt.Errorf("hash join: the build rows of one key hash need more memory than the limit allows after %d splits into buckets (one join key with that many rows): %w", maxSplitLevel, err)
	}
	return fmt.Errorf("hash join build: %w", err)
}

// spillHeld creates the bucket files and moves the rows held into them.
func (k *joinBuildSink) spillHeld() error {
	k.spilled = &joinSpilledBuild{files: make([]*spill.File, joinSpillBuckets)}
	for i := range k.spilled.files {
		var err error
		if k.spilled.files[i], err = spill.NewFile(k.tc.SpillDir, k.schema, k.tc.Alloc); err != nil {
			return err
		}
	}
	held := k.batches
	k.batches = nil
	defer kernels.ReleaseAll(held)
	// The reservation stays among those that spill, holding nothing,
	// until the join ends: its buckets will need their share.
	k.res.Free()
	for _, b := range held {
		if err := k.split(b); err != nil {
			return err
		}
	}
	return nil
}

func (k *joinBuildSink) split(b arrow.RecordBatch) error {
	nulls, err := splitByKey(k.tc, b, k.keys, k.spilled.files, k.level, false)
	k.spilled.hasNullKey = k.spilled.hasNullKey || nulls
	return err
}

// table returns the build side once every row is added.
func (k *joinBuildSink) table() (*joinBuildTable, error) {
	if k.spilled == nil {
		t := &joinBuildTable{res: k.res}
		err := t.finish(k.schema, k.batches, k.keys, k.tc) // releases t on error
		if err == nil {
			kernels.ReleaseAll(k.batches)
			k.batches = nil
			k.res.SetSpillable(false) // done growing
			return t, nil
		}
		if !k.maySpill(err) {
			k.abort()
			return nil, k.refused(err)
		}
		// The rows fit, their index does not.
		if err := k.spillHeld(); err != nil {
			k.abort()
			return nil, err
		}
	}
	for _, f := range k.spilled.files {
		if err := f.Finish(); err != nil {
			k.abort()
			return nil, err
		}
	}
	return &joinBuildTable{res: k.res, spilled: k.spilled}, nil
}

// abort frees whatever the sink holds.
func (k *joinBuildSink) abort() {
	k.res.SetSpillable(false)
	kernels.ReleaseAll(k.batches)
	k.batches = nil
	if k.spilled != nil {
		k.spilled.close()
	}
	k.res.Free()
}

// splitByKey writes each row of b to the file of its key's hash bucket at
// split level level, and reports whether a row had a NULL key; with
// dropNulls, such rows are left out.
func splitByKey(tc *TaskContext, b arrow.RecordBatch, keys []expr.Expr, files []*spill.File, level int, dropNulls bool) (bool, error) {
	n := int(b.NumRows())
	if n == 0 {
		return false, nil
	}
	cols, err := kernels.EvalAll(keys, b, tc.Alloc)
	if err != nil {
		return false, fmt.Errorf("hash join key: %w", err)
	}
	nulls := false
	for _, c := range cols {
		nulls = nulls || c.NullN() > 0
	}
	if nulls && dropNulls {
		var keep []int32
		for r := range n {
			if !joinRowHasNull(cols, r) {
				keep = append(keep, int32(r))
			}
		}
		kernels.ReleaseAll(cols)
		if len(keep) == 0 {
			return true, nil
		}
		kept, err := kernels.SelectRows(tc.Alloc, b, keep)
		if err != nil {
			return true, err
		}
		defer kept.Release()
		_, err = splitByKey(tc, kept, keys, files, level, false)
		return true, err
	}
	defer kernels.ReleaseAll(cols)
	return nulls, splitRows(tc, b, cols, files, level, true)
}
