package expr

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestDecimalChainsAgainstBigInts evaluates chains of decimal arithmetic,
// where an inner operation computed in int64 hands its magnitude bound to
// the outer one, against exact big-integer arithmetic: at magnitudes where
// every step fits int64, where the inner step fits and the outer one does
// not (it must take the 128-bit path and still be exact), and where a
// result leaves 38 digits (an overflow error, not a wrong value). NULL
// rows hold whatever the kernels leave there and are ignored.
func TestDecimalChainsAgainstBigInts(t *testing.T) {
	dt := plan.Decimal(18, 2)
	cols := []string{"a", "b", "c"}
	ps := plan.Schema{}
	for i, name := range cols {
		ps = append(ps, plan.Column{ID: plan.ColumnID(i + 1), Name: name, Type: dt, Nullable: true})
	}
	ref := func(name string) plan.Expr { return ps[strings.Index("abc", name)].Ref() }
	chains := []plan.Expr{
		bin(plan.OpMul, bin(plan.OpMul, ref("a"), ref("b")), ref("c")),
		bin(plan.OpMul, ref("c"), bin(plan.OpAdd, ref("a"), ref("b"))),
		bin(plan.OpSub, bin(plan.OpSub, ref("a"), ref("b")), ref("c")),
		bin(plan.OpMul, bin(plan.OpMul, ref("a"), bin(plan.OpSub, dec("1", 1, 0), ref("b"))), bin(plan.OpAdd, dec("1", 1, 0), ref("c"))),
		bin(plan.OpMul, bin(plan.OpMul, bin(plan.OpMul, ref("a"), ref("b")), ref("c")), ref("a")),
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, digits := range []int{4, 9, 10, 17} {
		t.Run(fmt.Sprintf("%d digits", digits), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			const n = 1000
			limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil).Int64()
			vals := make([][]int64, 3)
			valid := make([][]bool, 3)
			arrs := make([]arrow.Array, 3)
			fields := make([]arrow.Field, 3)
			for c := range cols {
				b := array.NewDecimal128Builder(mem, dt.(*arrow.Decimal128Type))
				for range n {
					v := rng.Int64N(2*limit) - limit
					ok := rng.IntN(10) != 0
					vals[c], valid[c] = append(vals[c], v), append(valid[c], ok)
					if ok {
						b.Append(decimal128.FromI64(v))
					} else {
						b.AppendNull()
					}
				}
				arrs[c] = b.NewArray()
				b.Release()
				fields[c] = arrow.Field{Name: cols[c], Type: dt, Nullable: true}
			}
			batch := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, n)
			for _, a := range arrs {
				a.Release()
			}
			defer batch.Release()
			for _, chain := range chains {
				e, err := Compile(chain, ps)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.Eval(batch, mem)
				rt := chain.Type().(*arrow.Decimal128Type)
				maxv := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rt.Precision)), nil)
				overflow := false
				want := make([]*big.Int, n)
				for i := range n {
					if !valid[0][i] || !valid[1][i] || !valid[2][i] {
						continue
					}
					v, s := bigEval(chain, func(name string) *big.Int { return big.NewInt(vals[strings.Index("abc", name)][i]) })
					v = rescaleBig(v, s, rt.Scale)
					if new(big.Int).Abs(v).Cmp(maxv) >= 0 {
						overflow = true
					}
					want[i] = v
				}
				if overflow {
					if err == nil {
						got.Release()
						t.Fatalf("%s: a result beyond %d digits was not an error", chain, rt.Precision)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", chain, err)
				}
				d := got.(*array.Decimal128)
				for i := range n {
					if want[i] == nil {
						if d.IsValid(i) {
							t.Fatalf("%s row %d: %s, want NULL", chain, i, d.ValueStr(i))
						}
						continue
					}
					if g := d.Value(i).BigInt(); d.IsNull(i) || g.Cmp(want[i]) != 0 {
						t.Fatalf("%s row %d: %s, want %s (unscaled)", chain, i, g, want[i])
					}
				}
				got.Release()
			}
		})
	}
}

// bigEval computes e exactly: its unscaled value and scale.
func bigEval(e plan.Expr, col func(string) *big.Int) (*big.Int, int32) {
	switch x := e.(type) {
	case *plan.ColRef:
		return col(x.Name), x.Typ.(*arrow.Decimal128Type).Scale
	case *plan.Literal:
		return x.Val.(decimal128.Num).BigInt(), x.Typ.(*arrow.Decimal128Type).Scale
	case *plan.Binary:
		l, ls := bigEval(x.L, col)
		r, rs := bigEval(x.R, col)
		switch x.Op {
		case plan.OpMul:
			return new(big.Int).Mul(l, r), ls + rs
		case plan.OpAdd, plan.OpSub:
			s := max(ls, rs)
			l, r = rescaleBig(l, ls, s), rescaleBig(r, rs, s)
			if x.Op == plan.OpAdd {
				return new(big.Int).Add(l, r), s
			}
			return new(big.Int).Sub(l, r), s
		}
	}
	panic(fmt.Sprintf("bigEval: %s", e))
}

// rescaleBig brings v from scale from up to scale to.
func rescaleBig(v *big.Int, from, to int32) *big.Int {
	if to < from {
		panic("rescaleBig: scale down")
	}
	m := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(to-from)), nil)
	return new(big.Int).Mul(v, m)
}
