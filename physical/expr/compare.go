package expr

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// compare evaluates l op r (a comparison) into a boolean array. Neither
// operand is all-NULL. A scalar on the left is handled by flipping the
// operator so that kernels only see array⊕array and array⊕scalar.
func compare(op plan.BinaryOp, l, r operand, n int, mem memory.Allocator) (arrow.Array, error) {
	if l.isScalar() && !r.isScalar() {
		l, r = r, l
		op = op.Flip()
	}
	if l.isScalar() {
		// Both constant: materialize the left side; rare (unfolded constants).
		a, err := l.materialize(n, mem)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		l = operand{arr: a}
	}
	valid, nulls := andValidity(mem, n, l.arr, r.arr)
	buf, out := allocBitmap(mem, n)
	if err := compareInto(op, l, r, out); err != nil {
		buf.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	return makeArray(plan.Bool, n, valid, nulls, buf), nil
}

// cmpTable maps a three-way comparison result (-1, 0, 1) + 1 to the
// operator's truth value.
func cmpTable(op plan.BinaryOp) [3]bool {
	switch op {
	case plan.OpEq:
		return [3]bool{false, true, false}
	case plan.OpNotEq:
		return [3]bool{true, false, true}
	case plan.OpLt:
		return [3]bool{true, false, false}
	case plan.OpLtEq:
		return [3]bool{true, true, false}
	case plan.OpGt:
		return [3]bool{false, false, true}
	default: // OpGtEq
		return [3]bool{false, true, true}
	}
}

func compareInto(op plan.BinaryOp, l, r operand, out []byte) error {
	lt, rt := operandType(l), operandType(r)
	switch {
	case lt.ID() == arrow.DECIMAL128 || rt.ID() == arrow.DECIMAL128:
		return compareDecimal(op, l, r, out)
	case lt.ID() == arrow.FLOAT64 || rt.ID() == arrow.FLOAT64:
		a, _, err := f64View(l)
		if err != nil {
			return err
		}
		b, sb, err := f64View(r)
		if err != nil {
			return err
		}
		compareFloatsInto(op, a, b, sb, out)
	case (lt.ID() == arrow.INT32 || lt.ID() == arrow.DATE32) && (rt.ID() == arrow.INT32 || rt.ID() == arrow.DATE32):
		a, _, err := i32View(l)
		if err != nil {
			return err
		}
		b, sb, err := i32View(r)
		if err != nil {
			return err
		}
		cmpKernel(op, a, b, sb, out)
	case plan.IsInteger(lt) || plan.IsTemporal(lt):
		if lt.ID() == arrow.DATE32 && rt.ID() == arrow.TIMESTAMP || lt.ID() == arrow.TIMESTAMP && rt.ID() == arrow.DATE32 {
			return fmt.Errorf("internal: comparison of %s with %s needs a cast", plan.TypeName(lt), plan.TypeName(rt))
		}
		a, _, err := i64View(l)
		if err != nil {
			return err
		}
		b, sb, err := i64View(r)
		if err != nil {
			return err
		}
		cmpKernel(op, a, b, sb, out)
	case lt.ID() == arrow.STRING && rt.ID() == arrow.STRING:
		compareStrings(op, l, r, out)
	case lt.ID() == arrow.BOOL && rt.ID() == arrow.BOOL:
		compareBools(op, l, r, out)
	case lt.ID() == arrow.INTERVAL_MONTH_DAY_NANO && rt.ID() == arrow.INTERVAL_MONTH_DAY_NANO:
		compareIntervals(op, l, r, out)
	default:
		return fmt.Errorf("internal: cannot compare %s with %s", plan.TypeName(lt), plan.TypeName(rt))
	}
	return nil
}

// compareFloatsInto is cmpKernel for doubles in PostgreSQL's order
// (CompareFloats). Against a constant that is not NaN, IEEE comparison
// already gives the answer for NaN rows except for > and >=, which are
// computed as the negation of <= and < (NaN <= c is false, so NaN > c is
// true): one pass, as fast as before. Otherwise the IEEE answer is mended
// row by row where a NaN takes part (fixNaNs).
func compareFloatsInto(op plan.BinaryOp, a, b []float64, sb int, out []byte) {
	if sb == 0 && b[0] == b[0] && (op == plan.OpGt || op == plan.OpGtEq) {
		neg := plan.OpLtEq
		if op == plan.OpGtEq {
			neg = plan.OpLt
		}
		cmpKernel(neg, a, b, 0, out)
		n := len(a)
		for i := range out[:n>>3] {
			out[i] = ^out[i]
		}
		if r := n & 7; r != 0 {
			out[n>>3] ^= byte(1)<<r - 1
		}
		return
	}
	cmpKernel(op, a, b, sb, out)
	if sb == 0 && b[0] == b[0] {
		return // = <> < <=: NaN rows are false (true for <>) either way
	}
	fixNaNs(op, a, b, sb, out)
}

// fixNaNs redoes the rows of a float comparison where a NaN takes part:
// the IEEE comparison cmpKernel made is false for them (true for <>),
// where PostgreSQL's order (CompareFloats) has NaN equal to NaN and
// greater than every number.
func fixNaNs(op plan.BinaryOp, a, b []float64, sb int, out []byte) {
	if !hasNaN(a) && !hasNaN(b[:min(len(b), len(a)*sb+1)]) {
		return
	}
	t := cmpTable(op)
	for i, x := range a {
		y := b[i*sb]
		if x == x && y == y {
			continue
		}
		if t[CompareFloats(x, y)+1] {
			out[i>>3] |= 1 << (i & 7)
		} else {
			out[i>>3] &^= 1 << (i & 7)
		}
	}
}

// hasNaN reports whether a holds a NaN, in integer operations without a
// branch per value (a float comparison per value costs as much as the
// comparison being mended): x is NaN when its bits without the sign exceed
// infinity's, that is when adding nanCarry to them carries into the top bit.
func hasNaN(a []float64) bool {
	if len(a) == 0 {
		return false
	}
	const nanCarry = 0x7fffffffffffffff - 0x7ff0000000000000
	var acc uint64
	for _, x := range unsafe.Slice((*uint64)(unsafe.Pointer(&a[0])), len(a)) {
		acc |= (x & 0x7fffffffffffffff) + nanCarry
	}
	return acc>>63 != 0
}

// cmpKernel sets bit i of out when a[i] op b[i*sb]; out's bits past those
// of whole bytes must be clear. Each operator has its own loop so the
// comparison compiles to a branch-free SETcc, and eight comparisons are
// packed into a byte that is stored once (a read-modify-write per value
// cost about half the kernel's time).
func cmpKernel[T int32 | int64 | float64](op plan.BinaryOp, a, b []T, sb int, out []byte) {
	n := len(a)
	i := 0
	if sb == 0 {
		c := b[0]
		switch op {
		case plan.OpEq:
			for ; i+8 <= n; i += 8 {
				v := (*[8]T)(a[i:])
				out[i>>3] = b2u(v[0] == c) | b2u(v[1] == c)<<1 | b2u(v[2] == c)<<2 | b2u(v[3] == c)<<3 |
					b2u(v[4] == c)<<4 | b2u(v[5] == c)<<5 | b2u(v[6] == c)<<6 | b2u(v[7] == c)<<7
			}
			for ; i < n; i++ {
				out[i>>3] |= b2u(a[i] == c) << (i & 7)
			}
		case plan.OpNotEq:
			for ; i+8 <= n; i += 8 {
				v := (*[8]T)(a[i:])
				out[i>>3] = b2u(v[0] != c) | b2u(v[1] != c)<<1 | b2u(v[2] != c)<<2 | b2u(v[3] != c)<<3 |
					b2u(v[4] != c)<<4 | b2u(v[5] != c)<<5 | b2u(v[6] != c)<<6 | b2u(v[7] != c)<<7
			}
			for ; i < n; i++ {
				out[i>>3] |= b2u(a[i] != c) << (i & 7)
			}
		case plan.OpLt:
			for ; i+8 <= n; i += 8 {
				v := (*[8]T)(a[i:])
				out[i>>3] = b2u(v[0] < c) | b2u(v[1] < c)<<1 | b2u(v[2] < c)<<2 | b2u(v[3] < c)<<3 |
					b2u(v[4] < c)<<4 | b2u(v[5] < c)<<5 | b2u(v[6] < c)<<6 | b2u(v[7] < c)<<7
			}
			for ; i < n; i++ {
				out[i>>3] |= b2u(a[i] < c) << (i & 7)
			}
		case plan.OpLtEq:
			for ; i+8 <= n; i += 8 {
				v := (*[8]T)(a[i:])
				out[i>>3] = b2u(v[0] <= c) | b2u(v[1] <= c)<<1 | b2u(v[2] <= c)<<2 | b2u(v[3] <= c)<<3 |
					b2u(v[4] <= c)<<4 | b2u(v[5] <= c)<<5 | b2u(v[6] <= c)<<6 | b2u(v[7] <= c)<<7
			}
			for ; i < n; i++ {
				out[i>>3] |= b2u(a[i] <= c) << (i & 7)
			}
		case plan.OpGt:
			for ; i+8 <= n; i += 8 {
				v := (*[8]T)(a[i:])
				out[i>>3] = b2u(v[0] > c) | b2u(v[1] > c)<<1 | b2u(v[2] > c)<<2 | b2u(v[3] > c)<<3 |
					b2u(v[4] > c)<<4 | b2u(v[5] > c)<<5 | b2u(v[6] > c)<<6 | b2u(v[7] > c)<<7
			}
			for ; i < n; i++ {
				out[i>>3] |= b2u(a[i] > c) << (i & 7)
			}
		case plan.OpGtEq:
			for ; i+8 <= n; i += 8 {
				v := (*[8]T)(a[i:])
				out[i>>3] = b2u(v[0] >= c) | b2u(v[1] >= c)<<1 | b2u(v[2] >= c)<<2 | b2u(v[3] >= c)<<3 |
					b2u(v[4] >= c)<<4 | b2u(v[5] >= c)<<5 | b2u(v[6] >= c)<<6 | b2u(v[7] >= c)<<7
			}
			for ; i < n; i++ {
				out[i>>3] |= b2u(a[i] >= c) << (i & 7)
			}
		}
		return
	}
	b = b[:n]
	switch op {
	case plan.OpEq:
		for ; i+8 <= n; i += 8 {
			v, w := (*[8]T)(a[i:]), (*[8]T)(b[i:])
			out[i>>3] = b2u(v[0] == w[0]) | b2u(v[1] == w[1])<<1 | b2u(v[2] == w[2])<<2 | b2u(v[3] == w[3])<<3 |
				b2u(v[4] == w[4])<<4 | b2u(v[5] == w[5])<<5 | b2u(v[6] == w[6])<<6 | b2u(v[7] == w[7])<<7
		}
		for ; i < n; i++ {
			out[i>>3] |= b2u(a[i] == b[i]) << (i & 7)
		}
	case plan.OpNotEq:
		for ; i+8 <= n; i += 8 {
			v, w := (*[8]T)(a[i:]), (*[8]T)(b[i:])
			out[i>>3] = b2u(v[0] != w[0]) | b2u(v[1] != w[1])<<1 | b2u(v[2] != w[2])<<2 | b2u(v[3] != w[3])<<3 |
				b2u(v[4] != w[4])<<4 | b2u(v[5] != w[5])<<5 | b2u(v[6] != w[6])<<6 | b2u(v[7] != w[7])<<7
		}
		for ; i < n; i++ {
			out[i>>3] |= b2u(a[i] != b[i]) << (i & 7)
		}
	case plan.OpLt:
		for ; i+8 <= n; i += 8 {
			v, w := (*[8]T)(a[i:]), (*[8]T)(b[i:])
			out[i>>3] = b2u(v[0] < w[0]) | b2u(v[1] < w[1])<<1 | b2u(v[2] < w[2])<<2 | b2u(v[3] < w[3])<<3 |
				b2u(v[4] < w[4])<<4 | b2u(v[5] < w[5])<<5 | b2u(v[6] < w[6])<<6 | b2u(v[7] < w[7])<<7
		}
		for ; i < n; i++ {
			out[i>>3] |= b2u(a[i] < b[i]) << (i & 7)
		}
	case plan.OpLtEq:
		for ; i+8 <= n; i += 8 {
			v, w := (*[8]T)(a[i:]), (*[8]T)(b[i:])
			out[i>>3] = b2u(v[0] <= w[0]) | b2u(v[1] <= w[1])<<1 | b2u(v[2] <= w[2])<<2 | b2u(v[3] <= w[3])<<3 |
				b2u(v[4] <= w[4])<<4 | b2u(v[5] <= w[5])<<5 | b2u(v[6] <= w[6])<<6 | b2u(v[7] <= w[7])<<7
		}
		for ; i < n; i++ {
			out[i>>3] |= b2u(a[i] <= b[i]) << (i & 7)
		}
	case plan.OpGt:
		for ; i+8 <= n; i += 8 {
			v, w := (*[8]T)(a[i:]), (*[8]T)(b[i:])
			out[i>>3] = b2u(v[0] > w[0]) | b2u(v[1] > w[1])<<1 | b2u(v[2] > w[2])<<2 | b2u(v[3] > w[3])<<3 |
				b2u(v[4] > w[4])<<4 | b2u(v[5] > w[5])<<5 | b2u(v[6] > w[6])<<6 | b2u(v[7] > w[7])<<7
		}
		for ; i < n; i++ {
			out[i>>3] |= b2u(a[i] > b[i]) << (i & 7)
		}
	case plan.OpGtEq:
		for ; i+8 <= n; i += 8 {
			v, w := (*[8]T)(a[i:]), (*[8]T)(b[i:])
			out[i>>3] = b2u(v[0] >= w[0]) | b2u(v[1] >= w[1])<<1 | b2u(v[2] >= w[2])<<2 | b2u(v[3] >= w[3])<<3 |
				b2u(v[4] >= w[4])<<4 | b2u(v[5] >= w[5])<<5 | b2u(v[6] >= w[6])<<6 | b2u(v[7] >= w[7])<<7
		}
		for ; i < n; i++ {
			out[i>>3] |= b2u(a[i] >= b[i]) << (i & 7)
		}
	}
}

// b2u converts a bool to 0/1 without a branch.
func b2u(b bool) byte {
	var x byte
	if b {
		x = 1
	}
	return x
}

// cmp128 is a three-way comparison of two decimals at the same scale.
func cmp128(a, b decimal128.Num) int {
	ah, bh := a.HighBits(), b.HighBits()
	if ah != bh {
		return cmp.Compare(ah, bh)
	}
	return cmp.Compare(a.LowBits(), b.LowBits())
}

func compareDecimal(op plan.BinaryOp, l, r operand, out []byte) error {
	a, _, as, err := decViewAny(l)
	if err != nil {
		return err
	}
	b, sb, bs, err := decViewAny(r)
	if err != nil {
		return err
	}
	s := max(as, bs)
	if a, err = rescaleAll(a, as, s); err != nil {
		return err
	}
	if b, err = rescaleAll(b, bs, s); err != nil {
		return err
	}
	tbl := cmpTable(op)
	if sb == 0 {
		c := b[0]
		// Most decimals in practice fit in 64 bits. Against a constant
		// strictly inside the int64 range, a value outside it compares like
		// the nearest int64 bound, so clamping to int64 keeps every
		// comparison's answer and lets the integer kernel do the work.
		if fitsInt64(c) && int64(c.LowBits()) != math.MinInt64 && int64(c.LowBits()) != math.MaxInt64 {
			// In chunks through a buffer that stays in cache (chunks are
			// whole bytes of out).
			var buf [512]int64
			cs := []int64{int64(c.LowBits())}
			for i := 0; i < len(a); i += len(buf) {
				chunk := a[i:min(i+len(buf), len(a))]
				cmpKernel(op, clampInt64(buf[:len(chunk)], chunk), cs, 0, out[i>>3:])
			}
			return nil
		}
		for i, x := range a {
			out[i>>3] |= b2u(tbl[cmp128(x, c)+1]) << (i & 7)
		}
		return nil
	}
	for i, x := range a {
		out[i>>3] |= b2u(tbl[cmp128(x, b[i])+1]) << (i & 7)
	}
	return nil
}

// decViewAny is decView that also accepts nothing else; kept separate so
// comparisons report their own error.
func decViewAny(o operand) ([]decimal128.Num, int, int32, error) {
	v, s, sc, err := decView(o)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("comparison: %w", err)
	}
	return v, s, sc, nil
}

