package expr

import (
	"math"
	"math/rand/v2"
	"testing"

	"sluice/plan"
)

// TestCompareFloatsInto checks the comparison kernel for doubles against
// CompareFloats, PostgreSQL's order, for every operator, a constant (NaN
// or not) and a column on the right, lengths that end inside a byte, and
// values with NaN, infinities and both zeros.
func TestCompareFloatsInto(t *testing.T) {
	pool := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 0.5, 2}
	ops := []plan.BinaryOp{plan.OpEq, plan.OpNotEq, plan.OpLt, plan.OpLtEq, plan.OpGt, plan.OpGtEq}
	for _, n := range []int{1, 7, 8, 13, 64, 101} {
		a := make([]float64, n)
		b := make([]float64, n)
		for i := range a {
			a[i], b[i] = pool[rand.IntN(len(pool))], pool[rand.IntN(len(pool))]
		}
		for _, op := range ops {
			want := cmpTable(op)
			for _, c := range append([][]float64{b}, [][]float64{{math.NaN()}, {0.5}, {math.Inf(1)}}...) {
				sb := 1
				if len(c) == 1 && n > 1 {
					sb = 0
				}
				out := make([]byte, (n+7)/8)
				compareFloatsInto(op, a, c, sb, out)
				for i := range a {
					y := c[i*sb]
					got := out[i>>3]>>(i&7)&1 == 1
					if got != want[CompareFloats(a[i], y)+1] {
						t.Fatalf("n=%d %v %v %v: got %v", n, a[i], op, y, got)
					}
				}
				if r := n & 7; r != 0 && out[n>>3]>>r != 0 {
					t.Fatalf("n=%d %v: bits past the end set: %08b", n, op, out[n>>3])
				}
			}
		}
	}
}
