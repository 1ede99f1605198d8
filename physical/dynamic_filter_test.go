package physical

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

// int64Array builds an Int64 array; nil entries are NULL.
func int64Array(vals []*int64) arrow.Array {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(*v)
		}
	}
	return b.NewArray()
}

func ints(vs ...int64) []*int64 {
	out := make([]*int64, len(vs))
	for i := range vs {
		out[i] = &vs[i]
	}
	return out
}

// buildKeys collects keys (in batches of up to 7) into one set and checks
// it survives encoding.
func buildKeys(t *testing.T, keys []int64) *KeySet {
	t.Helper()
	b := &keyBuilder{}
	for len(keys) > 0 {
		n := min(7, len(keys))
		a := int64Array(ints(keys[:n]...))
		b.add(a)
		a.Release()
		keys = keys[n:]
	}
	return roundTrip(t, b.keys())
}

func roundTrip(t *testing.T, k *KeySet) *KeySet {
	t.Helper()
	m, err := EncodeKeySet(3, k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeKeySet(m)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestKeySetIntegers checks that a set built from integer keys, added in
// any order over narrow and wide ranges, holds every key (no false
// negatives, ever), holds no other key while it is a bitmap, and that
// merged sets hold the keys of all of them.
func TestKeySetIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name   string
		n      int
		lo     int64
		spread int64
		exact  bool
	}{
		{"narrow", 500, 1000, 3000, true},
		{"negative", 500, -5000, 9000, true},
		{"grows both ways", 3000, -1 << 22, 1 << 23, true},
		{"wide", 2000, 0, 1 << 40, false},
		{"extremes", 50, math.MinInt64 + 1, math.MaxInt64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := make([]int64, tc.n)
			in := map[int64]bool{}
			for i := range keys {
				keys[i] = tc.lo + rng.Int64N(tc.spread)
				in[keys[i]] = true
			}
			k := buildKeys(t, keys)
			if exact := k.bitmap != nil; exact != tc.exact {
				t.Fatalf("set %s: exact %v, want %v", k, exact, tc.exact)
			}
			for _, v := range keys {
				if !k.hasInt(v) || !k.anyIn(v, v) {
					t.Fatalf("key %d missing from %s", v, k)
				}
			}
			if tc.exact {
				for i := 0; i < 2000; i++ {
					v := tc.lo - 10 + rng.Int64N(tc.spread+20)
					if k.hasInt(v) != in[v] {
						t.Fatalf("key %d: in set %v, want %v", v, k.hasInt(v), in[v])
					}
				}
			}
			// Two halves merged hold every key too.
			a, b := buildKeys(t, keys[:tc.n/2]), buildKeys(t, keys[tc.n/2:])
			m := roundTrip(t, MergeKeySets([]*KeySet{a, b}))
			for _, v := range keys {
				if !m.hasInt(v) {
					t.Fatalf("key %d missing from merged %s", v, m)
				}
			}
		})
	}
}

// TestKeySetMergeMixed merges a bitmap with a bloom filter and an empty
// set: the result holds every key of each.
func TestKeySetMergeMixed(t *testing.T) {
	narrow := buildKeys(t, []int64{5, 7, 100})
	wide := buildKeys(t, []int64{-1 << 40, 3, 1 << 40})
	empty := buildKeys(t, nil)
	if !empty.empty || empty.hasInt(0) || empty.anyIn(math.MinInt64, math.MaxInt64) {
		t.Fatalf("empty set %s holds something", empty)
	}
	m := MergeKeySets([]*KeySet{narrow, empty, wide})
	for _, v := range []int64{5, 7, 100, -1 << 40, 3, 1 << 40} {
		if !m.hasInt(v) {
			t.Fatalf("key %d missing from %s", v, m)
		}
	}
	if m.hasInt(1<<40+1) || m.hasInt(-1<<40-1) {
		t.Fatalf("%s holds keys outside its range", m)
	}
	if MergeKeySets([]*KeySet{narrow, nil}) != nil {
		t.Fatal("merge with an unknown share: want unknown")
	}
	if got := roundTrip(t, MergeKeySets([]*KeySet{empty, empty})); !got.empty {
		t.Fatalf("empty sets merged: %s", got)
	}
}