// rescaleAll returns vs at scale `to` (a copy when the scale changes).
func rescaleAll(vs []decimal128.Num, from, to int32) ([]decimal128.Num, error) {
	if from == to {
		return vs, nil
	}
	out := make([]decimal128.Num, len(vs))
	for i, x := range vs {
		y, ok := rescale(x, from, to)
		if !ok {
			// Values this large cannot equal anything at the wider scale
			// within 38 digits; saturate so the ordering stays right.
			if x.Sign() < 0 {
				y = decimal128.GetMaxValue(38).Negate()
			} else {
				y = decimal128.GetMaxValue(38)
			}
		}
		out[i] = y
	}
	return out, nil
}

func compareStrings(op plan.BinaryOp, l, r operand, out []byte) {
	a := l.arr.(*array.String)
	offs := a.ValueOffsets()
	data := fullStringData(a)
	n := a.Len()
	if r.isScalar() {
		c := []byte(r.lit.Val.(string))
		if op == plan.OpEq || op == plan.OpNotEq {
			want := op == plan.OpEq
			for i := 0; i < n; i++ {
				v := data[offs[i]:offs[i+1]]
				eq := len(v) == len(c) && bytes.Equal(v, c)
				out[i>>3] |= b2u(eq == want) << (i & 7)
			}
			return
		}
		tbl := cmpTable(op)
		for i := 0; i < n; i++ {
			out[i>>3] |= b2u(tbl[bytes.Compare(data[offs[i]:offs[i+1]], c)+1]) << (i & 7)
		}
		return
	}
	b := r.arr.(*array.String)
	boffs := b.ValueOffsets()
	bdata := fullStringData(b)
	tbl := cmpTable(op)
	for i := 0; i < n; i++ {
		c := bytes.Compare(data[offs[i]:offs[i+1]], bdata[boffs[i]:boffs[i+1]])
		out[i>>3] |= b2u(tbl[c+1]) << (i & 7)
	}
}

