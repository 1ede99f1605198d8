package physical

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/plan"
)

// windowSpillEval computes a spilled window partition's output a block at
// a time: the block's input columns, then each function's results.
type windowSpillEval struct {
	sp    *spilledWindow
	out   *winCursor
	funcs []windowSpillFunc
	// frames are shared by the functions with the same frame.
	frames map[string]*spillFrames
	blk    int // the next block to output
}

// windowSpillFunc computes one function over a spilled partition, block
// by block in order, keeping what it carries from one to the next.
type windowSpillFunc interface {
	// block returns the results of the rows of ob.
	block(ob *winBlock) (arrow.Array, error)
	close()
}

func newWindowSpillEval(sp *spilledWindow) (*windowSpillEval, error) {
	e := &windowSpillEval{sp: sp, out: sp.cursor(nil, 1, nil), frames: map[string]*spillFrames{}}
	for _, f := range sp.op.funcs {
		fn, err := e.newFunc(f)
		if err != nil {
			e.close()
			return nil, fmt.Errorf("window: %s: %w", f, err)
		}
		e.funcs = append(e.funcs, fn)
	}
	return e, nil
}

func (e *windowSpillEval) newFunc(f WindowExpr) (windowSpillFunc, error) {
	sp := e.sp
	switch f.Func {
	case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank, plan.WinNtile, plan.WinPercentRank, plan.WinCumeDist:
		return newSpillRank(sp, f)
	case plan.WinLag, plan.WinLead:
		return &spillLagLead{sp: sp, f: f, vals: sp.cursor(f.Args[:1], 2, nil)}, nil
	case plan.WinFirstValue, plan.WinLastValue, plan.WinNthValue:
		fr, err := e.framesOf(f.Frame)
		if err != nil {
			return nil, err
		}
		return &spillValue{sp: sp, f: f, frames: fr, vals: sp.cursor(f.Args[:1], 2, nil)}, nil
	case plan.WinAggregate:
		fr, err := e.framesOf(f.Frame)
		if err != nil {
			return nil, err
		}
		return newSpillAgg(sp, f, fr)
	}
	return nil, fmt.Errorf("unknown window function %d", f.Func)
}

// framesOf returns the frames of fr, shared by the functions with that
// frame.
func (e *windowSpillEval) framesOf(fr plan.WindowFrame) (*spillFrames, error) {
	key := fr.String()
	if f, ok := e.frames[key]; ok {
		return f, nil
	}
	f, err := newSpillFrames(e.sp, fr)
	if err != nil {
		return nil, err
	}
	e.frames[key] = f
	return f, nil
}

func (e *windowSpillEval) next() (arrow.RecordBatch, int64, error) {
	sp := e.sp
	if e.blk >= len(sp.starts)-1 {
		return nil, 0, io.EOF
	}
	ob, _, err := e.out.at(sp.starts[e.blk])
	if err != nil {
		return nil, 0, err
	}
	e.blk++
	results := make([]arrow.Array, 0, len(e.funcs))
	defer func() { kernels.ReleaseAll(results) }()
	var bytes int64
	for i, fn := range e.funcs {
		a, err := fn.block(ob)
		if err != nil {
			return nil, 0, fmt.Errorf("window: %s: %w", sp.op.funcs[i], err)
		}
		results = append(results, a)
		bytes += kernels.ArrayBytes(a.Data())
	}
	if err := sp.res.Grow(bytes); err != nil {
		return nil, 0, sp.refused(err, sp.first, fmt.Sprintf("evaluating the spilled window partition %%s (%d rows) a block of %d rows at a time", sp.n, ob.b.NumRows()))
	}
	in := ob.b.Columns()
	cols := append(append([]arrow.Array(nil), in[:len(in)-1]...), results...)
	return array.NewRecordBatch(sp.op.schema, cols, ob.b.NumRows()), bytes, nil
}

func (e *windowSpillEval) close() {
	e.out.close()
	for _, f := range e.funcs {
		f.close()
	}
	e.funcs = nil
	for _, f := range e.frames {
		f.close()
	}
	e.frames = nil
}

// peerEnds finds where the peer group of a row ends, reading ahead.
type peerEnds struct {
	c          *winCursor
	start, end int64 // the last group found
}

func newPeerEnds(sp *spilledWindow) *peerEnds {
	return &peerEnds{c: sp.cursor(nil, 1, nil), start: -1}
}

