package physical

import (
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/plan"
)

// TestRuntimeFilteredJoins joins a Parquet scan (behind a projection and a
// filter, as plans put it) with a small build side, for every join type,
// and checks the result against the same join over a probe side the join
// cannot see into (so no runtime filter): keys with NULLs on both sides,
// duplicate and missing keys, int64 and int32 keys, a selective build side
// and one that holds every key (whose filter the scan drops after its
// trial rows).
func TestRuntimeFilteredJoins(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "k32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	const n = 80000 // past the filter's trial, so that a useless one is dropped
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range n {
		if i%97 == 5 {
			b.Field(0).AppendNull()
			b.Field(1).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i*7919%1000) - 100)
			b.Field(1).(*array.Int32Builder).Append(int32(i*7919%1000) - 100)
		}
		b.Field(2).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	b.Release()
	path := filepath.Join(t.TempDir(), "probe.parquet")
	writeParquetWith(t, path, rec, parquet.WithMaxRowGroupLength(9000))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	buildRows := func(keys []any) [][]any {
		var rows [][]any
		for i, k := range keys {
			rows = append(rows, []any{k, "s", i})
		}
		return rows
	}
	var every []any
	for k := -100; k < 900; k++ {
		every = append(every, k)
	}
	builds := map[string][]any{
		"selective": {-100, 3, 3, nil, 250, 899, 5000},
		"every key": every,
	}
	for _, keyCol := range []int{0, 1} {
		for name, keys := range builds {
			t.Run(schema.Field(keyCol).Name+" "+name, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				left := jaPartitioned(t, mem, jaLeftSchema, buildRows(keys), 1, 3)
				defer left.release()
				// The probe side: v > 10 over the scan, projected to
				// (v, key): the key is column 1 of the join's input.
				scan := NewParquetScan("probe", tbl, []int{0, 1, 2}, nil, 2)
				cond := &expr.Binary{Op: plan.OpGt, L: jaCol(2, "v", plan.Int64), R: &expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: int64(10)}}, Type: plan.Bool}
				keyType := schema.Field(keyCol).Type
				proj := NewProjection(NewFilter(scan, cond), []expr.Expr{jaCol(2, "v", plan.Int64), jaCol(keyCol, "k", keyType)}, []string{"v", "k"})
				hidden := NewProjection(NewFilter(&passThrough{scan}, cond), []expr.Expr{jaCol(2, "v", plan.Int64), jaCol(keyCol, "k", keyType)}, []string{"v", "k"})
				var lk expr.Expr = jaCol(0, "lk1", plan.Int64)
				if keyType.ID() == arrow.INT32 {
					lk = &expr.Cast{X: lk, To: plan.Int32}
				}
				rk := jaCol(1, "k", keyType)
				for _, jt := range []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti} {
					probe, hiddenProbe := Operator(proj), Operator(hidden)
					if jt.EmitsUnmatchedBuild() {
						// One probe partition, as the planner gives them.
						probe, hiddenProbe = NewCoalescePartitions(proj), NewCoalescePartitions(hidden)
					}
					filtered, err := NewHashJoin(left, probe, jt, []expr.Expr{lk}, []expr.Expr{rk}, nil, false, JoinCollectLeft)
					if err != nil {
						t.Fatal(err)
					}
					plain, err := NewHashJoin(left, hiddenProbe, jt, []expr.Expr{lk}, []expr.Expr{rk}, nil, false, JoinCollectLeft)
					if err != nil {
						t.Fatal(err)
					}
					tc := jaTC(mem, 700, 0)
					got := jaCollect(t, filtered, tc)
					want := jaCollect(t, plain, jaTC(mem, 700, 0))
					if !slices.Equal(got, want) {
						t.Fatalf("%s: %d rows, want %d\n%s", jt, len(got), len(want), strings.Join(got[:min(len(got), 5)], "\n"))
					}
					filters := len(filtered.runtimeFilterTargets()) > 0
					if reg := tc.runtimeFilters().forScan(scan); filters != (len(reg) == 1 && reg[0].keys.Load() != nil) {
						t.Fatalf("%s: join may filter its scan %v, but the scan got %d filters", jt, filters, len(reg))
					}
				}
			})
		}
	}
}

