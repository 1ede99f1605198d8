package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// boolPlanes is a boolean operand as two offset-0 bitmaps: known-true rows
// and known-false rows (a NULL row is in neither). Three-valued logic is
// then plain bitwise algebra over bytes.
type boolPlanes struct {
	t, f []byte
}

// planesOf splits a boolean operand into its true/false planes.
func planesOf(o operand, n int) (boolPlanes, error) {
	nb := int(bitutil.BytesForBits(int64(n)))
	p := boolPlanes{t: make([]byte, nb), f: make([]byte, nb)}
	if o.isScalar() {
		if o.lit.Val == nil {
			return p, nil
		}
		v, ok := o.lit.Val.(bool)
		if !ok {
			return p, fmt.Errorf("internal: %T constant where a boolean was expected", o.lit.Val)
		}
		fill := p.f
		if v {
			fill = p.t
		}
		for i := range fill {
			fill[i] = 0xff
		}
		return p, nil
	}
	a := o.arr
	if a.DataType().ID() == arrow.NULL {
		return p, nil
	}
	if a.DataType().ID() != arrow.BOOL {
		return p, fmt.Errorf("internal: %s operand where a boolean was expected", a.DataType())
	}
	bits, off := boolBits(a)
	bitutil.CopyBitmap(bits, off, n, p.t, 0)
	for i := range p.f {
		p.f[i] = ^p.t[i]
	}
	if a.NullN() > 0 {
		v := validityOf(a)
		valid := make([]byte, nb)
		bitutil.CopyBitmap(v.bits, v.offset, n, valid, 0)
		for i := range valid {
			p.t[i] &= valid[i]
			p.f[i] &= valid[i]
		}
	}
	return p, nil
}

// planesArray builds a boolean array from planes: value = t, valid = t|f.
func planesArray(p boolPlanes, n int, mem memory.Allocator) arrow.Array {
	vbuf, vals := allocBitmap(mem, n)
	copy(vals, p.t)
	nbuf, valid := allocBitmap(mem, n)
	for i := range valid {
		valid[i] = p.t[i] | p.f[i]
	}
	nulls := n - bitutil.CountSetBits(valid, 0, n)
	if nulls == 0 {
		nbuf.Release()
		nbuf = nil
	}
	return makeArray(plan.Bool, n, nbuf, nulls, vbuf)
}

// evalLogic evaluates AND / OR with three-valued logic: false AND NULL is
// false, true OR NULL is true.
func evalLogic(b *Binary, batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	ops, err := evalOperands([]Expr{b.L, b.R}, batch, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(ops)
	if a, b2, ok := nullFreeBools(ops[0], ops[1]); ok {
		// Two NULL-free boolean arrays: two-valued logic over the value
		// bitmaps, without the true/false planes.
		lb, lo := boolBits(a)
		rb, ro := boolBits(b2)
		vbuf, vals := allocBitmap(mem, n)
		if b.Op == plan.OpAnd {
			bitutil.BitmapAnd(lb, rb, int64(lo), int64(ro), vals, 0, int64(n))
		} else {
			bitutil.BitmapOr(lb, rb, int64(lo), int64(ro), vals, 0, int64(n))
		}
		return makeArray(plan.Bool, n, nil, 0, vbuf), nil
	}
	l, err := planesOf(ops[0], n)
	if err != nil {
		return nil, err
	}
	r, err := planesOf(ops[1], n)
	if err != nil {
		return nil, err
	}
	if b.Op == plan.OpAnd {
		for i := range l.t {
			l.t[i] &= r.t[i]
			l.f[i] |= r.f[i]
		}
	} else {
		for i := range l.t {
			l.t[i] |= r.t[i]
			l.f[i] &= r.f[i]
		}
	}
	return planesArray(l, n, mem), nil
}

// nullFreeBools returns l and r's arrays when both are boolean arrays
// without NULLs.
func nullFreeBools(l, r operand) (arrow.Array, arrow.Array, bool) {
	if l.isScalar() || r.isScalar() {
		return nil, nil, false
	}
	for _, a := range []arrow.Array{l.arr, r.arr} {
		if a.DataType().ID() != arrow.BOOL || a.NullN() > 0 {
			return nil, nil, false
		}
	}
	return l.arr, r.arr, true
}

// Not is three-valued boolean negation.
type Not struct{ X Expr }

// DataType implements Expr.
func (e *Not) DataType() arrow.DataType { return plan.Bool }

func (e *Not) String() string { return "NOT " + e.X.String() }

// Eval implements Expr.
func (e *Not) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	o, err := evalOperand(e.X, batch, mem)
	if err != nil {
		return nil, err
	}
	defer o.release()
	p, err := planesOf(o, n)
	if err != nil {
		return nil, err
	}
	p.t, p.f = p.f, p.t
	return planesArray(p, n, mem), nil
}

