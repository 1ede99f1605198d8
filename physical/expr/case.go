package expr

import (
	"context"
	"fmt"
	mathbits "math/bits"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// When is one WHEN Cond THEN Then arm.
type When struct{ Cond, Then Expr }

// Case is a searched CASE: the first arm whose condition is true wins; a
// NULL condition is not taken; no ELSE means NULL.
type Case struct {
	Whens []When
	Else  Expr // may be nil
	Type  arrow.DataType
}

// DataType implements Expr.
func (e *Case) DataType() arrow.DataType { return e.Type }

func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, w := range e.Whens {
		b.WriteString(" WHEN " + w.Cond.String() + " THEN " + w.Then.String())
	}
	if e.Else != nil {
		b.WriteString(" ELSE " + e.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}

// Eval implements Expr.
func (e *Case) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	choice := make([]int32, n)
	for i := range choice {
		choice[i] = -1
	}
	nb := int(bitutil.BytesForBits(int64(n)))
	remaining := make([]byte, nb)
	for i := range remaining {
		remaining[i] = 0xff
	}
	// taken[k] is the bitmap of rows arm k decides.
	arms := len(e.Whens)
	if e.Else != nil {
		arms++
	}
	taken := make([][]byte, arms)
	for k, w := range e.Whens {
		c, err := evalOperand(w.Cond, batch, mem)
		if err != nil {
			return nil, err
		}
		p, err := planesOf(c, n)
		c.release()
		if err != nil {
			return nil, err
		}
		t := p.t
		for i := range t {
			t[i] &= remaining[i]
			remaining[i] &^= t[i]
		}
		taken[k] = t
	}
	if e.Else != nil {
		taken[arms-1] = remaining
	}
	if len(e.Whens) == 1 && (e.Else == nil || isNullLiteral(e.Else)) {
		// CASE WHEN c THEN x [ELSE NULL] END, as in sum(CASE WHEN ...):
		// x itself, with the rows c does not take masked out.
		if out, ok, err := maskBranch(e.Whens[0].Then, e.Type, batch, taken[0], n, mem); ok || err != nil {
			return out, err
		}
	}
	for k, t := range taken {
		forEachSetBit(t, n, func(i int) { choice[i] = int32(k) })
	}
	branches := make([]Expr, 0, arms)
	for _, w := range e.Whens {
		branches = append(branches, w.Then)
	}
	if e.Else != nil {
		branches = append(branches, e.Else)
	}
	srcs := make([]arrow.Array, arms)
	compact := make([]bool, arms)
	defer releaseArrays(srcs)
	for k, br := range branches {
		cnt := bitutil.CountSetBits(taken[k], 0, n)
		if cnt == 0 {
			continue
		}
		a, err := evalBranch(br, batch, mem)
		if err != nil && cnt < n {
			// The error may come from rows this arm does not decide
			// (CASE WHEN x <> 0 THEN 1/x): evaluate on its rows only.
			a, err = evalOnRows(br, batch, taken[k], mem)
			compact[k] = err == nil
		}
		if err != nil {
			return nil, err
		}
		srcs[k] = a
	}
	out, err := choose(e.Type, choice, srcs, compact, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	return out, nil
}

// maskBranch evaluates br over the whole batch and returns it with the rows
// not set in take made NULL, sharing br's value buffers. ok is false when
// that is not possible (br fails on some row, or is of another type, or is
// a slice), and the caller chooses row by row instead.
func maskBranch(br Expr, dt arrow.DataType, batch arrow.RecordBatch, take []byte, n int, mem memory.Allocator) (out arrow.Array, ok bool, err error) {
	if bitutil.CountSetBits(take, 0, n) == 0 {
		return nil, false, nil
	}
	a, err := evalBranch(br, batch, mem)
	if err != nil {
		return nil, false, nil
	}
	defer a.Release()
	d := a.Data()
	if !arrow.TypeEqual(a.DataType(), dt) || d.Offset() != 0 || a.Len() != n {
		return nil, false, nil
	}
	vbuf, valid := allocBitmap(mem, n)
	copy(valid, take)
	if a.NullN() > 0 {
		bitutil.BitmapAnd(valid, a.NullBitmapBytes(), 0, 0, valid, 0, int64(n))
	}
	nulls := n - bitutil.CountSetBits(valid, 0, n)
	bufs := slices.Clone(d.Buffers())
	bufs[0] = vbuf
	md := array.NewData(dt, n, bufs, d.Children(), nulls, 0)
	vbuf.Release()
	defer md.Release()
	return array.MakeFromData(md), true, nil
}

// isNullLiteral reports whether e is the constant NULL.
func isNullLiteral(e Expr) bool {
	l, ok := e.(*Literal)
	return ok && l.Value.Val == nil
}

// forEachSetBit calls f with the index of every set bit among the first n
// of bits, skipping zero bytes whole.
func forEachSetBit(bits []byte, n int, f func(int)) {
	for b, v := range bits[:bitutil.BytesForBits(int64(n))] {
		for v != 0 {
			i := b*8 + mathbits.TrailingZeros8(v)
			if i >= n {
				return
			}
			f(i)
			v &= v - 1
		}
	}
}

// evalBranch evaluates a result expression as an array.
func evalBranch(br Expr, batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	return br.Eval(batch, mem)
}

// evalOnRows evaluates e over only the rows set in sel, returning a compact
// array with one row per selected row.
func evalOnRows(e Expr, batch arrow.RecordBatch, sel []byte, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	buf, bits := allocBitmap(mem, n)
	copy(bits, sel)
	mask := makeArray(plan.Bool, n, nil, 0, buf)
	defer mask.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	var idx []int32
	cols := make([]arrow.Array, batch.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c, col := range batch.Columns() {
		var err error
		if l, ok := col.(*array.List); ok {
			if idx == nil {
				idx = make([]int32, 0, n)
				for i := range n {
					if bitutil.BitIsSet(sel, i) {
						idx = append(idx, int32(i))
					}
				}
			}
			cols[c], err = TakeList(mem, l, idx)
		} else {
			cols[c], err = compute.FilterArray(ctx, col, mask, *compute.DefaultFilterOptions())
		}
		if err != nil {
			return nil, fmt.Errorf("filtering rows for %s: %w", e, err)
		}
	}
	rows := int64(bitutil.CountSetBits(sel, 0, n))
	sub := array.NewRecordBatch(batch.Schema(), cols, rows)
	defer sub.Release()
	return e.Eval(sub, mem)
}

// Coalesce returns, per row, the first non-NULL argument.
type Coalesce struct {
	Args []Expr
	Type arrow.DataType
}

// DataType implements Expr.
func (e *Coalesce) DataType() arrow.DataType { return e.Type }

func (e *Coalesce) String() string { return "coalesce(" + joinExprs(e.Args) + ")" }

// Eval implements Expr. Arguments after the point where every row is
// filled are not evaluated.
func (e *Coalesce) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	choice := make([]int32, n)
	for i := range choice {
		choice[i] = -1
	}
	srcs := make([]arrow.Array, len(e.Args))
	defer releaseArrays(srcs)
	left := n
	for k, arg := range e.Args {
		if left == 0 {
			break
		}
		a, err := arg.Eval(batch, mem)
		if err != nil {
			return nil, err
		}
		srcs[k] = a
		v := validityOf(a)
		if a.DataType().ID() == arrow.NULL {
			continue
		}
		for i := 0; i < n; i++ {
			if choice[i] < 0 && v.valid(i) {
				choice[i] = int32(k)
				left--
			}
		}
	}
	out, err := choose(e.Type, choice, srcs, make([]bool, len(srcs)), mem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	return out, nil
}

// NullIf returns NULL where A = B, else A.
type NullIf struct {
	A, B Expr
	Type arrow.DataType
}

// DataType implements Expr.
func (e *NullIf) DataType() arrow.DataType { return e.Type }

func (e *NullIf) String() string { return "nullif(" + e.A.String() + ", " + e.B.String() + ")" }

// Eval implements Expr.
func (e *NullIf) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	a, err := e.A.Eval(batch, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	eq, err := (&Binary{Op: plan.OpEq, L: e.A, R: e.B, Type: plan.Bool}).Eval(batch, mem)
	if err != nil {
		return nil, err
	}
	defer eq.Release()
	p, err := planesOf(operand{arr: eq}, n)
	if err != nil {
		return nil, err
	}
	choice := make([]int32, n)
	for i := range choice {
		if bitutil.BitIsSet(p.t, i) {
			choice[i] = -1
		}
	}
	out, err := choose(e.Type, choice, []arrow.Array{a}, []bool{false}, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	return out, nil
}

// InList is X [NOT] IN (List...), three-valued: with no match, a NULL X or
// a NULL item makes the result NULL.
type InList struct {
	X       Expr
	List    []Expr
	Negated bool

	set inSet
}

// DataType implements Expr.
func (e *InList) DataType() arrow.DataType { return plan.Bool }

func (e *InList) String() string {
	not := ""
	if e.Negated {
		not = "NOT "
	}
	return e.X.String() + " " + not + "IN (" + joinExprs(e.List) + ")"
}

// Eval implements Expr.
func (e *InList) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	x, err := evalOperand(e.X, batch, mem)
	if err != nil {
		return nil, err
	}
	defer x.release()
	if e.set.build(e.X, e.List); e.set.ok {
		acc, err := e.set.planes(x, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e, err)
		}
		if e.Negated {
			acc.t, acc.f = acc.f, acc.t
		}
		return planesArray(acc, n, mem), nil
	}
	nb := int(bitutil.BytesForBits(int64(n)))
	acc := boolPlanes{t: make([]byte, nb), f: make([]byte, nb)}
	for i := range acc.f {
		acc.f[i] = 0xff
	}
	for _, item := range e.List {
		it, err := evalOperand(item, batch, mem)
		if err != nil {
			return nil, err
		}
		var p boolPlanes
		if x.allNull() || it.allNull() {
			p = boolPlanes{t: make([]byte, nb), f: make([]byte, nb)}
		} else {
			eq, err := compare(plan.OpEq, x, it, n, mem)
			if err != nil {
				it.release()
				return nil, fmt.Errorf("%s: %w", e, err)
			}
			p, err = planesOf(operand{arr: eq}, n)
			eq.Release()
			if err != nil {
				it.release()
				return nil, err
			}
		}
		it.release()
		for i := range acc.t {
			acc.t[i] |= p.t[i]
			acc.f[i] &= p.f[i]
		}
	}
	if e.Negated {
		acc.t, acc.f = acc.f, acc.t
	}
	return planesArray(acc, n, mem), nil
}

func joinExprs(es []Expr) string {
	parts := make([]string, len(es))
	for i, x := range es {
		parts[i] = x.String()
	}
	return strings.Join(parts, ", ")
}