func TestSelectBitmapKeys(t *testing.T) {
	// Keys 10, 12 and 75 of the range [10, 76).
	b := &keyBitmap{lo: 10, span: 66, bits: make([]uint64, 2)}
	for _, k := range []int64{10, 12, 75} {
		d := uint64(k - b.lo)
		b.bits[d>>6] |= 1 << (d & 63)
	}
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	bld.AppendValues([]int64{9, 10, 11, 12, 75, 76, -1 << 63, 1<<63 - 1, 12, 10}, []bool{true, true, true, true, true, true, true, true, false, true})
	col := bld.NewArray()
	bld.Release()
	defer col.Release()
	if got := b.selectKeys(col, nil); !slices.Equal(got, []int32{1, 3, 4, 9}) {
		t.Fatalf("all rows: %v", got)
	}
	if got := b.selectKeys(col, []int32{0, 3, 8, 9}); !slices.Equal(got, []int32{3, 9}) {
		t.Fatalf("of a selection: %v", got)
	}
	b32 := array.NewInt32Builder(memory.DefaultAllocator)
	b32.AppendValues([]int32{75, 74, 12}, nil)
	c32 := b32.NewArray()
	b32.Release()
	defer c32.Release()
	if got := b.selectKeys(c32, nil); !slices.Equal(got, []int32{0, 2}) {
		t.Fatalf("int32: %v", got)
	}
}