// of returns one past the last row of the peer group that starts at
// start, which row r is in.
func (p *peerEnds) of(r, start int64) (int64, error) {
	if start == p.start {
		return p.end, nil
	}
	j, n := r+1, p.c.sp.n
	for j < n {
		b, i, err := p.c.at(j)
		if err != nil {
			return 0, err
		}
		peers := b.peers()
		for ; i < len(peers) && peers[i] == start; i++ {
			j++
		}
		if i < len(peers) {
			break
		}
	}
	p.start, p.end = start, j
	return j, nil
}

func (p *peerEnds) close() { p.c.close() }

// ---- ranking ----

// spillRank computes row_number, rank, dense_rank, ntile, percent_rank
// and cume_dist from each row's position and peer group.
type spillRank struct {
	sp    *spilledWindow
	f     WindowExpr
	dense int64
	ends  *peerEnds
	// ntile's bucket count, taken from the partition's first row.
	tiles    int64
	tileNull bool
}

func newSpillRank(sp *spilledWindow, f WindowExpr) (*spillRank, error) {
	s := &spillRank{sp: sp, f: f}
	switch f.Func {
	case plan.WinCumeDist:
		s.ends = newPeerEnds(sp)
	case plan.WinNtile:
		args, err := evalWindowArgs(f.Args[:1], sp.first, sp.tc.Alloc)
		if err != nil {
			return nil, err
		}
		a := args[0].(*array.Int64)
		s.tileNull = a.IsNull(0)
		if !s.tileNull {
			s.tiles = a.Value(0)
		}
		kernels.ReleaseAll(args)
		if !s.tileNull && s.tiles <= 0 {
			return nil, errNtileArg
		}
	}
	return s, nil
}

func (s *spillRank) block(ob *winBlock) (arrow.Array, error) {
	n := int(ob.b.NumRows())
	peers := ob.peers()
	total := s.sp.n
	if s.f.Func == plan.WinPercentRank || s.f.Func == plan.WinCumeDist {
		b := array.NewFloat64Builder(s.sp.tc.Alloc)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			r := ob.base + int64(i)
			switch {
			case s.f.Func == plan.WinCumeDist:
				end, err := s.ends.of(r, peers[i])
				if err != nil {
					return nil, err
				}
				b.UnsafeAppend(float64(end) / float64(total))
			case total > 1:
				b.UnsafeAppend(float64(peers[i]) / float64(total-1))
			default:
				b.UnsafeAppend(0)
			}
		}
		return b.NewArray(), nil
	}
	b := array.NewInt64Builder(s.sp.tc.Alloc)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		r := ob.base + int64(i)
		switch s.f.Func {
		case plan.WinRowNumber:
			b.UnsafeAppend(r + 1)
		case plan.WinRank:
			b.UnsafeAppend(peers[i] + 1)
		case plan.WinDenseRank:
			if peers[i] == r {
				s.dense++
			}
			b.UnsafeAppend(s.dense)
		case plan.WinNtile:
			if s.tileNull {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			k := s.tiles
			per, rem := total/k, total%k
			big := rem * (per + 1)
			if r < big {
				b.UnsafeAppend(r/(per+1) + 1)
			} else {
				b.UnsafeAppend(rem + (r-big)/per + 1)
			}
		}
	}
	return b.NewArray(), nil
}

func (s *spillRank) close() {
	if s.ends != nil {
		s.ends.close()
	}
}

// ---- gathering values of other rows ----

// gatherSpilled builds the result of a function that picks, for each row,
// the value of the cursor's expression at partition row targets[i] (>=
// 0), row i of dflt (-1, NULL without dflt) or NULL (-2), reading the
// blocks the targets are in, in the order they come. The cursor lets its
// blocks go at the end: each function gathers in turn, so one holds
// blocks at a time.
func gatherSpilled(vals *winCursor, typ arrow.DataType, targets []int64, dflt arrow.Array) (arrow.Array, error) {
	defer vals.close()
	mem := vals.sp.tc.Alloc
	var parts []arrow.Array
	defer func() { kernels.ReleaseAll(parts) }()
	take := make([]int32, len(targets))
	off := 0
	for i := 0; i < len(targets); {
		if targets[i] < 0 {
			i++
			continue
		}
		blk, _, err := vals.at(targets[i])
		if err != nil {
			return nil, err
		}
		lo, hi := blk.base, blk.base+blk.b.NumRows()
		var idx []int32
		j := i
		for ; j < len(targets); j++ {
			t := targets[j]
			if t < 0 {
				continue
			}
			if t < lo || t >= hi {
				break
			}
			take[j] = int32(off + len(idx))
			idx = append(idx, int32(t-lo))
		}
		part, err := kernels.TakeArray(mem, blk.cols[0], idx)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
		off += len(idx)
		i = j
	}
	null := array.MakeArrayOfNull(mem, typ, 1)
	srcs := append(append([]arrow.Array(nil), parts...), null)
	if dflt != nil {
		srcs = append(srcs, dflt)
	}
	all, err := array.Concatenate(srcs, mem)
	null.Release()
	if err != nil {
		return nil, err
	}
	defer all.Release()
	for i, t := range targets {
		switch {
		case t >= 0:
		case t == -1 && dflt != nil:
			take[i] = int32(off + 1 + i)
		default:
			take[i] = int32(off)
		}
	}
	return kernels.TakeArray(mem, all, take)
}

