package physical

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// TestJoinOutputKeepsHashPartitioning runs every join type in both modes
// over sides hashed on their key into 3 partitions and checks the claim
// OutputPartitioning makes against the rows: every row of output
// partition p must hash to p on the claimed keys. It also checks which
// joins claim a hash partitioning at all (those whose every output row
// carries a probe row; see HashJoin.OutputPartitioning for why the build
// side's joins claim none), and that a projection keeping only
// one side's key of an inner join still claims it through the other.
func TestJoinOutputKeepsHashPartitioning(t *testing.T) {
	const parts = 3
	for _, c := range []struct {
		jt   JoinType
		mode JoinMode
		// hashed: the output claims a hash partitioning; on: its key
		// column in the output.
		hashed bool
		on     int
	}{
		{JoinInner, JoinPartitioned, true, 2},
		{JoinInner, JoinCollectLeft, true, 2},
		{JoinRight, JoinPartitioned, true, 2},
		{JoinRight, JoinCollectLeft, true, 2},
		{JoinRightSemi, JoinPartitioned, true, 0},
		{JoinRightSemi, JoinCollectLeft, true, 0},
		{JoinRightAnti, JoinPartitioned, true, 0},
		{JoinRightAnti, JoinCollectLeft, true, 0},
		{JoinLeft, JoinPartitioned, false, 0},
		{JoinLeftSemi, JoinPartitioned, false, 0},
		{JoinLeftAnti, JoinPartitioned, false, 0},
		{JoinFull, JoinPartitioned, false, 0},
	} {
		t.Run(c.jt.String()+"/"+c.mode.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			j, release := hashedKVJoin(t, mem, c.jt, c.mode, parts)
			defer release()
			var op Operator = j
			if c.jt == JoinInner && c.mode == JoinPartitioned {
				// Keep the left key only: the hash on the right key
				// holds on it, as the join matched them.
				op = NewProjection(j, []expr.Expr{col(1, "v", plan.Utf8), col(0, "k", plan.Int64)}, []string{"v", "k"})
				c.on = 1
			}
			out := op.OutputPartitioning()
			if got := out.Kind == PartHash; got != c.hashed {
				t.Fatalf("claims %s, want hashed = %v", out, c.hashed)
			}
			rows, err := collectConcurrently(t, op, newTestTC(mem, 16))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for p := range rows {
				n += len(rows[p])
			}
			if n == 0 {
				t.Fatal("no rows: the check would check nothing")
			}
			if !c.hashed {
				return
			}
			if len(out.Keys) != 1 || out.Keys[0].(*expr.Column).Index != c.on || out.Count != parts {
				t.Fatalf("claims %s, want the key at column %d in %d partitions", out, c.on, parts)
			}
			for p := range rows {
				for _, row := range rows[p] {
					if want := hashPartition(t, mem, row[c.on], parts); want != p {
						t.Fatalf("row %v in partition %d, but its key hashes to %d", row, p, want)
					}
				}
			}
		})
	}
}

// TestFullJoinMergedKeyKeepsHashPartitioning: a partitioned full join's
// output claims no hash partitioning, but a projection that merges its
// two key columns into one (coalesce, or the CASE that spells it) claims
// the hash on the merged column, and every output row, matched or not
// (the sides share some keys, hold others alone, and hold NULL keys),
// lies in the partition its merged key hashes to. A projection keeping
// one side's key alone claims nothing.
func TestFullJoinMergedKeyKeepsHashPartitioning(t *testing.T) {
	const parts = 3
	lk, rk := col(0, "k", plan.Int64), col(2, "k", plan.Int64)
	notNull := func(c *expr.Column) expr.Expr { return &expr.IsNull{X: c, Negated: true} }
	for _, c := range []struct {
		name   string
		merged expr.Expr // nil: the left key alone
	}{
		{"coalesce", &expr.Coalesce{Args: []expr.Expr{lk, rk}, Type: plan.Int64}},
		{"coalesce right first", &expr.Coalesce{Args: []expr.Expr{rk, lk}, Type: plan.Int64}},
		{"case", &expr.Case{Whens: []expr.When{{Cond: notNull(lk), Then: lk}}, Else: rk, Type: plan.Int64}},
		{"case right first", &expr.Case{Whens: []expr.When{{Cond: notNull(rk), Then: rk}}, Else: lk, Type: plan.Int64}},
		{"left key alone", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			j, release := hashedKVJoin(t, mem, JoinFull, JoinPartitioned, parts)
			defer release()
			if out := j.OutputPartitioning(); out.Kind == PartHash {
				t.Fatalf("the full join itself claims %s", out)
			}
			merged := c.merged
			if merged == nil {
				merged = lk
			}
			op := NewProjection(j, []expr.Expr{col(1, "lv", plan.Utf8), merged}, []string{"lv", "k"})
			out := op.OutputPartitioning()
			if c.merged == nil {
				if out.Kind == PartHash {
					t.Fatalf("the left key alone claims %s", out)
				}
				return
			}
			if out.Kind != PartHash || len(out.Keys) != 1 || out.Keys[0].(*expr.Column).Index != 1 || out.Count != parts {
				t.Fatalf("claims %s, want the merged key at column 1 in %d partitions", out, parts)
			}
			rows, err := collectConcurrently(t, op, newTestTC(mem, 16))
			if err != nil {
				t.Fatal(err)
			}
			n, nulls := 0, 0
			for p := range rows {
				for _, row := range rows[p] {
					n++
					if row[1] == nil {
						nulls++
					}
					if want := hashPartition(t, mem, row[1], parts); want != p {
						t.Fatalf("row %v in partition %d, but its merged key hashes to %d", row, p, want)
					}
				}
			}
			if n == 0 || nulls == 0 {
				t.Fatalf("%d rows, %d with a NULL key: the check would miss a case", n, nulls)
			}
		})
	}
}

// hashedKVJoin joins two kvSources on their key (0-22 on the left, 0-30
// on the right, NULL every 17th row), each side hashed on it into parts
// partitions; release frees the sources.
func hashedKVJoin(t *testing.T, mem memory.Allocator, jt JoinType, mode JoinMode, parts int) (*HashJoin, func()) {
	t.Helper()
	key := col(0, "k", plan.Int64)
	left, _ := kvSource(t, mem, 2, 120, 23, 7)
	right, _ := kvSource(t, mem, 2, 200, 31, 9)
	release := func() { left.release(); right.release() }
	hashed := func(src Operator) Operator {
		return NewRepartition(src, Partitioning{Kind: PartHash, Count: parts, Keys: []expr.Expr{key}})
	}
	j, err := NewHashJoin(hashed(left), hashed(right), jt, []expr.Expr{key}, []expr.Expr{key}, nil, false, mode)
	if err != nil {
		release()
		t.Fatal(err)
	}
	return j, release
}
