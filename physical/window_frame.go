package physical

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"sluice/plan"
)

// checkFrame validates a frame against the window's ORDER BY: RANGE with
// an offset needs exactly one numeric or date key and an offset of the
// matching type.
func checkFrame(f plan.WindowFrame, orderBy []SortKey) error {
	if f.Start.Kind == plan.BoundUnboundedFollowing || f.End.Kind == plan.BoundUnboundedPreceding {
		return errors.New("invalid frame bounds")
	}
	for _, b := range []plan.FrameBound{f.Start, f.End} {
		if b.Kind != plan.BoundPreceding && b.Kind != plan.BoundFollowing {
			continue
		}
		if b.Offset == nil || b.Offset.Val == nil {
			return errors.New("frame offset must not be null")
		}
		if f.Rows {
			if v, ok := b.Offset.Val.(int64); !ok || v < 0 {
				return fmt.Errorf("ROWS offset %s must be a non-negative BIGINT", b.Offset)
			}
			continue
		}
		if len(orderBy) != 1 {
			return errors.New("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
		}
		if _, err := rangeOffset(orderBy[0].Expr.DataType(), b.Offset); err != nil {
			return err
		}
	}
	return nil
}

// rangeOffset converts a RANGE offset to the representation the key type's
// search uses: int64 for integer and date keys, float64, or decimal128.Num
// at the key's scale.
func rangeOffset(key arrow.DataType, off *plan.Literal) (any, error) {
	bad := fmt.Errorf("RANGE offset %s does not fit ORDER BY type %s", off, key)
	switch key.ID() {
	case arrow.INT32, arrow.INT64, arrow.DATE32:
		var v int64
		switch x := off.Val.(type) {
		case int64:
			v = x
		case int32:
			v = int64(x)
		default:
			return nil, bad
		}
		if v < 0 {
			return nil, errors.New("invalid preceding or following size in window function")
		}
		return v, nil
	case arrow.FLOAT64:
		v, ok := off.Val.(float64)
		if !ok || v < 0 || math.IsNaN(v) {
			return nil, bad
		}
		return v, nil
	case arrow.DECIMAL128:
		v, ok := off.Val.(decimal128.Num)
		od, dok := off.Typ.(*arrow.Decimal128Type)
		if !ok || !dok || od.Scale != key.(*arrow.Decimal128Type).Scale || v.Sign() < 0 {
			return nil, bad
		}
		return v, nil
	}
	return nil, fmt.Errorf("RANGE with offset PRECEDING/FOLLOWING is not supported for ORDER BY type %s", key)
}

// frameRows computes each row's frame [start, end) (indexes into the
// evaluated batch) for one window partition.
type frameRows struct {
	frame      plan.WindowFrame
	ps, pe     int     // the partition
	peerStart  []int32 // per row of the batch: its peer group's first row
	peerEnd    []int32 // and one past its last
	keys       rangeKeys
	nullsFirst bool
	desc       bool
	startOff   any
	endOff     any
}

// bounds returns row i's frame; empty frames have start == end.
func (f *frameRows) bounds(i int) (int, int) {
	s := f.bound(i, f.frame.Start, f.startOff, true)
	e := f.bound(i, f.frame.End, f.endOff, false)
	s = min(max(s, f.ps), f.pe)
	e = min(max(e, s), f.pe)
	return s, e
}

func (f *frameRows) bound(i int, b plan.FrameBound, off any, start bool) int {
	switch b.Kind {
	case plan.BoundUnboundedPreceding:
		return f.ps
	case plan.BoundUnboundedFollowing:
		return f.pe
	case plan.BoundCurrentRow:
		if f.frame.Rows {
			if start {
				return i
			}
			return i + 1
		}
		if start {
			return int(f.peerStart[i])
		}
		return int(f.peerEnd[i])
	}
	if f.frame.Rows {
		n := off.(int64)
		end := 0
		if !start {
			end = 1
		}
		if b.Kind == plan.BoundPreceding {
			if n > int64(i-f.ps) {
				return f.ps
			}
			return i - int(n) + end
		}
		if n > int64(f.pe-i) {
			return f.pe
		}
		return i + int(n) + end
	}
	return f.rangeBound(i, b.Kind == plan.BoundPreceding, off, start)
}

// rangeBound finds a RANGE offset bound as PostgreSQL does: a row whose key
// is NULL has its NULL peers as frame; for other rows NULL keys are out of
// range, and the bound is found by binary search in the non-NULL run.
func (f *frameRows) rangeBound(i int, preceding bool, off any, start bool) int {
	nnS, nnE := f.ps, f.pe // the partition's rows with a non-NULL key
	if f.nullsFirst {
		nnS = f.ps + sort.Search(f.pe-f.ps, func(k int) bool { return !f.keys.isNull(f.ps + k) })
	} else {
		nnE = f.ps + sort.Search(f.pe-f.ps, func(k int) bool { return f.keys.isNull(f.ps + k) })
	}
	if f.keys.isNull(i) {
		if start {
			return int(f.peerStart[i])
		}
		return int(f.peerEnd[i])
	}
	// The search target is key ± offset; "preceding" is toward smaller
	// keys when ascending and larger ones when descending.
	plus := !preceding
	if f.desc {
		plus = !plus
	}
	// A start bound is the first row in range; an end bound is one past
	// the last, that is the first row beyond the target.
	return f.keys.search(nnS, nnE, i, off, plus, !start, f.desc)
}

// rangeKeys gives RANGE frames access to the single ORDER BY key.
type rangeKeys interface {
	isNull(i int) bool
	// search returns the first row r in [lo, hi) with key(r) >= target
	// (> when strict), or <= (<) when desc; target is key(i) + off, or
	// key(i) - off when !plus. Keys in [lo, hi) are sorted and non-NULL.
	search(lo, hi, i int, off any, plus, strict, desc bool) int
	// saturates reports whether key(i) ± off (as search's target) lies
	// beyond every representable key: above all (1) or below all (-1).
	saturates(i int, off any, plus bool) int
	// cmpTarget compares key j of o (keys of the same type) with key(i)
	// ± off, as search's target, when that does not saturate.
	cmpTarget(i int, off any, plus bool, o rangeKeys, j int) int
}

type typedRangeKeys[T any] struct {
	arr  arrow.Array
	vals []T
	cmp  func(a, b T) int
	// shift returns v+off (plus) or v-off, saturating, and whether it
	// saturated (then every key is on one side of the target).
	shift func(v, off T, plus bool) (T, int)
}

func (k *typedRangeKeys[T]) isNull(i int) bool { return k.arr.IsNull(i) }

func (k *typedRangeKeys[T]) saturates(i int, off any, plus bool) int {
	_, sat := k.shift(k.vals[i], off.(T), plus)
	return sat
}

func (k *typedRangeKeys[T]) cmpTarget(i int, off any, plus bool, o rangeKeys, j int) int {
	target, _ := k.shift(k.vals[i], off.(T), plus)
	return k.cmp(o.(*typedRangeKeys[T]).vals[j], target)
}

func (k *typedRangeKeys[T]) search(lo, hi, i int, off any, plus, strict, desc bool) int {
	target, sat := k.shift(k.vals[i], off.(T), plus)
	if sat != 0 {
		// The target lies beyond every representable key: above all keys
		// (sat > 0) or below all (sat < 0).
		if (sat > 0) != desc {
			return hi
		}
		return lo
	}
	return lo + sort.Search(hi-lo, func(j int) bool {
		c := k.cmp(k.vals[lo+j], target)
		if desc {
			c = -c
		}
		if strict {
			return c > 0
		}
		return c >= 0
	})
}

// newRangeKeys wraps an evaluated ORDER BY key for RANGE searches.
func newRangeKeys(a arrow.Array) (rangeKeys, error) {
	intShift := func(v, off int64, plus bool) (int64, int) {
		if plus {
			if v > math.MaxInt64-off {
				return 0, 1
			}
			return v + off, 0
		}
		if v < math.MinInt64+off {
			return 0, -1
		}
		return v - off, 0
	}
	switch x := a.(type) {
	case *array.Int64:
		return &typedRangeKeys[int64]{arr: a, vals: x.Int64Values(), cmp: cmp.Compare[int64], shift: intShift}, nil
	case *array.Int32, *array.Date32:
		v32 := arrow.GetValues[int32](a.Data(), 1)
		vals := make([]int64, len(v32))
		for i, v := range v32 {
			vals[i] = int64(v)
		}
		return &typedRangeKeys[int64]{arr: a, vals: vals, cmp: cmp.Compare[int64], shift: intShift}, nil
	case *array.Float64:
		return &typedRangeKeys[float64]{arr: a, vals: x.Float64Values(), cmp: cmp.Compare[float64],
			shift: func(v, off float64, plus bool) (float64, int) {
				if plus {
					return v + off, 0
				}
				return v - off, 0
			}}, nil
	case *array.Decimal128:
		vals := arrow.GetValues[decimal128.Num](a.Data(), 1)
		return &typedRangeKeys[decimal128.Num]{arr: a, vals: vals, cmp: func(a, b decimal128.Num) int { return a.Cmp(b) },
			shift: func(v, off decimal128.Num, plus bool) (decimal128.Num, int) {
				if !plus {
					off = off.Negate()
				}
				r := v.Add(off)
				// Two's-complement overflow: same-signed operands, result
				// of the other sign.
				if v.Sign() == off.Sign() && v.Sign() != 0 && r.Sign() != v.Sign() {
					return r, v.Sign()
				}
				return r, 0
			}}, nil
	}
	return nil, fmt.Errorf("RANGE with offset PRECEDING/FOLLOWING is not supported for ORDER BY type %s", a.DataType())
}