// spillLagLead computes lag(x, offset, default) and lead(...).
type spillLagLead struct {
	sp   *spilledWindow
	f    WindowExpr
	vals *winCursor
}

func (s *spillLagLead) block(ob *winBlock) (arrow.Array, error) {
	args, err := evalWindowArgs(s.f.Args[1:], ob.b, s.sp.tc.Alloc)
	if err != nil {
		return nil, err
	}
	defer kernels.ReleaseAll(args)
	offs := args[0].(*array.Int64)
	n := int(ob.b.NumRows())
	targets := make([]int64, n)
	for i := range targets {
		r := ob.base + int64(i)
		if offs.IsNull(i) {
			targets[i] = -2
			continue
		}
		o := offs.Value(i)
		if s.f.Func == plan.WinLag {
			if o == -1<<63 {
				targets[i] = -1
				continue
			}
			o = -o
		}
		if (o >= 0 && o < s.sp.n-r) || (o < 0 && -o <= r) {
			targets[i] = r + o
		} else {
			targets[i] = -1
		}
	}
	return gatherSpilled(s.vals, s.f.Type, targets, args[1])
}

func (s *spillLagLead) close() { s.vals.close() }

// ---- frames ----

// spillFrames computes each row's frame [start, end) over a spilled
// partition, row after row; the frames of later rows never start or end
// before those of earlier ones.
type spillFrames struct {
	sp               *spilledWindow
	fr               plan.WindowFrame
	startOff, endOff any
	ends             *peerEnds
	// RANGE offset bounds: the first ORDER BY key, evaluated on the
	// output block (keys), and a pointer per bound.
	keyExpr    expr.Expr
	keys       rangeKeys
	keyArr     arrow.Array
	rs, re     *rangePointer
	desc       bool
	nnS, nnE   int64 // the rows whose key is not NULL
	block      *winBlock
	blockPeers []int64
	// starts and ends are the frames of block's rows, computed once for
	// the functions sharing them.
	fstarts, fends []int64
}

// rangePointer is a RANGE offset bound moving forward over the non-NULL
// keys.
type rangePointer struct {
	c *winCursor
	p int64
}

func newSpillFrames(sp *spilledWindow, fr plan.WindowFrame) (*spillFrames, error) {
	f := &spillFrames{sp: sp, fr: fr, nnS: 0, nnE: sp.n}
	var err error
	if f.startOff, err = frameOffset(fr, fr.Start, sp.op.orderBy); err != nil {
		return nil, err
	}
	if f.endOff, err = frameOffset(fr, fr.End, sp.op.orderBy); err != nil {
		return nil, err
	}
	if !fr.Rows && fr.End.Kind == plan.BoundCurrentRow {
		f.ends = newPeerEnds(sp)
	}
	for bi, b := range []plan.FrameBound{fr.Start, fr.End} {
		if fr.Rows || (b.Kind != plan.BoundPreceding && b.Kind != plan.BoundFollowing) {
			continue
		}
		// A RANGE offset frame has exactly one ORDER BY key (checkFrame).
		k := sp.op.orderBy[0]
		f.keyExpr, f.desc = k.Expr, k.Desc
		if k.NullsFirst {
			f.nnS = sp.nullKeys
		} else {
			f.nnE = sp.n - sp.nullKeys
		}
		if f.ends == nil {
			f.ends = newPeerEnds(sp)
		}
		ptr := &rangePointer{c: sp.cursor([]expr.Expr{k.Expr}, 1, func(b *winBlock) error {
			keys, err := newRangeKeys(b.cols[0])
			b.aux = keys
			return err
		})}
		if bi == 0 {
			f.rs = ptr
		} else {
			f.re = ptr
		}
	}
	return f, nil
}

