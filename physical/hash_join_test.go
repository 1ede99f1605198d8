package physical

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

var (
	jaLeftSchema  = jaSchema("lk1", plan.Int64, "lk2", plan.Utf8, "lv", plan.Int64)
	jaRightSchema = jaSchema("rk1", plan.Int64, "rk2", plan.Utf8, "rv", plan.Int64)
)

// jaJoinRows generates n rows (k1, k2, v) with duplicate keys and NULLs.
func jaJoinRows(n, seed int) [][]any {
	var rows [][]any
	for i := 0; i < n; i++ {
		x := (i*7 + seed*13) % 11
		var k1, k2, v any = x % 6, fmt.Sprint("s", x%3), (i + seed) % 4
		if (i+seed)%9 == 4 {
			k1 = nil
		}
		if (i+seed)%10 == 7 {
			k2 = nil
		}
		if (i+seed)%8 == 5 {
			v = nil
		}
		rows = append(rows, []any{k1, k2, v})
	}
	return rows
}

// jaPartitioned splits rows into parts partitions by k1 (NULL → 0) and
// batches of at most batch rows.
func jaPartitioned(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rows [][]any, parts, batch int) *jaSource {
	byPart := make([][][]any, parts)
	for _, r := range rows {
		p := 0
		if r[0] != nil {
			p = r[0].(int) % parts
		}
		byPart[p] = append(byPart[p], r)
	}
	src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, parts)}
	for p, rs := range byPart {
		for s := 0; s < len(rs); s += batch {
			src.parts[p] = append(src.parts[p], jaBatch(t, mem, schema, rs[s:min(len(rs), s+batch)]))
		}
	}
	return src
}

func jaRowString(vals ...[]any) string {
	var ss []string
	for _, vs := range vals {
		for _, v := range vs {
			if v == nil {
				ss = append(ss, "NULL")
			} else {
				ss = append(ss, fmt.Sprint(v))
			}
		}
	}
	return strings.Join(ss, "|")
}

// jaRefJoin is the reference nested-loop implementation of every join type.
func jaRefJoin(jt JoinType, left, right [][]any, match func(l, r []any) bool) []string {
	var out []string
	lm := make([]bool, len(left))
	rm := make([]bool, len(right))
	nulls := []any{nil, nil, nil}
	for i, l := range left {
		for j, r := range right {
			if match(l, r) {
				lm[i], rm[j] = true, true
				if jt == JoinInner || jt == JoinLeft || jt == JoinRight || jt == JoinFull {
					out = append(out, jaRowString(l, r))
				}
			}
		}
	}
	for i, l := range left {
		switch {
		case (jt == JoinLeft || jt == JoinFull) && !lm[i]:
			out = append(out, jaRowString(l, nulls))
		case jt == JoinLeftSemi && lm[i], jt == JoinLeftAnti && !lm[i]:
			out = append(out, jaRowString(l))
		}
	}
	for j, r := range right {
		switch {
		case (jt == JoinRight || jt == JoinFull) && !rm[j]:
			out = append(out, jaRowString(nulls, r))
		case jt == JoinRightSemi && rm[j], jt == JoinRightAnti && !rm[j]:
			out = append(out, jaRowString(r))
		}
	}
	slices.Sort(out)
	return out
}

func jaKeyMatch(multi, filter bool) func(l, r []any) bool {
	return func(l, r []any) bool {
		if l[0] == nil || r[0] == nil || l[0] != r[0] {
			return false
		}
		if multi && (l[1] == nil || r[1] == nil || l[1] != r[1]) {
			return false
		}
		if filter && (l[2] == nil || r[2] == nil || l[2] == r[2]) {
			return false
		}
		return true
	}
}

