package physical

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/plan"
)

// windowPartitions is one evaluated batch of complete window partitions:
// where each partition and each peer group (rows equal on the ORDER BY
// keys) starts and ends.
type windowPartitions struct {
	op    *Window
	in    arrow.RecordBatch
	mem   memory.Allocator
	parts []int // partition i is rows [parts[i], parts[i+1])
	// peerStart[r], peerEnd[r]: the peer group of row r.
	peerStart, peerEnd []int32
	orderKey           arrow.Array // the first ORDER BY key, evaluated
}

// Arguments the functions refuse are data errors (the same on every
// executor: never retried).
var (
	errNtileArg    = expr.NewDataError("argument of ntile must be greater than zero")
	errNthValueArg = expr.NewDataError("argument of nth_value must be greater than zero")
)

func newWindowPartitions(op *Window, in arrow.RecordBatch, tc *TaskContext) (*windowPartitions, error) {
	n := int(in.NumRows())
	p := &windowPartitions{op: op, in: in, mem: tc.Alloc}
	pcmp, err := newRowComparator(op.partitionSortKeys())
	if err != nil {
		return nil, err
	}
	defer pcmp.release()
	keys, err := pcmp.evalKeys(in, tc.Alloc)
	if err != nil {
		return nil, err
	}
	pcmp.addBatch(keys)
	ocmp, err := newRowComparator(op.orderBy)
	if err != nil {
		return nil, err
	}
	defer ocmp.release()
	okeys, err := ocmp.evalKeys(in, tc.Alloc)
	if err != nil {
		return nil, err
	}
	ocmp.addBatch(okeys)
	if len(okeys) > 0 {
		okeys[0].Retain()
		p.orderKey = okeys[0]
	}
	p.peerStart = make([]int32, n)
	p.peerEnd = make([]int32, n)
	groupStart := 0
	for r := 0; r <= n; r++ {
		newPart := r == 0 || r == n || pcmp.compare(kernels.RowRef{Batch: 0, Row: int32(r - 1)}, kernels.RowRef{Batch: 0, Row: int32(r)}) != 0
		if newPart {
			p.parts = append(p.parts, r)
		}
		if r > 0 && (newPart || ocmp.compare(kernels.RowRef{Batch: 0, Row: int32(r - 1)}, kernels.RowRef{Batch: 0, Row: int32(r)}) != 0) {
			for k := groupStart; k < r; k++ {
				p.peerStart[k], p.peerEnd[k] = int32(groupStart), int32(r)
			}
			groupStart = r
		}
	}
	return p, nil
}

func (p *windowPartitions) release() {
	if p.orderKey != nil {
		p.orderKey.Release()
	}
}

// compute evaluates f over every partition.
func (p *windowPartitions) compute(f WindowExpr) (arrow.Array, error) {
	args, err := kernels.EvalAll(f.Args, p.in, p.mem)
	if err != nil {
		return nil, err
	}
	defer kernels.ReleaseAll(args)
	for i, a := range args {
		if a.DataType().ID() == arrow.NULL && f.Args[i].DataType().ID() != arrow.NULL {
			na := array.MakeArrayOfNull(p.mem, f.Args[i].DataType(), a.Len())
			a.Release()
			args[i] = na
		}
	}
	n := int(p.in.NumRows())
	switch f.Func {
	case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank, plan.WinNtile:
		return p.integerFunc(f, args)
	case plan.WinPercentRank, plan.WinCumeDist:
		b := array.NewFloat64Builder(p.mem)
		defer b.Release()
		b.Reserve(n)
		p.eachPartition(func(ps, pe int) {
			cnt := float64(pe - ps)
			for r := ps; r < pe; r++ {
				if f.Func == plan.WinCumeDist {
					b.UnsafeAppend(float64(int(p.peerEnd[r])-ps) / cnt)
				} else if pe-ps > 1 {
					b.UnsafeAppend(float64(int(p.peerStart[r])-ps) / (cnt - 1))
				} else {
					b.UnsafeAppend(0)
				}
			}
		})
		return b.NewArray(), nil
	case plan.WinLag, plan.WinLead:
		return p.lagLead(f, args)
	case plan.WinFirstValue, plan.WinLastValue, plan.WinNthValue:
		return p.frameValue(f, args)
	case plan.WinAggregate:
		return p.aggregate(f, args)
	}
	return nil, fmt.Errorf("unknown window function %d", f.Func)
}