// TestRuntimeFilterTargets: which joins filter their probe scan, and
// through what.
func TestRuntimeFilterTargets(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	b.Field(0).(*array.Int64Builder).Append(1)
	b.Field(1).(*array.StringBuilder).Append("x")
	rec := b.NewRecordBatch()
	b.Release()
	path := filepath.Join(t.TempDir(), "t.parquet")
	writeParquetWith(t, path, rec)
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	left := jaPartitioned(t, memory.DefaultAllocator, jaLeftSchema, [][]any{{1, "s", 1}}, 1, 1)
	defer left.release()
	scan := NewParquetScan("t", tbl, []int{0, 1}, nil, 1)
	computed := NewProjection(scan, []expr.Expr{&expr.Binary{Op: plan.OpAdd, L: jaCol(0, "k", plan.Int64), R: jaCol(0, "k", plan.Int64), Type: plan.Int64}}, []string{"k2"})
	lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
	for _, c := range []struct {
		what  string
		probe Operator
		rk    expr.Expr
		jt    JoinType
		want  bool
	}{
		{"inner join on a scan column", scan, jaCol(0, "k", plan.Int64), JoinInner, true},
		{"a string key", scan, jaCol(1, "s", plan.Utf8), JoinInner, false},
		{"a computed key", computed, jaCol(0, "k2", plan.Int64), JoinInner, false},
		{"probe rows kept unmatched (right anti)", scan, jaCol(0, "k", plan.Int64), JoinRightAnti, false},
		{"a probe side that is not a scan", &passThrough{scan}, jaCol(0, "k", plan.Int64), JoinInner, false},
	} {
		lkeys := lk
		if c.rk.DataType().ID() == arrow.STRING {
			lkeys = []expr.Expr{jaCol(1, "lk2", plan.Utf8)}
		}
		h, err := NewHashJoin(left, c.probe, c.jt, lkeys, []expr.Expr{c.rk}, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if got := len(h.runtimeFilterTargets()) > 0; got != c.want {
			t.Errorf("%s: filters its scan %v, want %v", c.what, got, c.want)
		}
	}
}

// TestRuntimeFilterThroughALowerJoin: a join whose probe side is another
// join's probe side filters that join's scan too (q5: lineitem by its
// supplier and its order keys); the result equals that of the same joins
// over a scan neither can see.
func TestRuntimeFilterThroughALowerJoin(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	const n = 20000
	bld := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range n {
		if i%53 == 1 {
			bld.Field(0).AppendNull()
		} else {
			bld.Field(0).(*array.Int64Builder).Append(int64(i % 300))
		}
		bld.Field(1).(*array.Int64Builder).Append(int64(i * 31 % 700))
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	path := filepath.Join(t.TempDir(), "probe.parquet")
	writeParquetWith(t, path, rec, parquet.WithMaxRowGroupLength(3000))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var lowerKeys, upperKeys [][]any
	for k := 0; k < 300; k += 2 {
		lowerKeys = append(lowerKeys, []any{k, "s", k})
	}
	for _, k := range []any{5, 77, 77, nil, 699, 1000} {
		upperKeys = append(upperKeys, []any{k, "u", 1})
	}
	lower := jaPartitioned(t, mem, jaLeftSchema, lowerKeys, 1, 7)
	defer lower.release()
	upper := jaPartitioned(t, mem, jaLeftSchema, upperKeys, 1, 7)
	defer upper.release()
	scan := NewParquetScan("probe", tbl, []int{0, 1}, nil, 2)
	build := func(probe Operator, jt, lowerType JoinType) (Operator, *HashJoin) {
		// lower: (lk1, lk2, lv, a, b) on lk1 = a; upper on lk1 = b (column 4).
		if lowerType.EmitsUnmatchedBuild() {
			probe = NewCoalescePartitions(probe)
		}
		low, err := NewHashJoin(lower, probe, lowerType, []expr.Expr{jaCol(0, "lk1", plan.Int64)}, []expr.Expr{jaCol(0, "a", plan.Int64)}, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatal(err)
		}
		var p Operator = low
		if jt.EmitsUnmatchedBuild() {
			p = NewCoalescePartitions(low)
		}
		up, err := NewHashJoin(upper, p, jt, []expr.Expr{jaCol(0, "lk1", plan.Int64)}, []expr.Expr{jaCol(4, "b", plan.Int64)}, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatal(err)
		}
		return up, up
	}
	// Keyed on the lower join's build column: nothing to filter the scan by.
	low, err := NewHashJoin(lower, scan, JoinInner, []expr.Expr{jaCol(0, "lk1", plan.Int64)}, []expr.Expr{jaCol(0, "a", plan.Int64)}, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	onBuild, err := NewHashJoin(upper, low, JoinInner, []expr.Expr{jaCol(0, "lk1", plan.Int64)}, []expr.Expr{jaCol(2, "lv", plan.Int64)}, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	if len(onBuild.runtimeFilterTargets()) > 0 {
		t.Fatal("a key from the lower join's build side was traced to its probe scan")
	}
	// The lower join may also be a right or full outer join: it outputs
	// its probe rows unchanged too.
	for _, lowerType := range []JoinType{JoinInner, JoinRight, JoinFull} {
		for _, jt := range []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti} {
			filtered, h := build(scan, jt, lowerType)
			plain, _ := build(&passThrough{scan}, jt, lowerType)
			if ok := len(h.runtimeFilterTargets()) > 0; ok != (jt != JoinRight && jt != JoinFull && jt != JoinRightAnti) {
				t.Fatalf("%s over %s: filters the scan below the lower join: %v", jt, lowerType, ok)
			}
			got := jaCollect(t, filtered, jaTC(mem, 500, 0))
			want := jaCollect(t, plain, jaTC(mem, 500, 0))
			if !slices.Equal(got, want) {
				t.Fatalf("%s over %s: %d rows, want %d", jt, lowerType, len(got), len(want))
			}
		}
	}
}

// TestKeyBitmapAnyIn checks anyIn against a scan of every key, over random
// key sets and ranges (word edges included).
func TestKeyBitmapAnyIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for iter := 0; iter < 2000; iter++ {
		lo := int64(rng.IntN(300)) - 150
		span := uint64(1 + rng.IntN(200))
		b := &keyBitmap{lo: lo, span: span, bits: make([]uint64, (span+63)/64)}
		keys := map[int64]bool{}
		for range rng.IntN(4) {
			d := uint64(rng.IntN(int(span)))
			b.bits[d>>6] |= 1 << (d & 63)
			keys[lo+int64(d)] = true
		}
		mn := lo - 70 + int64(rng.IntN(int(span)+140))
		mx := mn + int64(rng.IntN(130))
		want := false
		for k := range keys {
			want = want || (k >= mn && k <= mx)
		}
		if got := b.anyIn(mn, mx); got != want {
			t.Fatalf("keys %v (lo %d span %d), range [%d, %d]: anyIn %v, want %v", keys, lo, span, mn, mx, got, want)
		}
	}
}

// TestRuntimeFilterSkipsRowGroups scans a file whose key is sorted, so each
// row group holds its own range of keys (and one holds only NULLs): a
// published filter rules out exactly the groups whose range holds none of
// its keys, and a join whose build side has a few keys answers as the same
// join over a probe side it cannot filter.
func TestRuntimeFilterSkipsRowGroups(t *testing.T) {
	scan := sortedKeyScan(t)

	// Keys 3 and 142: groups 0 (keys 0-49) and 2 (100-149) may hold them.
	f := &runtimeFilter{col: 1}
	bm := &keyBitmap{lo: 3, span: 140, bits: make([]uint64, 3)}
	for _, k := range []int64{3, 142} {
		d := uint64(k - bm.lo)
		bm.bits[d>>6] |= 1 << (d & 63)
	}
	st := newRuntimeFilterState([]*runtimeFilter{f})
	for _, u := range scan.parts[0] {
		if st.rulesOut(scan, u) {
			t.Fatalf("row group %d ruled out before the filter was published", u.rowGroup)
		}
	}
	f.keys.Store(bm)
	var kept []int
	for _, u := range scan.parts[0] {
		if !st.rulesOut(scan, u) {
			kept = append(kept, u.rowGroup)
		}
	}
	if !slices.Equal(kept, []int{0, 2}) {
		t.Fatalf("kept row groups %v, want [0 2]", kept)
	}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	keys := [][]any{{3, "s", 0}, {142, "s", 1}, {nil, "s", 2}, {7000, "s", 3}}
	left := jaPartitioned(t, mem, jaLeftSchema, keys, 1, 2)
	defer left.release()
	lk, rk := jaCol(0, "lk1", plan.Int64), jaCol(1, "k", plan.Int64)
	for _, jt := range []JoinType{JoinInner, JoinRightSemi} {
		filtered, err := NewHashJoin(left, scan, jt, []expr.Expr{lk}, []expr.Expr{rk}, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := NewHashJoin(left, &passThrough{scan}, jt, []expr.Expr{lk}, []expr.Expr{rk}, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatal(err)
		}
		got := jaCollect(t, filtered, jaTC(mem, 700, 0))
		want := jaCollect(t, plain, jaTC(mem, 700, 0))
		if len(want) != 200 || !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d (200)", jt, len(got), len(want))
		}
	}
}

// sortedKeyScan scans (v, k) of a file of 50,000 rows in row groups of
// 5,000 whose key k is sorted, 100 rows per key (0 to 449), so each row
// group holds its own range of keys, and whose last group holds only
// NULL keys.
func sortedKeyScan(t *testing.T) *ParquetScan {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	const n, group = 50000, 5000
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range n {
		if i >= n-group {
			b.Field(0).AppendNull() // the last group: only NULLs
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i / 100))
		}
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	b.Release()
	path := filepath.Join(t.TempDir(), "sorted.parquet")
	writeParquetWith(t, path, rec, parquet.WithMaxRowGroupLength(group))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	return NewParquetScan("sorted", tbl, []int{1, 0}, nil, 1)
}

// TestProbeScanWaitsForItsJoinFilters: a scan on a join's probe side reads
// nothing until the join's filter is published. Published with two keys,
// the scan emits exactly their 200 rows (a scan that read its first row
// group before would have emitted all of that group's rows); published by
// an empty build side, it rules out every row group and emits none. A
// join whose build side reads the probe side's scan too leaves that scan
// unfiltered: it would wait for a filter its own rows make.
func TestProbeScanWaitsForItsJoinFilters(t *testing.T) {
	scan := sortedKeyScan(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	lk, rk := jaCol(0, "lk1", plan.Int64), jaCol(1, "k", plan.Int64)

	bm := &keyBitmap{lo: 3, span: 140, bits: make([]uint64, 3)}
	for _, k := range []int64{3, 142} {
		d := uint64(k - bm.lo)
		bm.bits[d>>6] |= 1 << (d & 63)
	}
	empty := jaPartitioned(t, mem, jaLeftSchema, nil, 1, 2)
	defer empty.release()
	emptyTable, err := buildJoinTable(t.Context(), empty, []int{0}, []expr.Expr{lk}, jaTC(mem, 700, 0), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer emptyTable.release()

	for _, tc := range []struct {
		name    string
		publish func(f *runtimeFilter)
		want    map[int64]int
	}{
		{"two keys", func(f *runtimeFilter) { f.once.Do(func() { f.keys.Store(bm); f.settle() }) }, map[int64]int{3: 100, 142: 100}},
		{"empty build side", func(f *runtimeFilter) { f.publish(emptyTable) }, map[int64]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			join, err := NewHashJoin(empty, scan, JoinInner, []expr.Expr{lk}, []expr.Expr{rk}, nil, false, JoinCollectLeft)
			if err != nil {
				t.Fatal(err)
			}
			task := jaTC(mem, 700, 0)
			f := task.runtimeFilters().forJoin(join, scan, 1, 0)
			var mu sync.Mutex
			got := map[int64]int{}
			emitted := 0
			done := make(chan error, 1)
			produce := scan.producer(0, task, nil)
			go func() {
				done <- produce(t.Context(), func(b arrow.RecordBatch, _ bool) error {
					defer b.Release()
					mu.Lock()
					defer mu.Unlock()
					k := b.Column(1).(*array.Int64)
					for i := range k.Len() {
						got[k.Value(i)]++
					}
					emitted += int(b.NumRows())
					return nil
				})
			}()
			time.Sleep(30 * time.Millisecond) // time enough to read a row group
			mu.Lock()
			early := emitted
			mu.Unlock()
			if early != 0 {
				t.Fatalf("the scan emitted %d rows before its join filter was published", early)
			}
			tc.publish(f)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("rows per key %v, want %v", got, tc.want)
			}
			st := newRuntimeFilterState([]*runtimeFilter{f})
			for _, u := range scan.parts[0] {
				if ruled := st.rulesOut(scan, u); tc.name == "empty build side" && !ruled {
					t.Fatalf("row group %d not ruled out by an empty build side", u.rowGroup)
				}
			}
		})
	}

	self, err := NewHashJoin(scan, scan, JoinInner, []expr.Expr{jaCol(1, "k", plan.Int64)}, []expr.Expr{rk}, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	if targets := self.runtimeFilterTargets(); len(targets) != 0 {
		t.Fatalf("a join reading its probe scan on its build side filters it: %v", targets)
	}
	other, err := NewHashJoin(empty, scan, JoinInner, []expr.Expr{lk}, []expr.Expr{rk}, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	if targets := other.runtimeFilterTargets(); len(targets) != 1 || targets[0].scan != scan {
		t.Fatalf("targets %v, want the probe scan's key", targets)
	}
}

// TestRuntimeFilterOnOneOfSeveralKeys joins on two keys (packed into one by
// the build table) and on three (kept apart): each key that traces to a
// scan column gets a filter, the first key's bitmap holds that key's build
// values, and every join type answers as the same join whose probe side
// it cannot filter.
func TestRuntimeFilterOnOneOfSeveralKeys(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	const n = 30000
	bld := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range n {
		if i%61 == 3 {
			bld.Field(0).AppendNull()
		} else {
			bld.Field(0).(*array.Int64Builder).Append(int64(i % 400))
		}
		if i%67 == 5 {
			bld.Field(1).AppendNull()
		} else {
			bld.Field(1).(*array.Int64Builder).Append(int64(i % 7))
		}
		bld.Field(2).(*array.Int64Builder).Append(int64(i % 3))
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	path := filepath.Join(t.TempDir(), "probe.parquet")
	writeParquetWith(t, path, rec, parquet.WithMaxRowGroupLength(4000))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	buildSchema := jaSchema("x", plan.Int64, "y", plan.Int64, "z", plan.Int64)
	var rows [][]any
	for _, x := range []any{5, 77, 77, nil, 399, 1000} {
		rows = append(rows, []any{x, 3, 1})
	}
	rows = append(rows, []any{6, nil, 2})
	build := jaPartitioned(t, mem, buildSchema, rows, 1, 3)
	defer build.release()
	scan := NewParquetScan("probe", tbl, []int{0, 1, 2}, nil, 2)
	for _, nkeys := range []int{2, 3} {
		var lk, rk []expr.Expr
		for i, name := range []string{"a", "b", "v"}[:nkeys] {
			lk = append(lk, jaCol(i, []string{"x", "y", "z"}[i], plan.Int64))
			rk = append(rk, jaCol(i, name, plan.Int64))
		}
		for _, jt := range []JoinType{JoinInner, JoinLeft, JoinRight, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti} {
			probe, hidden := Operator(scan), Operator(&passThrough{scan})
			if jt.EmitsUnmatchedBuild() {
				probe, hidden = NewCoalescePartitions(scan), NewCoalescePartitions(&passThrough{scan})
			}
			filtered, err := NewHashJoin(build, probe, jt, lk, rk, nil, false, JoinCollectLeft)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := NewHashJoin(build, hidden, jt, lk, rk, nil, false, JoinCollectLeft)
			if err != nil {
				t.Fatal(err)
			}
			targets := filtered.runtimeFilterTargets()
			ok := len(targets) > 0
			if wantOK := jt != JoinRight && jt != JoinRightAnti; ok != wantOK || ok && len(targets) != nkeys {
				t.Fatalf("%d keys, %s: targets %v, want one per key (%v)", nkeys, jt, targets, wantOK)
			}
			tc := jaTC(mem, 500, 0)
			got := jaCollect(t, filtered, tc)
			want := jaCollect(t, plain, jaTC(mem, 500, 0))
			if !slices.Equal(got, want) {
				t.Fatalf("%d keys, %s: %d rows, want %d", nkeys, jt, len(got), len(want))
			}
			if ok {
				reg := tc.runtimeFilters().forScan(scan)
				if len(reg) != nkeys || reg[0].key != 0 || reg[0].keys.Load() == nil {
					t.Fatalf("%d keys, %s: %d filters, want %d with the first key's bitmap", nkeys, jt, len(reg), nkeys)
				}
				b := reg[0].keys.Load()
				// (6, NULL) may be left out: a row with a NULL key never matches.
				for _, k := range []int64{5, 77, 399, 1000} {
					if !b.anyIn(k, k) {
						t.Errorf("%d keys, %s: build key %d missing from the filter", nkeys, jt, k)
					}
				}
				if b.anyIn(7, 76) || b.anyIn(78, 398) {
					t.Errorf("%d keys, %s: the filter holds keys the build side has not", nkeys, jt)
				}
			}
		}
	}
}

// TestRuntimeFiltersThroughUnion joins a small build side with the UNION
// ALL of two Parquet scans (one behind a filter and a projection), a
// branch whose key is computed (not a scan column, so not filtered) and a
// scan that two branches read (not filtered either: its other branch may
// need the rows). The answer must match the same join over a union the
// join cannot see into, and the filters must land on exactly the two
// scans read once.
func TestRuntimeFiltersThroughUnion(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	open := func(name string, n, mul int) *catalog.ParquetTable {
		b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
		for i := range n {
			if i%89 == 3 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(int64(i * mul % 700))
			}
			b.Field(1).(*array.Int64Builder).Append(int64(i))
		}
		rec := b.NewRecordBatch()
		b.Release()
		path := filepath.Join(t.TempDir(), name+".parquet")
		writeParquetWith(t, path, rec, parquet.WithMaxRowGroupLength(7000))
		tbl, err := catalog.OpenParquet(path)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	ta, tb, ts := open("a", 60000, 7919), open("b", 30000, 104729), open("s", 20000, 31)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	left := jaPartitioned(t, mem, jaLeftSchema, [][]any{{3, "x", 0}, {3, "y", 1}, {250, "z", 2}, {nil, "n", 3}, {699, "w", 4}, {5000, "u", 5}}, 1, 3)
	defer left.release()
	k, v := jaCol(0, "k", plan.Int64), jaCol(1, "v", plan.Int64)
	gt := &expr.Binary{Op: plan.OpGt, L: v, R: &expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: int64(100)}}, Type: plan.Bool}
	kv := []string{"k", "v"}
	sa := NewParquetScan("a", ta, []int{0, 1}, nil, 2)
	sb := NewParquetScan("b", tb, []int{0, 1}, nil, 1)
	ss := NewParquetScan("s", ts, []int{0, 1}, nil, 1)
	// The key computed: v % 700 (v >= 0).
	mod := &expr.Binary{Op: plan.OpMod, L: v, R: &expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: int64(700)}}, Type: plan.Int64}
	union := func(wrap func(Operator) Operator) Operator {
		return NewUnion([]Operator{
			NewProjection(NewFilter(wrap(sa), gt), []expr.Expr{k, v}, kv),
			wrap(sb),
			NewProjection(wrap(sb), []expr.Expr{mod, v}, kv),
			wrap(ss),
			NewProjection(wrap(ss), []expr.Expr{v, k}, kv),
		})
	}
	probe := union(func(o Operator) Operator { return o })
	hidden := union(func(o Operator) Operator { return &passThrough{o} })
	lk := jaCol(0, "lk1", plan.Int64)
	for _, jt := range []JoinType{JoinInner, JoinLeftSemi, JoinRightSemi} {
		probe, hidden := probe, hidden
		if jt == JoinLeftSemi {
			// Build rows out: one probe partition, as the planner gives it.
			probe, hidden = NewCoalescePartitions(probe), NewCoalescePartitions(hidden)
		}
		filtered, err := NewHashJoin(left, probe, jt, []expr.Expr{lk}, []expr.Expr{k}, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := NewHashJoin(left, hidden, jt, []expr.Expr{lk}, []expr.Expr{k}, nil, false, JoinCollectLeft)
		if err != nil {
			t.Fatal(err)
		}
		tc := jaTC(mem, 500, 0)
		got := jaCollect(t, filtered, tc)
		want := jaCollect(t, plain, jaTC(mem, 500, 0))
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d (non-zero)", jt, len(got), len(want))
		}
		reg := tc.runtimeFilters()
		for _, c := range []struct {
			scan *ParquetScan
			want int
		}{{sa, 1}, {sb, 0}, {ss, 0}} {
			fs := reg.forScan(c.scan)
			if len(fs) != c.want || (c.want == 1 && fs[0].keys.Load() == nil) {
				t.Fatalf("%s: scan %s got %d filters, want %d", jt, c.scan.name, len(fs), c.want)
			}
		}
	}
}
