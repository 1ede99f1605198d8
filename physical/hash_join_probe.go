package physical

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
)

// joinCandidates enumerates candidate (build row, probe row) pairs of one
// probe batch: equal-key pairs for the hash join, blocks of the cross
// product for the nested-loop join. The probe stream then applies the extra
// filter and the join type's rules.
type joinCandidates interface {
	// reset starts the probe batch b (the caller keeps b alive).
	reset(b arrow.RecordBatch) error
	// next appends pairs of the current batch to bi/pi, stopping once about
	// limit pairs are added; done reports that the batch is exhausted.
	next(bi, pi []int32, limit int) (_, _ []int32, done bool)
	// probeKeyNull reports whether probe row r of the batch has a NULL key.
	probeKeyNull(r int) bool
	// clear releases per-batch state.
	clear()
}

// joinOutput describes what a join stream emits.
type joinOutput struct {
	joinType                JoinType
	schema                  *arrow.Schema // output schema
	pairSchema              *arrow.Schema // left fields then right fields (filter input)
	filter                  expr.Expr     // may be nil
	nullAware               bool
	leftFields, rightFields []arrow.Field
}

// joinProbeStream is the probe side shared by HashJoin and NestedLoopJoin.
// For each probe batch it pulls candidate pairs, filters them, tracks which
// build and probe rows matched, and queues output row pairs (-1 = NULL
// padding) that it emits at most BatchSize at a time. After the last probe
// batch it emits the build rows the join type asks for.
type joinProbeStream struct {
	out   *joinOutput
	tc    *TaskContext
	probe Stream
	// getTable returns the build table (building or waiting for it).
	getTable func(ctx context.Context) (*joinBuildTable, error)
	// newCandidates makes the candidate source once the table exists.
	newCandidates func(t *joinBuildTable) joinCandidates
	// onClose releases the table (shared or owned).
	onClose func()

	table        *joinBuildTable
	cand         joinCandidates
	matched      []bool // build rows matched (EmitsUnmatchedBuild only)
	cur          arrow.RecordBatch
	curDone      bool
	probeMatched []bool
	candB, candP []int32
	pendB, pendP []int32
	pendPos      int
	probeEOF     bool
	finalPrep    bool
	finalRows    []int32
	finalPos     int
	closed       bool
}

func (s *joinProbeStream) batchSize() int {
	if s.tc.BatchSize > 0 {
		return s.tc.BatchSize
	}
	return DefaultBatchSize
}

// Next implements Stream.
func (s *joinProbeStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, errors.New("join: stream closed")
	}
	if s.table == nil {
		t, err := s.getTable(ctx)
		if err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
		s.table = t
		s.cand = s.newCandidates(t)
		if s.out.joinType.EmitsUnmatchedBuild() {
			s.matched = make([]bool, t.numRows)
		}
		jt := s.out.joinType
		switch {
		case s.out.nullAware && t.hasNullKey:
			// x NOT IN (..., NULL, ...) is never true.
			s.probeEOF, s.finalPrep = true, true
		case t.numRows == 0 && (jt == JoinInner || jt == JoinRightSemi || jt == JoinLeftSemi || jt == JoinLeft || jt == JoinLeftAnti):
			// Nothing can match and no probe row is output: skip probing.
			s.probeEOF = true
		}
	}
	bs := s.batchSize()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.pendPos < len(s.pendP) {
			end := min(len(s.pendP), s.pendPos+bs)
			var bi []int32 // probe-side semi/anti joins queue probe rows only
			if len(s.pendB) > 0 {
				bi = s.pendB[s.pendPos:end]
			}
			rb, err := s.emitPairs(bi, s.pendP[s.pendPos:end])
			s.pendPos = end
			return rb, err
		}
		s.pendB, s.pendP, s.pendPos = s.pendB[:0], s.pendP[:0], 0
		if s.cur != nil && !s.curDone {
			if err := s.probeStep(bs); err != nil {
				return nil, err
			}
			continue
		}
		if s.cur != nil {
			s.cand.clear()
			s.cur.Release()
			s.cur = nil
		}
		if !s.probeEOF {
			b, err := s.probe.Next(ctx)
			if err == io.EOF {
				s.probeEOF = true
				s.probe.Close()
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("join probe: %w", err)
			}
			if err := s.cand.reset(b); err != nil {
				b.Release()
				return nil, fmt.Errorf("join: %w", err)
			}
			s.cur, s.curDone = b, false
			s.probeMatched = growSlice(s.probeMatched[:0], int(b.NumRows()))
			continue
		}
		if !s.finalPrep {
			s.finalPrep = true
			s.prepareFinal()
		}
		if s.finalPos < len(s.finalRows) {
			end := min(len(s.finalRows), s.finalPos+bs)
			rb, err := s.emitBuildRows(s.finalRows[s.finalPos:end])
			s.finalPos = end
			return rb, err
		}
		return nil, io.EOF
	}
}

