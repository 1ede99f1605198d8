package physical

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// A partitioned hash join whose build side the memory pool refuses, in a
// task that may spill, becomes a grace hash join: the build rows read so
// far and the rest are split by key hash into joinSpillBuckets files, then
// the probe side is split the same way, and each bucket is joined alone,
// building a table from its build rows and probing it with its probe rows.
// A row's matches all share its key, so they are in its bucket: every join
// type, unmatched rows included, gives the same rows as one table would,
// with a sixteenth of the memory. A NOT IN (null-aware anti) join does not
// spill, since one NULL build key anywhere decides every probe row; it is a
// collect-left join anyway, and those do not spill: their build side is
// one the planner judged small enough to copy to every task.

// joinSpillBuckets is how many files a spilling join splits each side into.
const joinSpillBuckets = 16

// spillingJoinStream runs a partitioned join: in memory, or bucket by
// bucket once its build side spilled.
type spillingJoinStream struct {
	h         *HashJoin
	tc        *TaskContext
	partition int
	probe     Stream // the probe partition, until split or handed on

	started bool
	cur     *joinProbeStream // the in-memory join, or the current bucket's
	build   []*spillFile     // per bucket: build rows, then probe rows
	probes  []*spillFile
	bucket  int
	closed  bool
}

func (s *spillingJoinStream) owner() string { return fmt.Sprintf("HashJoin[%d]", s.partition) }

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
		b, err := s.cur.Next(ctx)
		if err != io.EOF || s.build == nil {
			return b, err
		}
		s.cur.Close()
		s.cur = nil
		s.build[s.bucket].close()
		s.probes[s.bucket].close()
		s.bucket++
		if s.bucket >= len(s.build) {
			return nil, io.EOF
		}
		if err := s.openBucket(); err != nil {
			return nil, err
		}
	}
}

// start reads the build partition into a table, or into bucket files when
// the pool refuses it; in that case it splits the probe partition too.
func (s *spillingJoinStream) start(ctx context.Context) error {
	t, err := s.readBuild(ctx)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	if t != nil {
		probe := s.probe
		s.probe = nil
		s.cur = s.h.probeStream(s.tc, probe, func(context.Context) (*joinBuildTable, error) { return t, nil }, t.release)
		return nil
	}
	for {
		b, err := s.probe.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		err = splitByKey(s.tc, b, s.h.rightKeys, s.probes)
		b.Release()
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	s.probe.Close()
	s.probe = nil
	return s.openBucket()
}

// readBuild reads the build partition. It returns the table, or nil when
// the build side went to the bucket files instead.
func (s *spillingJoinStream) readBuild(ctx context.Context) (*joinBuildTable, error) {
	in, err := ExecuteOp(ctx, s.h.left, s.partition, s.tc)
	if err != nil {
		return nil, fmt.Errorf("reading build side: %w", err)
	}
	defer in.Close()
	checkFailpoint(FailpointHashJoinBuild)
	t := &joinBuildTable{res: s.tc.NewReservation(ctx, s.owner())}
	var batches []arrow.RecordBatch
	defer func() { kernels.ReleaseAll(batches) }()
	for {
		b, err := in.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.res.Free()
			return nil, fmt.Errorf("reading build side: %w", err)
		}
		if s.build != nil {
			err = splitByKey(s.tc, b, s.h.leftKeys, s.build)
			b.Release()
			if err != nil {
				return nil, err
			}
			continue
		}
		err = t.res.Grow(kernels.BatchBytes(b))
		if err != nil && canSpill(s.tc, err) && !s.h.nullAware {
			// Split what is held, and everything after it.
			err = s.spillBuild(append(batches, b))
			kernels.ReleaseAll(batches)
			batches = nil
			b.Release()
			t.res.Free()
			if err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			b.Release()
			t.res.Free()
			return nil, fmt.Errorf("reading build side: %w", err)
		}
		batches = append(batches, b)
	}
	if s.build != nil {
		return nil, nil
	}
	err = t.finish(s.h.left.Schema(), batches, s.h.leftKeys, s.tc)
	if err != nil && canSpill(s.tc, err) && !s.h.nullAware {
		// The rows fit, their index does not (finish released the table).
		return nil, s.spillBuild(batches)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// spillBuild creates the bucket files and splits the build rows held so
// far (the caller still releases them) into them.
func (s *spillingJoinStream) spillBuild(held []arrow.RecordBatch) error {
	if err := s.createBuckets(); err != nil {
		return err
	}
	for _, b := range held {
		if err := splitByKey(s.tc, b, s.h.leftKeys, s.build); err != nil {
			return err
		}
	}
	return nil
}

func (s *spillingJoinStream) createBuckets() error {
	s.build = make([]*spillFile, joinSpillBuckets)
	s.probes = make([]*spillFile, joinSpillBuckets)
	for i := range s.build {
		var err error
		if s.build[i], err = newSpillFile(s.tc.SpillDir, s.h.left.Schema(), s.tc.Alloc); err != nil {
			return err
		}
		if s.probes[i], err = newSpillFile(s.tc.SpillDir, s.h.right.Schema(), s.tc.Alloc); err != nil {
			return err
		}
	}
	return nil
}

// openBucket starts joining the current bucket's rows.
func (s *spillingJoinStream) openBucket() error {
	build, probe := s.build[s.bucket], s.probes[s.bucket]
	for _, f := range []*spillFile{build, probe} {
		if err := f.finish(); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	in, err := (&spillRuns{schema: s.h.right.Schema(), runs: []*spillFile{probe}}).Execute(context.Background(), 0, s.tc)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	var table *joinBuildTable
	buildSide := &spillRuns{schema: s.h.left.Schema(), runs: []*spillFile{build}}
	s.cur = s.h.probeStream(s.tc, in, func(ctx context.Context) (*joinBuildTable, error) {
		t, err := buildJoinTable(ctx, buildSide, []int{0}, s.h.leftKeys, s.tc, s.owner())
		table = t
		return t, err
	}, func() {
		if table != nil {
			table.release()
		}
	})
	return nil
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
	for _, f := range append(s.build, s.probes...) {
		if f != nil {
			f.close()
		}
	}
}

// splitByKey writes each row of b to the file of its key's hash bucket.
func splitByKey(tc *TaskContext, b arrow.RecordBatch, keys []expr.Expr, files []*spillFile) error {
	n := int(b.NumRows())
	if n == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(keys))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, k := range keys {
		a, err := k.Eval(b, tc.Alloc)
		if err != nil {
			return fmt.Errorf("hash join key %s: %w", k, err)
		}
		cols[i] = a
	}
	return splitRows(tc, b, cols, files)
}