// IsNull is X IS NULL, or X IS NOT NULL when Negated. It is never NULL.
type IsNull struct {
	X       Expr
	Negated bool
}

// DataType implements Expr.
func (e *IsNull) DataType() arrow.DataType { return plan.Bool }

func (e *IsNull) String() string {
	if e.Negated {
		return e.X.String() + " IS NOT NULL"
	}
	return e.X.String() + " IS NULL"
}

// Eval implements Expr.
func (e *IsNull) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	o, err := evalOperand(e.X, batch, mem)
	if err != nil {
		return nil, err
	}
	defer o.release()
	buf, out := allocBitmap(mem, n)
	switch {
	case o.isScalar():
		if o.isNullScalar() != e.Negated {
			bitutil.SetBitsTo(out, 0, int64(n), true)
		}
	case o.arr.DataType().ID() == arrow.NULL:
		if !e.Negated {
			bitutil.SetBitsTo(out, 0, int64(n), true)
		}
	case o.arr.NullN() == 0:
		if e.Negated {
			bitutil.SetBitsTo(out, 0, int64(n), true)
		}
	default:
		v := validityOf(o.arr)
		if e.Negated {
			bitutil.CopyBitmap(v.bits, v.offset, n, out, 0)
		} else {
			bitutil.InvertBitmap(v.bits, v.offset, n, out, 0)
		}
	}
	return makeArray(plan.Bool, n, nil, 0, buf), nil
}

// Negate is arithmetic negation.
type Negate struct{ X Expr }

// DataType implements Expr.
func (e *Negate) DataType() arrow.DataType { return e.X.DataType() }

func (e *Negate) String() string { return "-" + e.X.String() }

// Eval implements Expr.
func (e *Negate) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	a, err := e.X.Eval(batch, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	dt := a.DataType()
	if a.DataType().ID() == arrow.NULL || a.NullN() == n {
		return nullArray(e.DataType(), n, mem), nil
	}
	valid, nulls := andValidity(mem, n, a)
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	switch dt.ID() {
	case arrow.INT32:
		buf, out := allocValues[int32](mem, n)
		for i, x := range values[int32](a) {
			if x == -1<<31 && v.valid(i) {
				buf.Release()
				releaseBuf(valid)
				return nil, fmt.Errorf("%s: %w", e, errIntOverflow)
			}
			out[i] = -x
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	case arrow.INT64:
		buf, out := allocValues[int64](mem, n)
		for i, x := range values[int64](a) {
			if x == -1<<63 && v.valid(i) {
				buf.Release()
				releaseBuf(valid)
				return nil, fmt.Errorf("%s: %w", e, errIntOverflow)
			}
			out[i] = -x
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	case arrow.FLOAT64:
		buf, out := allocValues[float64](mem, n)
		for i, x := range values[float64](a) {
			out[i] = -x
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	case arrow.DECIMAL128:
		buf, out := allocValues[decimal128.Num](mem, n)
		for i, x := range values[decimal128.Num](a) {
			out[i] = x.Negate()
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	}
	releaseBuf(valid)
	return nil, fmt.Errorf("internal: cannot negate %s", plan.TypeName(dt))
}