// prepare computes the frames of ob's rows, unless they are already.
func (f *spillFrames) prepare(ob *winBlock) error {
	if f.block == ob {
		return nil
	}
	f.block, f.blockPeers = ob, ob.peers()
	defer f.release()
	if f.keyExpr != nil {
		arrs, err := evalWindowArgs([]expr.Expr{f.keyExpr}, ob.b, f.sp.tc.Alloc)
		if err != nil {
			f.block = nil
			return err
		}
		f.keyArr = arrs[0]
		if f.keys, err = newRangeKeys(f.keyArr); err != nil {
			f.block = nil
			return err
		}
	}
	n := int(ob.b.NumRows())
	f.fstarts, f.fends = f.fstarts[:0], f.fends[:0]
	for i := 0; i < n; i++ {
		s, e, err := f.compute(i)
		if err != nil {
			f.block = nil
			return err
		}
		f.fstarts, f.fends = append(f.fstarts, s), append(f.fends, e)
	}
	return nil
}

// bounds returns the frame of row i of the prepared block; empty frames
// have start == end.
func (f *spillFrames) bounds(i int) (int64, int64, error) {
	return f.fstarts[i], f.fends[i], nil
}

func (f *spillFrames) release() {
	if f.keyArr != nil {
		f.keyArr.Release()
		f.keyArr, f.keys = nil, nil
	}
}

func (f *spillFrames) compute(i int) (int64, int64, error) {
	s, err := f.bound(i, f.fr.Start, f.startOff, true, f.rs)
	if err != nil {
		return 0, 0, err
	}
	e, err := f.bound(i, f.fr.End, f.endOff, false, f.re)
	if err != nil {
		return 0, 0, err
	}
	s = min(max(s, 0), f.sp.n)
	e = min(max(e, s), f.sp.n)
	return s, e, nil
}

func (f *spillFrames) bound(i int, b plan.FrameBound, off any, start bool, ptr *rangePointer) (int64, error) {
	r, n := f.block.base+int64(i), f.sp.n
	switch b.Kind {
	case plan.BoundUnboundedPreceding:
		return 0, nil
	case plan.BoundUnboundedFollowing:
		return n, nil
	case plan.BoundCurrentRow:
		if f.fr.Rows {
			if start {
				return r, nil
			}
			return r + 1, nil
		}
		if start {
			return f.blockPeers[i], nil
		}
		return f.ends.of(r, f.blockPeers[i])
	}
	if f.fr.Rows {
		k := off.(int64)
		end := int64(0)
		if !start {
			end = 1
		}
		if b.Kind == plan.BoundPreceding {
			if k > r {
				return 0, nil
			}
			return r - k + end, nil
		}
		if k > n-r {
			return n, nil
		}
		return r + k + end, nil
	}
	// RANGE: as frameRows.rangeBound, the search a pointer moving forward.
	if f.keys.isNull(i) {
		if start {
			return f.blockPeers[i], nil
		}
		return f.ends.of(r, f.blockPeers[i])
	}
	plus := b.Kind != plan.BoundPreceding
	if f.desc {
		plus = !plus
	}
	if sat := f.keys.saturates(i, off, plus); sat != 0 {
		if (sat > 0) != f.desc {
			return f.nnE, nil
		}
		return f.nnS, nil
	}
	strict := !start
	ptr.p = max(ptr.p, f.nnS)
	for ptr.p < f.nnE {
		blk, j, err := ptr.c.at(ptr.p)
		if err != nil {
			return 0, err
		}
		c := f.keys.cmpTarget(i, off, plus, blk.aux.(rangeKeys), j)
		if f.desc {
			c = -c
		}
		if (strict && c > 0) || (!strict && c >= 0) {
			return ptr.p, nil
		}
		ptr.p++
	}
	return f.nnE, nil
}

func (f *spillFrames) close() {
	f.release()
	f.block = nil
	if f.ends != nil {
		f.ends.close()
	}
	for _, p := range []*rangePointer{f.rs, f.re} {
		if p != nil {
			p.c.close()
		}
	}
}

// spillValue computes first_value, last_value and nth_value.
type spillValue struct {
	sp     *spilledWindow
	f      WindowExpr
	frames *spillFrames
	vals   *winCursor
}