func (p *windowPartitions) eachPartition(fn func(ps, pe int)) {
	for i := 0; i+1 < len(p.parts); i++ {
		fn(p.parts[i], p.parts[i+1])
	}
}

// integerFunc computes row_number, rank, dense_rank and ntile.
func (p *windowPartitions) integerFunc(f WindowExpr, args []arrow.Array) (arrow.Array, error) {
	b := array.NewInt64Builder(p.mem)
	defer b.Release()
	b.Reserve(int(p.in.NumRows()))
	var err error
	p.eachPartition(func(ps, pe int) {
		if err != nil {
			return
		}
		switch f.Func {
		case plan.WinRowNumber:
			for r := ps; r < pe; r++ {
				b.UnsafeAppend(int64(r - ps + 1))
			}
		case plan.WinRank:
			for r := ps; r < pe; r++ {
				b.UnsafeAppend(int64(int(p.peerStart[r]) - ps + 1))
			}
		case plan.WinDenseRank:
			rank := int64(0)
			for r := ps; r < pe; r++ {
				if int(p.peerStart[r]) == r {
					rank++
				}
				b.UnsafeAppend(rank)
			}
		case plan.WinNtile:
			// The bucket count is taken from the partition's first row.
			a := args[0].(*array.Int64)
			if a.IsNull(ps) {
				for r := ps; r < pe; r++ {
					b.UnsafeAppendBoolToBitmap(false)
				}
				return
			}
			k := a.Value(ps)
			if k <= 0 {
				err = errNtileArg
				return
			}
			total := int64(pe - ps)
			per, rem := total/k, total%k
			big := rem * (per + 1) // rows in the first rem buckets of per+1 rows
			for r := int64(0); r < total; r++ {
				if r < big {
					b.UnsafeAppend(r/(per+1) + 1)
				} else {
					b.UnsafeAppend(rem + (r-big)/per + 1)
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return b.NewArray(), nil
}

// gather builds the result of a function that picks, for each row, a value
// of x (idx[r] >= 0), a value of dflt (idx[r] == -1, row r's default) or
// NULL (idx[r] == -2).
func (p *windowPartitions) gather(x, dflt arrow.Array, idx []int) (arrow.Array, error) {
	n := x.Len()
	null := array.MakeArrayOfNull(p.mem, x.DataType(), 1)
	defer null.Release()
	srcs := []arrow.Array{x, null}
	if dflt != nil {
		srcs = append(srcs, dflt)
	}
	all, err := array.Concatenate(srcs, p.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	take := make([]int32, len(idx))
	for r, j := range idx {
		switch {
		case j >= 0:
			take[r] = int32(j)
		case j == -1 && dflt != nil:
			take[r] = int32(n + 1 + r)
		default:
			take[r] = int32(n)
		}
	}
	return kernels.TakeArray(p.mem, all, take)
}

// lagLead computes lag(x, offset, default) and lead(...).
func (p *windowPartitions) lagLead(f WindowExpr, args []arrow.Array) (arrow.Array, error) {
	offs := args[1].(*array.Int64)
	idx := make([]int, int(p.in.NumRows()))
	p.eachPartition(func(ps, pe int) {
		for r := ps; r < pe; r++ {
			if offs.IsNull(r) {
				idx[r] = -2
				continue
			}
			o := offs.Value(r)
			if f.Func == plan.WinLag {
				if o == -1<<63 {
					idx[r] = -1
					continue
				}
				o = -o
			}
			// Row r+o, if it lies in the partition (no overflow: |o| is
			// compared before it is added).
			if (o >= 0 && o < int64(pe-r)) || (o < 0 && -o <= int64(r-ps)) {
				idx[r] = r + int(o)
			} else {
				idx[r] = -1
			}
		}
	})
	return p.gather(args[0], args[2], idx)
}

// frames calls fn with the frame of every row, partition by partition.
func (p *windowPartitions) frames(fr plan.WindowFrame, fn func(r, start, end int)) error {
	f := &frameRows{frame: fr, peerStart: p.peerStart, peerEnd: p.peerEnd}
	if len(p.op.orderBy) > 0 {
		f.nullsFirst, f.desc = p.op.orderBy[0].NullsFirst, p.op.orderBy[0].Desc
	}
	for _, b := range []plan.FrameBound{fr.Start, fr.End} {
		if (b.Kind == plan.BoundPreceding || b.Kind == plan.BoundFollowing) && !fr.Rows && f.keys == nil {
			keys, err := newRangeKeys(p.orderKey)
			if err != nil {
				return err
			}
			f.keys = keys
		}
	}
	var err error
	if f.startOff, err = frameOffset(fr, fr.Start, p.op.orderBy); err != nil {
		return err
	}
	if f.endOff, err = frameOffset(fr, fr.End, p.op.orderBy); err != nil {
		return err
	}
	p.eachPartition(func(ps, pe int) {
		f.ps, f.pe = ps, pe
		for r := ps; r < pe; r++ {
			s, e := f.bounds(r)
			fn(r, s, e)
		}
	})
	return nil
}

// keeps reports whether agg, which cannot remove rows, gives the same
// aggregate without its rows before partition row s (winDropper).
func keeps(agg windowAggregator, s int64) bool {
	d, ok := agg.(winDropper)
	return ok && d.keeps(s)
}

func frameOffset(fr plan.WindowFrame, b plan.FrameBound, orderBy []SortKey) (any, error) {
	if b.Kind != plan.BoundPreceding && b.Kind != plan.BoundFollowing {
		return nil, nil
	}
	if fr.Rows {
		return b.Offset.Val.(int64), nil
	}
	return rangeOffset(orderBy[0].Expr.DataType(), b.Offset)
}

// frameValue computes first_value, last_value and nth_value.
func (p *windowPartitions) frameValue(f WindowExpr, args []arrow.Array) (arrow.Array, error) {
	idx := make([]int, int(p.in.NumRows()))
	var nth *array.Int64
	if f.Func == plan.WinNthValue {
		nth = args[1].(*array.Int64)
	}
	var bad error
	err := p.frames(f.Frame, func(r, s, e int) {
		idx[r] = -2
		switch f.Func {
		case plan.WinFirstValue:
			if s < e {
				idx[r] = s
			}
		case plan.WinLastValue:
			if s < e {
				idx[r] = e - 1
			}
		case plan.WinNthValue:
			if nth.IsNull(r) {
				return
			}
			k := nth.Value(r)
			if k <= 0 {
				bad = errNthValueArg
				return
			}
			if k <= int64(e-s) {
				idx[r] = s + int(k) - 1
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	return p.gather(args[0], nil, idx)
}

// aggregate computes an aggregate over each row's frame. The aggregator
// holds the rows [lo, hi) at any time; as frames only move forward it adds
// the rows entering and, when it can, removes those leaving, so a running
// frame costs O(1) per row. Aggregates that cannot remove a row (min, max,
// float sums, whose removal would not be exact) start over when the frame
// start moves, min and max only when their extreme row leaves it.
func (p *windowPartitions) aggregate(f WindowExpr, args []arrow.Array) (arrow.Array, error) {
	var arg arrow.Array
	if len(args) > 0 {
		arg = args[0]
	}
	var argType arrow.DataType
	if arg != nil {
		argType = f.Args[0].DataType()
	}
	agg, err := newWindowAggregator(f.Agg, argType, f.Type)
	if err != nil {
		return nil, err
	}
	defer agg.release()
	a, err := newWinAggArg(f.Agg, arg, 0)
	if err != nil {
		return nil, err
	}
	n := int(p.in.NumRows())
	agg.outputs(n)
	var aggErr error
	lo, hi := -1, -1
	err = p.frames(f.Frame, func(r, s, e int) {
		if aggErr != nil {
			return
		}
		// A new partition's first frame starts at or after the previous
		// partition's end, so s >= hi also starts each partition afresh.
		if lo < 0 || s < lo || e < hi || s >= hi || (s > lo && !agg.invertible() && !keeps(agg, int64(s))) {
			agg.reset()
			lo, hi = s, s
		}
		if !agg.invertible() {
			lo = s
		}
		for ; lo < s; lo++ {
			if aggErr = agg.remove(a, lo); aggErr != nil {
				return
			}
		}
		for ; hi < e; hi++ {
			if aggErr = agg.add(a, hi); aggErr != nil {
				return
			}
		}
		aggErr = agg.emit(r)
	})
	if err != nil {
		return nil, err
	}
	if aggErr != nil {
		return nil, aggErr
	}
	if pk, ok := agg.(winPicker); ok {
		picks := pk.picks()
		idx := make([]int, n)
		for r, j := range picks {
			idx[r] = int(j)
			if j < 0 {
				idx[r] = -2
			}
		}
		return p.gather(arg, nil, idx)
	}
	return agg.finish(p.mem)
}
