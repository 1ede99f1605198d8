package physical

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
)

func TestNestedLoopJoin(t *testing.T) {
	leftRows, rightRows := jaJoinRows(23, 1), jaJoinRows(17, 2)
	types := []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti}
	lessThan := func(l, r []any) bool { return l[0] != nil && r[0] != nil && l[0].(int) < r[0].(int) }
	cross := func(l, r []any) bool { return true }
	for _, jt := range types {
		for _, filter := range []bool{false, true} {
			for _, batchSize := range []int{3, 8192} {
				for _, emptyLeft := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/filter=%v/batch=%d/emptyLeft=%v", jt, filter, batchSize, emptyLeft), func(t *testing.T) {
						mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
						defer mem.AssertSize(t, 0)
						rp := 2
						if jt.EmitsUnmatchedBuild() {
							rp = 1
						}
						lrows := leftRows
						if emptyLeft {
							lrows = nil
						}
						left := jaPartitioned(t, mem, jaLeftSchema, lrows, 2, 4)
						defer left.release()
						right := jaPartitioned(t, mem, jaRightSchema, rightRows, rp, 5)
						defer right.release()
						var f expr.Expr
						match := cross
						if filter {
							f, match = &jaCmp{L: 0, R: 3, Op: "<"}, lessThan
						}
						op, err := NewNestedLoopJoin(left, right, jt, f)
						if err != nil {
							t.Fatal(err)
						}
						tc := jaTC(mem, batchSize, 0)
						got := jaCollect(t, op, tc)
						want := jaRefJoin(jt, lrows, rightRows, match)
						if !slices.Equal(got, want) {
							t.Fatalf("got %d rows\n%s\nwant %d rows\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
						}
						if u := tc.Memory.Used(); u != 0 {
							t.Fatalf("memory pool still holds %d bytes", u)
						}
					})
				}
			}
		}
	}
}