// fullStringData returns the whole data buffer of a string array, so that
// ValueOffsets (absolute positions) index it directly even for slices.
func fullStringData(a *array.String) []byte {
	buf := a.Data().Buffers()[2]
	if buf == nil {
		return nil
	}
	return buf.Bytes()
}

func compareBools(op plan.BinaryOp, l, r operand, out []byte) {
	bits, off := boolBits(l.arr)
	n := l.arr.Len()
	tbl := cmpTable(op)
	if r.isScalar() {
		c := b2i(r.lit.Val.(bool))
		for i := 0; i < n; i++ {
			x := b2i(bitutil.BitIsSet(bits, off+i))
			out[i>>3] |= b2u(tbl[cmp.Compare(x, c)+1]) << (i & 7)
		}
		return
	}
	rbits, roff := boolBits(r.arr)
	for i := 0; i < n; i++ {
		x := b2i(bitutil.BitIsSet(bits, off+i))
		y := b2i(bitutil.BitIsSet(rbits, roff+i))
		out[i>>3] |= b2u(tbl[cmp.Compare(x, y)+1]) << (i & 7)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// clampInt64 writes the decimals a into out (of the same length) as int64,
// those outside the int64 range replaced by the bound on their side, and
// returns out.
func clampInt64(out []int64, a []decimal128.Num) []int64 {
	out = out[:len(a)]
	for i, x := range a {
		v := int64(x.LowBits())
		if h := x.HighBits(); h != v>>63 {
			v = math.MaxInt64
			if h < 0 {
				v = math.MinInt64
			}
		}
		out[i] = v
	}
	return out
}