func (s *spillValue) block(ob *winBlock) (arrow.Array, error) {
	if err := s.frames.prepare(ob); err != nil {
		return nil, err
	}
	var nth *array.Int64
	if s.f.Func == plan.WinNthValue {
		args, err := evalWindowArgs(s.f.Args[1:2], ob.b, s.sp.tc.Alloc)
		if err != nil {
			return nil, err
		}
		defer kernels.ReleaseAll(args)
		nth = args[0].(*array.Int64)
	}
	targets := make([]int64, ob.b.NumRows())
	for i := range targets {
		st, e, err := s.frames.bounds(i)
		if err != nil {
			return nil, err
		}
		targets[i] = -2
		switch s.f.Func {
		case plan.WinFirstValue:
			if st < e {
				targets[i] = st
			}
		case plan.WinLastValue:
			if st < e {
				targets[i] = e - 1
			}
		case plan.WinNthValue:
			if nth.IsNull(i) {
				continue
			}
			k := nth.Value(i)
			if k <= 0 {
				return nil, errNthValueArg
			}
			if k <= e-st {
				targets[i] = st + k - 1
			}
		}
	}
	return gatherSpilled(s.vals, s.f.Type, targets, nil)
}

func (s *spillValue) close() {
	s.vals.close()
}

// ---- aggregates ----

// spillAgg computes an aggregate over each row's frame as
// windowPartitions.aggregate does, the rows entering the frame read by
// one cursor and those leaving it by another.
type spillAgg struct {
	sp          *spilledWindow
	f           WindowExpr
	agg         windowAggregator
	frames      *spillFrames
	adds, drops *winCursor
	vals        *winCursor // min and max: their picks' values
	lo, hi      int64
}

func newSpillAgg(sp *spilledWindow, f WindowExpr, fr *spillFrames) (*spillAgg, error) {
	var argType arrow.DataType
	if len(f.Args) > 0 {
		argType = f.Args[0].DataType()
	}
	agg, err := newWindowAggregator(f.Agg, argType, f.Type)
	if err != nil {
		return nil, err
	}
	prep := func(b *winBlock) error {
		var arg arrow.Array
		if len(b.cols) > 0 {
			arg = b.cols[0]
		}
		a, err := newWinAggArg(f.Agg, arg, b.base)
		b.aux = a
		return err
	}
	s := &spillAgg{sp: sp, f: f, agg: agg, frames: fr, lo: -1, hi: -1}
	// The cursor adding rows keeps two blocks: an aggregate that cannot
	// remove rows starts its frame over, a little way back.
	s.adds = sp.cursor(f.Args, 2, prep)
	s.drops = sp.cursor(f.Args, 1, prep)
	if _, ok := agg.(winPicker); ok {
		s.vals = sp.cursor(f.Args, 1, nil)
	}
	return s, nil
}

func (s *spillAgg) block(ob *winBlock) (arrow.Array, error) {
	if err := s.frames.prepare(ob); err != nil {
		return nil, err
	}
	n := int(ob.b.NumRows())
	s.agg.outputs(n)
	for i := 0; i < n; i++ {
		st, e, err := s.frames.bounds(i)
		if err != nil {
			return nil, err
		}
		if s.lo < 0 || st < s.lo || e < s.hi || st >= s.hi || (st > s.lo && !s.agg.invertible() && !keeps(s.agg, st)) {
			s.agg.reset()
			s.lo, s.hi = st, st
		}
		if !s.agg.invertible() {
			s.lo = st
		}
		for ; s.lo < st; s.lo++ {
			blk, j, err := s.drops.at(s.lo)
			if err != nil {
				return nil, err
			}
			if err := s.agg.remove(blk.aux.(*winAggArg), j); err != nil {
				return nil, err
			}
		}
		for ; s.hi < e; s.hi++ {
			blk, j, err := s.adds.at(s.hi)
			if err != nil {
				return nil, err
			}
			if err := s.agg.add(blk.aux.(*winAggArg), j); err != nil {
				return nil, err
			}
		}
		if err := s.agg.emit(i); err != nil {
			return nil, err
		}
	}
	if pk, ok := s.agg.(winPicker); ok {
		return gatherSpilled(s.vals, s.f.Type, pk.picks(), nil)
	}
	return s.agg.finish(s.sp.tc.Alloc)
}

func (s *spillAgg) close() {
	s.agg.release()
	s.adds.close()
	s.drops.close()
	if s.vals != nil {
		s.vals.close()
	}
}