// probeStep processes up to one batch worth of candidates of s.cur.
func (s *joinProbeStream) probeStep(limit int) error {
	var done bool
	s.candB, s.candP, done = s.cand.next(s.candB[:0], s.candP[:0], limit)
	bi, pi := s.candB, s.candP
	if s.out.filter != nil && len(bi) > 0 {
		keep, err := s.evalFilter(bi, pi)
		if err != nil {
			return err
		}
		k := 0
		for i := range bi {
			if keep[i] {
				bi[k], pi[k] = bi[i], pi[i]
				k++
			}
		}
		bi, pi = bi[:k], pi[:k]
	}
	if s.matched != nil {
		for _, b := range bi {
			s.matched[b] = true
		}
	}
	for _, p := range pi {
		s.probeMatched[p] = true
	}
	switch s.out.joinType {
	case JoinInner, JoinLeft, JoinRight, JoinFull:
		s.pendB = append(s.pendB, bi...)
		s.pendP = append(s.pendP, pi...)
	}
	if !done {
		return nil
	}
	s.curDone = true
	n := int(s.cur.NumRows())
	switch s.out.joinType {
	case JoinRight, JoinFull:
		for p := 0; p < n; p++ {
			if !s.probeMatched[p] {
				s.pendB = append(s.pendB, -1)
				s.pendP = append(s.pendP, int32(p))
			}
		}
	case JoinRightSemi:
		for p := 0; p < n; p++ {
			if s.probeMatched[p] {
				s.pendP = append(s.pendP, int32(p))
			}
		}
	case JoinRightAnti:
		// Null-aware: with a non-empty build side, a NULL probe key is
		// "unknown", never true.
		dropNull := s.out.nullAware && s.table.numRows > 0
		for p := 0; p < n; p++ {
			if !s.probeMatched[p] && !(dropNull && s.cand.probeKeyNull(p)) {
				s.pendP = append(s.pendP, int32(p))
			}
		}
	}
	return nil
}

// evalFilter evaluates the extra join condition on the candidate pairs.
func (s *joinProbeStream) evalFilter(bi, pi []int32) ([]bool, error) {
	lc, err := joinTakeColumns(s.table.cols, bi, s.tc.Alloc)
	if err != nil {
		return nil, fmt.Errorf("join filter: %w", err)
	}
	rc, err := joinTakeColumns(s.cur.Columns(), pi, s.tc.Alloc)
	if err != nil {
		joinReleaseArrays(lc)
		return nil, fmt.Errorf("join filter: %w", err)
	}
	cols := append(lc, rc...)
	batch := array.NewRecordBatch(s.out.pairSchema, cols, int64(len(bi)))
	joinReleaseArrays(cols)
	defer batch.Release()
	res, err := s.out.filter.Eval(batch, s.tc.Alloc)
	if err != nil {
		return nil, fmt.Errorf("join filter %s: %w", s.out.filter, err)
	}
	defer res.Release()
	b, ok := res.(*array.Boolean)
	if !ok {
		return nil, fmt.Errorf("join filter %s returned %s, not boolean", s.out.filter, res.DataType())
	}
	keep := make([]bool, len(bi))
	for i := range keep {
		keep[i] = b.IsValid(i) && b.Value(i)
	}
	return keep, nil
}

// emitPairs builds an output batch from (build, probe) row pairs of the
// current probe batch.
func (s *joinProbeStream) emitPairs(bi, pi []int32) (arrow.RecordBatch, error) {
	var cols []arrow.Array
	var err error
	switch s.out.joinType {
	case JoinRightSemi, JoinRightAnti:
		cols, err = joinTakeColumns(s.cur.Columns(), pi, s.tc.Alloc)
	default:
		var lc, rc []arrow.Array
		if lc, err = joinTakeColumns(s.table.cols, bi, s.tc.Alloc); err != nil {
			break
		}
		if rc, err = joinTakeColumns(s.cur.Columns(), pi, s.tc.Alloc); err != nil {
			joinReleaseArrays(lc)
			break
		}
		cols = append(lc, rc...)
	}
	if err != nil {
		return nil, fmt.Errorf("join output: %w", err)
	}
	rb := array.NewRecordBatch(s.out.schema, cols, int64(len(pi)))
	joinReleaseArrays(cols)
	return rb, nil
}

// prepareFinal lists the build rows output after probing.
func (s *joinProbeStream) prepareFinal() {
	var want bool
	switch s.out.joinType {
	case JoinLeft, JoinFull, JoinLeftAnti:
		want = false
	case JoinLeftSemi:
		want = true
	default:
		return
	}
	for r, m := range s.matched {
		if m == want {
			s.finalRows = append(s.finalRows, int32(r))
		}
	}
}

// emitBuildRows outputs build rows (padded with NULL probe columns unless
// the join is a build-side semi/anti join).
func (s *joinProbeStream) emitBuildRows(rows []int32) (arrow.RecordBatch, error) {
	cols, err := joinTakeColumns(s.table.cols, rows, s.tc.Alloc)
	if err != nil {
		return nil, fmt.Errorf("join output: %w", err)
	}
	if s.out.joinType == JoinLeft || s.out.joinType == JoinFull {
		cols = append(cols, joinNullColumns(s.out.rightFields, len(rows), s.tc.Alloc)...)
	}
	rb := array.NewRecordBatch(s.out.schema, cols, int64(len(rows)))
	joinReleaseArrays(cols)
	return rb, nil
}

// Close implements Stream.
func (s *joinProbeStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.cur != nil {
		s.cand.clear()
		s.cur.Release()
		s.cur = nil
	}
	s.probe.Close()
	s.table = nil
	s.onClose()
}

func joinReleaseArrays(cols []arrow.Array) {
	for _, c := range cols {
		c.Release()
	}
}

// joinSchemas returns the output schema and the pair (filter input) schema.
func joinSchemas(jt JoinType, left, right *arrow.Schema) (out, pair *arrow.Schema) {
	var fs []arrow.Field
	for _, f := range left.Fields() {
		f.Nullable = true
		fs = append(fs, f)
	}
	for _, f := range right.Fields() {
		f.Nullable = true
		fs = append(fs, f)
	}
	pair = arrow.NewSchema(fs, nil)
	switch jt {
	case JoinLeftSemi, JoinLeftAnti:
		return left, pair
	case JoinRightSemi, JoinRightAnti:
		return right, pair
	}
	return pair, pair
}