func TestHashJoin(t *testing.T) {
	leftRows, rightRows := jaJoinRows(40, 1), jaJoinRows(50, 2)
	types := []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti}
	for _, mode := range []JoinMode{JoinCollectLeft, JoinPartitioned} {
		for _, jt := range types {
			for _, multi := range []bool{false, true} {
				for _, filter := range []bool{false, true} {
					for _, batchSize := range []int{4, 8192, 0} {
						name := fmt.Sprintf("%s/%s/multi=%v/filter=%v/batch=%d", mode, jt, multi, filter, batchSize)
						leftRows := leftRows
						if batchSize == 0 {
							// Default batch size; also cover an empty build side.
							leftRows = nil
						}
						t.Run(name, func(t *testing.T) {
							mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
							defer mem.AssertSize(t, 0)
							lp, rp := 3, 2
							if mode == JoinPartitioned {
								lp = 2
							} else if jt.EmitsUnmatchedBuild() {
								rp = 1
							}
							left := jaPartitioned(t, mem, jaLeftSchema, leftRows, lp, 5)
							defer left.release()
							right := jaPartitioned(t, mem, jaRightSchema, rightRows, rp, 7)
							defer right.release()
							lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
							rk := []expr.Expr{jaCol(0, "rk1", plan.Int64)}
							if multi {
								lk = append(lk, jaCol(1, "lk2", plan.Utf8))
								rk = append(rk, jaCol(1, "rk2", plan.Utf8))
							}
							var f expr.Expr
							if filter {
								f = &jaCmp{L: 2, R: 5, Op: "<>"}
							}
							op, err := NewHashJoin(left, right, jt, lk, rk, f, false, mode)
							if err != nil {
								t.Fatal(err)
							}
							tc := jaTC(mem, batchSize, 0)
							got := jaCollect(t, op, tc)
							want := jaRefJoin(jt, leftRows, rightRows, jaKeyMatch(multi, filter))
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
}

func TestHashJoinNullAware(t *testing.T) {
	schema := jaSchema("k", plan.Int64)
	cases := []struct {
		name        string
		build, prob [][]any
		want        []string
	}{
		{"build has NULL", [][]any{{1}, {nil}}, [][]any{{2}, {3}, {nil}}, nil},
		{"build empty", nil, [][]any{{1}, {nil}, {2}}, []string{"1", "2", "NULL"}},
		{"plain", [][]any{{1}, {1}, {3}}, [][]any{{1}, {2}, {nil}, {3}, {4}, {2}}, []string{"2", "2", "4"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			build := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{nil, nil}}
			if c.build != nil {
				build.parts[1] = []arrow.RecordBatch{jaBatch(t, mem, schema, c.build)}
			}
			defer build.release()
			probe := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{{jaBatch(t, mem, schema, c.prob)}, nil}}
			defer probe.release()
			k := []expr.Expr{jaCol(0, "k", plan.Int64)}
			op, err := NewHashJoin(build, probe, JoinRightAnti, k, k, nil, true, JoinCollectLeft)
			if err != nil {
				t.Fatal(err)
			}
			got := jaCollect(t, op, jaTC(mem, 2, 0))
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestHashJoinConstructorErrors(t *testing.T) {
	l1 := &jaSource{schema: jaLeftSchema, parts: make([][]arrow.RecordBatch, 1)}
	l2 := &jaSource{schema: jaLeftSchema, parts: make([][]arrow.RecordBatch, 2)}
	r2 := &jaSource{schema: jaRightSchema, parts: make([][]arrow.RecordBatch, 2)}
	r3 := &jaSource{schema: jaRightSchema, parts: make([][]arrow.RecordBatch, 3)}
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	ks := []expr.Expr{jaCol(1, "k", plan.Utf8)}
	cases := []struct {
		name        string
		left, right Operator
		jt          JoinType
		lk, rk      []expr.Expr
		nullAware   bool
		mode        JoinMode
	}{
		{"left join collect multi-probe", l1, r2, JoinLeft, k, k, false, JoinCollectLeft},
		{"left anti collect multi-probe", l1, r2, JoinLeftAnti, k, k, false, JoinCollectLeft},
		{"partition mismatch", l2, r3, JoinInner, k, k, false, JoinPartitioned},
		{"key type mismatch", l1, r2, JoinInner, k, ks, false, JoinCollectLeft},
		{"no keys", l1, r2, JoinInner, nil, nil, false, JoinCollectLeft},
		{"null-aware inner", l1, r2, JoinInner, k, k, true, JoinCollectLeft},
		{"null-aware partitioned", l2, r2, JoinRightAnti, k, k, true, JoinPartitioned},
	}
	for _, c := range cases {
		if _, err := NewHashJoin(c.left, c.right, c.jt, c.lk, c.rk, nil, c.nullAware, c.mode); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, err := NewNestedLoopJoin(l1, r2, JoinFull, nil); err == nil {
		t.Errorf("nested loop full join with 2 probe partitions: no error")
	}
}

func TestHashJoinMemoryLimit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	left := jaPartitioned(t, mem, jaLeftSchema, jaJoinRows(2000, 1), 2, 100)
	defer left.release()
	right := jaPartitioned(t, mem, jaRightSchema, jaJoinRows(100, 2), 2, 100)
	defer right.release()
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	for _, mode := range []JoinMode{JoinCollectLeft, JoinPartitioned} {
		op, err := NewHashJoin(left, right, JoinInner, k, k, nil, false, mode)
		if err != nil {
			t.Fatal(err)
		}
		tc := jaTC(mem, 8192, 4096)
		if _, err := jaRun(t, op, tc); !errors.Is(err, mempool.ErrResourcesExhausted) {
			t.Fatalf("%s: err = %v, want mempool.ErrResourcesExhausted", mode, err)
		}
		if u := tc.Memory.Used(); u != 0 {
			t.Fatalf("%s: memory pool still holds %d bytes", mode, u)
		}
	}
}

func TestHashJoinSharedBuild(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	left := jaPartitioned(t, mem, jaLeftSchema, jaJoinRows(30, 1), 3, 4)
	defer left.release()
	right := jaPartitioned(t, mem, jaRightSchema, jaJoinRows(30, 2), 4, 4)
	defer right.release()
	counting := &jaCountingOp{Operator: left}
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	op, err := NewHashJoin(counting, right, JoinInner, k, k, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	tc := jaTC(mem, 8192, 0)
	got := jaCollect(t, op, tc)
	want := jaRefJoin(JoinInner, jaJoinRows(30, 1), jaJoinRows(30, 2), jaKeyMatch(false, false))
	if !slices.Equal(got, want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	if n := counting.executions.Load(); n != 3 {
		t.Fatalf("build side partitions executed %d times, want 3 (one shared build)", n)
	}
	if len(op.shared.builds) != 0 {
		t.Fatalf("shared build state not freed")
	}
}

func TestHashJoinNarrowIntKeys(t *testing.T) {
	// int32 and date32 keys take the integer-key index through a widening
	// copy; the result must match the int64 reference.
	for _, typ := range []arrow.DataType{plan.Int32, plan.Date32} {
		t.Run(typ.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ls := jaSchema("lk1", typ, "lk2", plan.Utf8, "lv", plan.Int64)
			rs := jaSchema("rk1", typ, "rk2", plan.Utf8, "rv", plan.Int64)
			leftRows, rightRows := jaJoinRows(30, 3), jaJoinRows(40, 4)
			left := jaPartitioned(t, mem, ls, leftRows, 2, 4)
			defer left.release()
			right := jaPartitioned(t, mem, rs, rightRows, 1, 6)
			defer right.release()
			for _, jt := range []JoinType{JoinInner, JoinFull, JoinRightAnti} {
				op, err := NewHashJoin(left, right, jt, []expr.Expr{jaCol(0, "lk1", typ)}, []expr.Expr{jaCol(0, "rk1", typ)}, nil, false, JoinCollectLeft)
				if err != nil {
					t.Fatal(err)
				}
				got := jaCollect(t, op, jaTC(mem, 5, 0))
				want := jaRefJoin(jt, leftRows, rightRows, jaKeyMatch(false, false))
				if typ.ID() == arrow.DATE32 {
					// Dates render as dates: compare row counts only.
					if len(got) != len(want) {
						t.Fatalf("%s: got %d rows, want %d", jt, len(got), len(want))
					}
					continue
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: got %v, want %v", jt, got, want)
				}
			}
		})
	}
}

func TestJoinAggCanceled(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	left := jaPartitioned(t, mem, jaLeftSchema, jaJoinRows(50, 1), 2, 4)
	defer left.release()
	right := jaPartitioned(t, mem, jaRightSchema, jaJoinRows(50, 2), 2, 4)
	defer right.release()
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	hj, err := NewHashJoin(left, right, JoinInner, k, k, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	nlj, err := NewNestedLoopJoin(left, right, JoinInner, nil)
	if err != nil {
		t.Fatal(err)
	}
	agg, err := NewHashAggregate(left, AggSingle, k, []string{"k"}, []AggregateExpr{{Func: plan.AggCountStar, Name: "c", Type: plan.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Operator{hj, nlj, agg} {
		tc := jaTC(mem, 8192, 0)
		ctx, cancel := context.WithCancel(context.Background())
		s, err := op.Execute(ctx, 0, tc)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", op, err)
		}
		s.Close()
		s.Close()
		if u := tc.Memory.Used(); u != 0 {
			t.Errorf("%s: pool holds %d bytes", op, u)
		}
	}
}

// BenchmarkHashJoin joins 1.5M build rows with 6M probe rows on an int64
// key (each probe row matches one build row).
func BenchmarkHashJoin(b *testing.B) {
	const buildRows, probeRows, batch = 1_500_000, 6_000_000, 8192
	mem := memory.NewGoAllocator()
	bschema := jaSchema("bk", plan.Int64, "bv", plan.Int64)
	pschema := jaSchema("pk", plan.Int64, "pv", plan.Int64)
	var build []arrow.RecordBatch
	for s := 0; s < buildRows; s += batch {
		rb := array.NewRecordBuilder(mem, bschema)
		for i := s; i < min(buildRows, s+batch); i++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(i) * 3)
			rb.Field(1).(*array.Int64Builder).Append(int64(i))
		}
		build = append(build, rb.NewRecordBatch())
		rb.Release()
	}
	r := rand.New(rand.NewPCG(5, 6))
	var distinct, probe []arrow.RecordBatch
	for i := 0; i < 16; i++ {
		rb := array.NewRecordBuilder(mem, pschema)
		for j := 0; j < batch; j++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(r.IntN(buildRows)) * 3)
			rb.Field(1).(*array.Int64Builder).Append(int64(j))
		}
		distinct = append(distinct, rb.NewRecordBatch())
		rb.Release()
	}
	for i := 0; i < probeRows/batch; i++ {
		probe = append(probe, distinct[i%len(distinct)])
	}
	defer func() {
		for _, x := range append(build, distinct...) {
			x.Release()
		}
	}()
	left := &jaSource{schema: bschema, parts: [][]arrow.RecordBatch{build}}
	right := &jaSource{schema: pschema, parts: [][]arrow.RecordBatch{probe}}
	op, err := NewHashJoin(left, right, JoinInner, []expr.Expr{jaCol(0, "bk", plan.Int64)}, []expr.Expr{jaCol(0, "pk", plan.Int64)}, nil, false, JoinCollectLeft)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := jaDrain(b, op, NewTaskContext()); n != int64(len(probe)*batch) {
			b.Fatalf("%d rows", n)
		}
	}
	b.ReportMetric(float64(len(probe)*batch)*float64(b.N)/b.Elapsed().Seconds()/1e6, "probe-Mrows/s")
}

// TestHashJoinIntIndexKinds runs single integer key joins once with dense
// keys (direct index) and once with keys spread far apart (open addressing),
// checking which index the build chose and the rows against the reference.
func TestHashJoinIntIndexKinds(t *testing.T) {
	spread := func(rows [][]any, f int) [][]any {
		out := make([][]any, len(rows))
		for i, r := range rows {
			r = slices.Clone(r)
			if r[0] != nil {
				r[0] = r[0].(int)*f - 3*f
			}
			out[i] = r
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		factor int
		direct bool
		bitmap bool
	}{{"dense", 1, true, false}, {"bitmap", 1000, false, true}, {"sparse", 1 << 40, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			leftRows, rightRows := spread(jaJoinRows(40, 1), tc.factor), spread(jaJoinRows(50, 2), tc.factor)
			left := jaPartitioned(t, mem, jaLeftSchema, leftRows, 1, 5)
			defer left.release()
			right := jaPartitioned(t, mem, jaRightSchema, rightRows, 1, 7)
			defer right.release()
			lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
			rk := []expr.Expr{jaCol(0, "rk1", plan.Int64)}

			ctx := jaTC(mem, 8, 0)
			table, err := buildJoinTable(context.Background(), left, []int{0}, lk, ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			if !table.intKey || table.direct != tc.direct || (table.bitmap != nil) != tc.bitmap {
				t.Errorf("intKey=%v direct=%v bitmap=%v, want direct=%v bitmap=%v", table.intKey, table.direct, table.bitmap != nil, tc.direct, tc.bitmap)
			}
			table.release()

			checkEveryJoinType(t, mem, left, right, lk, rk, leftRows, rightRows, false, 3)
		})
	}
}

// TestHashJoinClusteredBuild: a build side large enough to be reordered by
// key (repeated keys, NULL keys, keys arriving out of order) gives the same
// answers as the reference for every join type, and its rows are grouped
// by key with NULL keys last.
func TestHashJoinClusteredBuild(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var leftRows, rightRows [][]any
	for i := 0; i < clusterMinRows+500; i++ {
		var k any = (i * 7919) % 1000
		if i%97 == 5 {
			k = nil
		}
		leftRows = append(leftRows, []any{k, "s", i})
	}
	for i := 0; i < 150; i++ {
		var k any = (i*37)%1100 - 50
		if i%31 == 7 {
			k = nil
		}
		rightRows = append(rightRows, []any{k, "s", i})
	}
	left := jaPartitioned(t, mem, jaLeftSchema, leftRows, 1, 4096)
	defer left.release()
	right := jaPartitioned(t, mem, jaRightSchema, rightRows, 1, 64)
	defer right.release()
	lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
	rk := []expr.Expr{jaCol(0, "rk1", plan.Int64)}

	table, err := buildJoinTable(context.Background(), left, []int{0}, lk, jaTC(mem, 8, 0), "test")
	if err != nil {
		t.Fatal(err)
	}
	keys, vals := table.keys[0].(*array.Int64), table.cols[2].(*array.Int64)
	for r := 1; r < keys.Len(); r++ {
		switch {
		case keys.IsNull(r-1) && !keys.IsNull(r):
			t.Fatalf("row %d: a key after a NULL key", r)
		case keys.IsNull(r) || keys.IsNull(r-1):
		case keys.Value(r) < keys.Value(r-1):
			t.Fatalf("row %d: key %d after %d", r, keys.Value(r), keys.Value(r-1))
		case keys.Value(r) == keys.Value(r-1) && vals.Value(r) < vals.Value(r-1):
			t.Fatalf("row %d: rows of key %d out of their original order", r, keys.Value(r))
		}
	}
	table.release()

	checkEveryJoinType(t, mem, left, right, lk, rk, leftRows, rightRows, false, 1024)
}

// TestHashJoinRankedIndex: a build side whose keys are spread thinly over
// their range takes the ranked direct index, with distinct keys (the
// branch-free probe loop), repeated keys (clustered, chains walked by the
// general loop) and NULL keys, and answers as the reference does for every
// join type; probe keys fall on keys, between them, and outside the range.
func TestHashJoinRankedIndex(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rows    int
		repeat  int // rows per key
		nullMod int // every nullMod-th build row has a NULL key (0: none)
	}{
		{"distinct keys", 20000, 1, 0},
		{"distinct keys with NULLs", 20000, 1, 101},
		{"repeated keys, clustered", clusterMinRows + 700, 3, 89},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewPCG(uint64(tc.rows), 9))
			// A range 20 values per build row, wider than rankedMinSpan;
			// the rows arrive in random order.
			gap := 20 * tc.repeat
			var leftRows [][]any
			for i, p := range rng.Perm(tc.rows) {
				var k any = 1000 + p/tc.repeat*gap
				if tc.nullMod > 0 && i%tc.nullMod == 3 {
					k = nil
				}
				leftRows = append(leftRows, []any{k, "s", i})
			}
			span := tc.rows / tc.repeat * gap
			var rightRows [][]any
			for i := 0; i < 300; i++ {
				var k any = 1000 + rng.IntN(span/gap+2)*gap // keys, and one past the last
				switch i % 5 {
				case 1:
					k = k.(int) + 1 + rng.IntN(gap-1) // between keys
				case 2:
					k = rng.IntN(3000) - 2000 // below the range
				case 3:
					if i%15 == 3 {
						k = nil
					}
				}
				rightRows = append(rightRows, []any{k, "s", i})
			}
			left := jaPartitioned(t, mem, jaLeftSchema, leftRows, 1, 4096)
			defer left.release()
			right := jaPartitioned(t, mem, jaRightSchema, rightRows, 1, 64)
			defer right.release()
			lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
			rk := []expr.Expr{jaCol(0, "rk1", plan.Int64)}
			table, err := buildJoinTable(context.Background(), left, []int{0}, lk, jaTC(mem, 8, 0), "test")
			if err != nil {
				t.Fatal(err)
			}
			if !table.direct || table.rank == nil {
				t.Errorf("direct=%v ranked=%v, want a ranked direct index", table.direct, table.rank != nil)
			} else if want := int64(tc.rows / tc.repeat * gap); int64(table.rank.span) < want-int64(gap) || int64(table.rank.span) > want+1 {
				t.Errorf("rank spans %d values, want about %d", table.rank.span, want)
			}
			table.release()
			checkEveryJoinType(t, mem, left, right, lk, rk, leftRows, rightRows, false, 256)
		})
	}
}

// TestHashJoinTwoIntegerKeys: a join on two integer columns packs them
// into one integer key (NULLs in either, probe pairs outside the build
// side's ranges, repeated pairs, a build side large enough to be clustered
// and a small one) and answers as the reference does for every join type.
func TestHashJoinTwoIntegerKeys(t *testing.T) {
	schema := jaSchema("a", plan.Int64, "b", plan.Int32, "v", plan.Int64)
	for _, buildRows := range []int{300, clusterMinRows + 100} {
		t.Run(fmt.Sprint(buildRows, " build rows"), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewPCG(uint64(buildRows), 3))
			gen := func(n, lo, hi int) [][]any {
				var rows [][]any
				for i := 0; i < n; i++ {
					var a, b any = lo + rng.IntN(hi-lo), lo/2 + rng.IntN(40)
					if rng.IntN(23) == 0 {
						a = nil
					}
					if rng.IntN(29) == 0 {
						b = nil
					}
					rows = append(rows, []any{a, b, i})
				}
				return rows
			}
			leftRows, rightRows := gen(buildRows, 100, 400), gen(200, 50, 450)
			left := jaPartitioned(t, mem, schema, leftRows, 1, 4096)
			defer left.release()
			right := jaPartitioned(t, mem, schema, rightRows, 1, 64)
			defer right.release()
			lk := []expr.Expr{jaCol(0, "a", plan.Int64), jaCol(1, "b", plan.Int32)}
			rk := []expr.Expr{jaCol(0, "a", plan.Int64), jaCol(1, "b", plan.Int32)}
			table, err := buildJoinTable(context.Background(), left, []int{0}, lk, jaTC(mem, 8, 0), "test")
			if err != nil {
				t.Fatal(err)
			}
			if table.pack == nil || !table.intKey {
				t.Errorf("two integer keys were not packed into one")
			}
			table.release()
			checkEveryJoinType(t, mem, left, right, lk, rk, leftRows, rightRows, true, 128)
		})
	}
}

// checkEveryJoinType runs a collect-left hash join of left and right on lk
// = rk for every join type, with batches of batchSize rows, and compares
// each answer with the reference over the same rows (multi: both key
// columns are compared).
func checkEveryJoinType(t *testing.T, mem memory.Allocator, left, right Operator, lk, rk []expr.Expr, leftRows, rightRows [][]any, multi bool, batchSize int) {
	t.Helper()
	for _, jt := range []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti} {
		op, err := NewHashJoin(left, right, jt, lk, rk, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatal(err)
		}
		got := jaCollect(t, op, jaTC(mem, batchSize, 0))
		want := jaRefJoin(jt, leftRows, rightRows, jaKeyMatch(multi, false))
		if !slices.Equal(got, want) {
			t.Fatalf("%s: got %d rows, want %d\n%s", jt, len(got), len(want), strings.Join(got[:min(len(got), 10)], "\n"))
		}
	}
}

// gateOp holds Execute of every partition but 0 until partition 0's
// stream has closed, or for at most a while: the order in which a consumer
// that opens partitions one by one after reading each would open them.
type gateOp struct {
	Operator
	first chan struct{} // closed when partition 0's stream closes
}

type gateStream struct {
	Stream
	once  sync.Once
	first chan struct{}
}

func (s *gateStream) Close() {
	s.Stream.Close()
	s.once.Do(func() { close(s.first) })
}

func (g *gateOp) Execute(ctx context.Context, p int, tc *TaskContext) (Stream, error) {
	if p != 0 {
		select {
		case <-g.first:
		case <-time.After(200 * time.Millisecond):
		}
		return g.Operator.Execute(ctx, p, tc)
	}
	s, err := g.Operator.Execute(ctx, p, tc)
	if err != nil {
		return nil, err
	}
	return &gateStream{Stream: s, first: g.first}, nil
}

// TestBuildJoinTableOpensEveryPartitionFirst: a join's build side that is
// itself a CollectLeft join shares one table among its partitions only
// while one of them is open. The build opened each partition in its own
// goroutine and read it at once, so a partition that finished before
// another was opened freed the table and the next one built it again (in
// process, below a repartition, "partition executed twice in one task";
// found by the differential test).
func TestBuildJoinTableOpensEveryPartitionFirst(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	left := jaPartitioned(t, mem, jaLeftSchema, jaJoinRows(30, 1), 3, 4)
	defer left.release()
	right := jaPartitioned(t, mem, jaRightSchema, jaJoinRows(30, 2), 4, 4)
	defer right.release()
	counting := &jaCountingOp{Operator: left}
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	inner, err := NewHashJoin(counting, right, JoinInner, k, k, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	tc := jaTC(mem, 8192, 0)
	gate := &gateOp{Operator: inner, first: make(chan struct{})}
	table, err := buildJoinTable(context.Background(), gate, []int{0, 1, 2, 3}, nil, tc, "test")
	if err != nil {
		t.Fatal(err)
	}
	table.release()
	if n := counting.executions.Load(); n != 3 {
		t.Fatalf("the inner join's build side partitions executed %d times, want 3 (one shared build)", n)
	}
}

// TestRepartitionOpensEveryInputFirst: a repartition's producers read its
// input partitions at once in goroutines; each opened its own partition,
// so one that finished before another had opened freed the input's shared
// build, built again for the next.
func TestRepartitionOpensEveryInputFirst(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	left := jaPartitioned(t, mem, jaLeftSchema, jaJoinRows(30, 1), 3, 4)
	defer left.release()
	right := jaPartitioned(t, mem, jaRightSchema, jaJoinRows(30, 2), 4, 4)
	defer right.release()
	counting := &jaCountingOp{Operator: left}
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	inner, err := NewHashJoin(counting, right, JoinInner, k, k, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	gate := &gateOp{Operator: inner, first: make(chan struct{})}
	rep := NewRepartition(gate, Partitioning{Kind: PartHash, Count: 2, Keys: k})
	got := jaCollect(t, rep, jaTC(mem, 8192, 0))
	want := jaRefJoin(JoinInner, jaJoinRows(30, 1), jaJoinRows(30, 2), jaKeyMatch(false, false))
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	if n := counting.executions.Load(); n != 3 {
		t.Fatalf("the join's build side partitions executed %d times, want 3 (one shared build)", n)
	}
}

// TestHashJoinSpills: a partitioned join whose build side is far over the
// memory limit becomes a grace hash join in a task that may spill, and
// gives, for every join type, with one and two keys and with a filter, the
// rows the reference join gives; nothing stays reserved, no spill file is
// left. (One partition a side: partitions running at once share the
// pool, and one holding memory can leave another's buckets none.)
func TestHashJoinSpills(t *testing.T) {
	leftRows, rightRows := jaJoinRows(1200, 1), jaJoinRows(1000, 2)
	types := []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti}
	for _, jt := range types {
		for _, multi := range []bool{false, true} {
			for _, filter := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/multi=%v/filter=%v", jt, multi, filter), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					left := jaPartitioned(t, mem, jaLeftSchema, leftRows, 1, 50)
					defer left.release()
					right := jaPartitioned(t, mem, jaRightSchema, rightRows, 1, 70)
					defer right.release()
					lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
					rk := []expr.Expr{jaCol(0, "rk1", plan.Int64)}
					if multi {
						lk = append(lk, jaCol(1, "lk2", plan.Utf8))
						rk = append(rk, jaCol(1, "rk2", plan.Utf8))
					}
					var f expr.Expr
					if filter {
						f = &jaCmp{L: 2, R: 5, Op: "<>"}
					}
					op, err := NewHashJoin(left, right, jt, lk, rk, f, false, JoinPartitioned)
					if err != nil {
						t.Fatal(err)
					}
					tc := jaTC(mem, 100, 30_000)
					tc.SpillDir = t.TempDir()
					got := jaCollect(t, op, tc)
					want := jaRefJoin(jt, leftRows, rightRows, jaKeyMatch(multi, filter))
					if !slices.Equal(got, want) {
						t.Fatalf("got %d rows, want %d", len(got), len(want))
					}
					if u := tc.Memory.Used(); u != 0 {
						t.Fatalf("memory pool still holds %d bytes", u)
					}
					if left, _ := os.ReadDir(tc.SpillDir); len(left) != 0 {
						t.Errorf("spill files left behind: %v", left)
					}
					// Without a spill directory the limit is the error.
					if _, err := jaRun(t, op, jaTC(mem, 100, 30_000)); !errors.Is(err, mempool.ErrResourcesExhausted) {
						t.Fatalf("without a spill directory: err = %v, want the memory limit", err)
					}
				})
			}
		}
	}
}
