package expr

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// This file holds the low-level helpers every kernel shares: typed views of
// raw Arrow buffers, output buffer allocation and validity bitmap algebra.
// Kernels work on raw slices so the per-row cost is a few instructions.

// values returns the fixed-width value buffer of a as a []T, honouring the
// array's offset. T must have the physical width of a's type.
func values[T any](a arrow.Array) []T {
	d := a.Data()
	buf := d.Buffers()[1]
	n := d.Len()
	if buf == nil || buf.Len() == 0 || n == 0 {
		return nil
	}
	var z T
	size := int(unsafe.Sizeof(z))
	b := buf.Bytes()
	all := unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
	return all[d.Offset() : d.Offset()+n]
}

// allocValues allocates a zeroed buffer of n values of T from mem.
func allocValues[T any](mem memory.Allocator, n int) (*memory.Buffer, []T) {
	var z T
	size := int(unsafe.Sizeof(z))
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * size)
	if n == 0 {
		return buf, nil
	}
	b := buf.Bytes()
	clear(b)
	return buf, unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// allocBitmap allocates a zeroed bitmap of n bits from mem.
func allocBitmap(mem memory.Allocator, n int) (*memory.Buffer, []byte) {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	b := buf.Bytes()
	clear(b)
	return buf, b
}

// makeArray wraps buffers into an array of type dt and releases the caller's
// references to them. validity may be nil (no nulls).
func makeArray(dt arrow.DataType, n int, validity *memory.Buffer, nulls int, bufs ...*memory.Buffer) arrow.Array {
	if validity == nil {
		nulls = 0
	}
	all := append([]*memory.Buffer{validity}, bufs...)
	d := array.NewData(dt, n, all, nil, nulls, 0)
	for _, b := range all {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.MakeFromData(d)
}

// nullArray is an all-NULL array of type dt.
func nullArray(dt arrow.DataType, n int, mem memory.Allocator) arrow.Array {
	return array.MakeArrayOfNull(mem, dt, n)
}

// validity is a view of one operand's null bitmap: bits is nil when every
// row is valid.
type validity struct {
	bits   []byte
	offset int
}

func validityOf(a arrow.Array) validity {
	if a.NullN() == 0 {
		return validity{}
	}
	if a.DataType().ID() == arrow.NULL {
		return validity{bits: allZero(a.Len()), offset: 0}
	}
	return validity{bits: a.NullBitmapBytes(), offset: a.Data().Offset()}
}

func allZero(n int) []byte { return make([]byte, bitutil.BytesForBits(int64(n))) }

// valid reports whether row i is non-NULL.
func (v validity) valid(i int) bool {
	return v.bits == nil || bitutil.BitIsSet(v.bits, v.offset+i)
}

// andValidity returns the AND of the operands' validity bitmaps as a new
// buffer (nil when no operand has nulls) and its null count.
func andValidity(mem memory.Allocator, n int, arrs ...arrow.Array) (*memory.Buffer, int) {
	var out *memory.Buffer
	var bits []byte
	for _, a := range arrs {
		if a == nil || a.NullN() == 0 {
			continue
		}
		v := validityOf(a)
		if out == nil {
			out, bits = allocBitmap(mem, n)
			bitutil.CopyBitmap(v.bits, v.offset, n, bits, 0)
			continue
		}
		bitutil.BitmapAnd(bits, v.bits, 0, int64(v.offset), bits, 0, int64(n))
	}
	if out == nil {
		return nil, 0
	}
	nulls := n - bitutil.CountSetBits(bits, 0, n)
	if nulls == 0 {
		out.Release()
		return nil, 0
	}
	return out, nulls
}

// operand is an evaluated child: either an array or, for a Literal child, a
// scalar that kernels use directly without materializing a constant array.
type operand struct {
	arr arrow.Array // nil for a scalar
	lit plan.Literal
	// bound, when bounded, is at least the magnitude of every value slot
	// of a decimal arr (NULL slots included), each of which fits an
	// int64: known without a scan for the result of int64 arithmetic.
	bound   uint64
	bounded bool
}

func (o operand) isScalar() bool { return o.arr == nil }

// isNullScalar reports whether o is a NULL constant.
func (o operand) isNullScalar() bool {
	return o.arr == nil && (o.lit.Val == nil || o.lit.Typ.ID() == arrow.NULL)
}

// allNull reports whether every row of o is NULL.
func (o operand) allNull() bool {
	if o.arr == nil {
		return o.isNullScalar()
	}
	return o.arr.DataType().ID() == arrow.NULL || o.arr.NullN() == o.arr.Len()
}

func (o operand) release() {
	if o.arr != nil {
		o.arr.Release()
	}
}

// materialize returns o as an array of n rows; the caller releases it.
func (o operand) materialize(n int, mem memory.Allocator) (arrow.Array, error) {
	if o.arr != nil {
		o.arr.Retain()
		return o.arr, nil
	}
	return ConstArray(o.lit, n, mem)
}

// evalOperand evaluates e, keeping Literals as scalars and the magnitude
// bounds decimal arithmetic knows (EvalBound).
func evalOperand(e Expr, batch arrow.RecordBatch, mem memory.Allocator) (operand, error) {
	if l, ok := e.(*Literal); ok {
		return operand{lit: l.Value}, nil
	}
	a, bound, bounded, err := EvalBound(e, batch, mem)
	if err != nil {
		return operand{}, err
	}
	return operand{arr: a, bound: bound, bounded: bounded}, nil
}

// Bounded is implemented by expressions that know a bound of their value's
// magnitude on the current batch (see EvalBound).
type Bounded interface {
	MagnitudeBound() (uint64, bool)
}

// EvalBound is Eval that also reports, when bounded, a bound on the
// magnitude of every value slot of a decimal result, NULL slots included,
// each of which fits an int64. Decimal arithmetic computed in int64 knows
// it from its operands' bounds (|a+b| <= |a|+|b|, |a*b| <= |a|*|b|), so
// the operator that reads the result need not scan it for its range (q1:
// (1 - l_discount), l_extendedprice * that, and (1 + l_tax)).
func EvalBound(e Expr, batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, uint64, bool, error) {
	switch x := e.(type) {
	case *Binary:
		return x.evalBound(batch, mem)
	case Bounded:
		a, err := e.Eval(batch, mem)
		if err != nil {
			return nil, 0, false, err
		}
		bound, ok := x.MagnitudeBound()
		return a, bound, ok, nil
	}
	a, err := e.Eval(batch, mem)
	return a, 0, false, err
}

// evalOperands evaluates all exprs; on error everything evaluated so far is
// released.
func evalOperands(es []Expr, batch arrow.RecordBatch, mem memory.Allocator) ([]operand, error) {
	out := make([]operand, 0, len(es))
	for _, e := range es {
		o, err := evalOperand(e, batch, mem)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func releaseAll(os []operand) {
	for _, o := range os {
		o.release()
	}
}

func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// boolBits returns the value bitmap of a boolean array and its bit offset.
func boolBits(a arrow.Array) ([]byte, int) {
	d := a.Data()
	return d.Buffers()[1].Bytes(), d.Offset()
}

// numRows is the batch's row count as an int.
func numRows(batch arrow.RecordBatch) int { return int(batch.NumRows()) }

// releaseBuf releases b if it is not nil.
func releaseBuf(b *memory.Buffer) {
	if b != nil {
		b.Release()
	}
}