// TestKeySetStrings checks string keys: plain and dictionary columns are
// judged alike, NULL never passes, and an integer column is left alone.
func TestKeySetStrings(t *testing.T) {
	b := &keyBuilder{strings: true}
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < 1000; i++ {
		sb.Append(fmt.Sprintf("key-%d", i*2))
	}
	sb.AppendNull()
	a := sb.NewArray()
	b.add(a)
	a.Release()
	sb.Release()
	k := roundTrip(t, b.keys())
	probe := array.NewStringBuilder(memory.DefaultAllocator)
	defer probe.Release()
	probe.AppendValues([]string{"key-0", "key-1", "key-1998", "nope"}, nil)
	probe.AppendNull()
	pa := probe.NewArray()
	defer pa.Release()
	got := k.selectKeys(pa, nil)
	if !slices.Contains(got, 0) || !slices.Contains(got, 2) || slices.Contains(got, 4) {
		t.Fatalf("selected %v: want rows 0 and 2 (and never the NULL in 4)", got)
	}
	db := array.NewDictionaryBuilder(memory.DefaultAllocator, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer db.Release()
	for _, s := range []string{"key-4", "x", "key-4", "y"} {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	db.AppendNull()
	da := db.NewArray()
	defer da.Release()
	if got := k.selectKeys(da, nil); !slices.Contains(got, 0) || !slices.Contains(got, 2) || slices.Contains(got, 4) {
		t.Fatalf("dictionary: selected %v, want rows 0 and 2", got)
	}
	ia := int64Array(ints(1, 2, 3))
	defer ia.Release()
	if got := k.selectKeys(ia, []int32{0, 2}); !slices.Equal(got, []int32{0, 2}) {
		t.Fatalf("integers judged by a string set: %v", got)
	}
}

// TestKeySetSelectNulls checks that integer NULL keys never pass.
func TestKeySetSelectNulls(t *testing.T) {
	for _, k := range []*KeySet{buildKeys(t, []int64{1, 2, 3}), buildKeys(t, []int64{1, 2, 3, 1 << 50})} {
		a := int64Array([]*int64{ints(1)[0], nil, ints(4)[0], ints(3)[0]})
		if got := k.selectKeys(a, nil); !slices.Equal(got, []int32{0, 3}) {
			t.Fatalf("%s selected %v, want [0 3]", k, got)
		}
		a.Release()
	}
}

// TestDynamicFilterBuildAndApply runs a DynamicFilterBuild over a Parquet
// scan, then a scan of the same table in another task with the collected
// keys: it returns exactly the rows whose id was collected, skipping row
// groups with none of them, and counts what it dropped.
func TestDynamicFilterBuildAndApply(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The build side: ids 10..19 and 250 (qty = id%7 < 1 keeps 0, 7, 14, ...).
	build := NewFilter(NewParquetScan("t", tbl, []int{0, 5}, nil, 2), pCmp(plan.OpLt, &expr.Column{Index: 1, Name: "qty", Type: plan.Int32}, pLit(plan.Int32, int32(1))))
	d, err := NewDynamicFilterBuild(build, []int{1}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	btc := testTaskContext(mem, 16)
	rows := collectAll(t, d, btc)
	keys := btc.DynamicFilterKeys()[1]
	if keys == nil || keys.Count() != int64(len(rows)) {
		t.Fatalf("collected %v for %d rows", keys, len(rows))
	}
	want := map[int64]bool{}
	for _, r := range rows {
		want[int64(r[0].(int))] = true
	}

	probe := NewParquetScan("t", tbl, []int{0, 1}, nil, 2)
	ptc := testTaskContext(mem, 16)
	ptc.Analyzer = NewAnalyzer(probe)
	if err := ptc.ExpectDynamicFilter(probe, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := ptc.ExpectDynamicFilter(probe, 3, 1); err == nil {
		t.Fatal("a column out of range accepted")
	}
	if !ptc.PublishDynamicFilter(1, roundTrip(t, keys)) {
		t.Fatal("nobody waited for the filter")
	}
	got := collectAll(t, probe, ptc)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for _, r := range got {
		if !want[int64(r[0].(int))] {
			t.Fatalf("row %v passed the filter", r)
		}
	}
	m := ptc.Analyzer.Metrics()[0]
	if m.DynExpected != 1 || m.DynReceived != 1 || m.DynDropped != 300-int64(len(got)) {
		t.Fatalf("metrics %+v: want 1/1 filters and %d rows dropped", m, 300-len(got))
	}

	// A filter that is not coming ends the wait and filters nothing.
	ptc = testTaskContext(mem, 16)
	if err := ptc.ExpectDynamicFilter(probe, 0, 2); err != nil {
		t.Fatal(err)
	}
	ptc.PublishDynamicFilter(2, nil)
	if n := len(collectAll(t, probe, ptc)); n != 300 {
		t.Fatalf("unknown filter: %d rows, want 300", n)
	}
}

// TestDynamicFilterKeysPartial checks that a task whose build partitions
// were not all read to the end reports no keys: they would be a subset.
func TestDynamicFilterKeysPartial(t *testing.T) {
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDynamicFilterBuild(NewParquetScan("t", tbl, []int{0}, nil, 2), []int{1}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	tc := NewTaskContext()
	s, err := d.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	s.Close()
	if k := tc.DynamicFilterKeys(); k != nil {
		t.Fatalf("keys %v from a partition cut short", k)
	}
	if _, err := NewDynamicFilterBuild(NewParquetScan("t", tbl, []int{0, 2}, nil, 2), []int{1}, []int{1}); err == nil {
		t.Fatal("a decimal key column accepted")
	}
}

// TestDynamicFilterBuildMemory checks that a builder's keys are reserved
// in the task's pool, and that a pool that refuses them costs the filter,
// not the query.
func TestDynamicFilterBuildMemory(t *testing.T) {
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{0, 16} {
		d, err := NewDynamicFilterBuild(NewParquetScan("t", tbl, []int{0}, nil, 1), []int{1}, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		tc := NewTaskContext()
		tc.Memory = mempool.NewPool("test", limit, nil)
		if n := len(collectAll(t, d, tc)); n != 300 {
			t.Fatalf("limit %d: %d rows, want 300", limit, n)
		}
		k := tc.DynamicFilterKeys()[1]
		switch {
		case limit == 0 && (k == nil || tc.Memory.Used() == 0):
			t.Fatalf("no limit: keys %v, %d bytes reserved", k, tc.Memory.Used())
		case limit > 0 && (k != nil || tc.Memory.Used() != 0):
			t.Fatalf("limit %d: keys %v, %d bytes reserved, want none", limit, k, tc.Memory.Used())
		}
	}
}
