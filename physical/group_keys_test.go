package physical

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestGroupTableHashCollision forces a slot whose hash equals another key's
// hash and checks that the key comparison keeps the groups apart.
func TestGroupTableHashCollision(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, types := range [][]arrow.DataType{{plan.Utf8}, {plan.Utf8, plan.Utf8}} {
		tab, err := newGroupTable(types)
		if err != nil {
			t.Fatal(err)
		}
		a, b := stringArray(mem, "a"), stringArray(mem, "b")
		cols := func(x arrow.Array) []arrow.Array {
			if len(types) == 1 {
				return []arrow.Array{x}
			}
			return []arrow.Array{x, x}
		}
		gids := make([]int32, 2)
		newRows := make([]bool, 2)
		if err := tab.lookup(cols(a), 1, gids, newRows); err != nil || gids[0] != 0 || !newRows[0] {
			t.Fatalf("first insert: gid %d new %v err %v", gids[0], newRows[0], err)
		}
		// Give group "a"'s slot the hash of "b" (a simulated collision).
		hb := make([]uint64, 1)
		if err := HashRows(cols(b), hb); err != nil {
			t.Fatal(err)
		}
		for i := range tab.slots {
			if tab.slots[i].gid == 1 {
				tab.slots[i].hash = hb[0]
			}
		}
		ab := stringArray(mem, "b", "b")
		if err := tab.lookup(cols(ab), 2, gids, newRows); err != nil {
			t.Fatal(err)
		}
		if gids[0] != 1 || gids[1] != 1 || !newRows[0] || newRows[1] {
			t.Fatalf("colliding key: gids %v new %v", gids, newRows)
		}
		keys := tab.buildKeys(0, 2, mem)
		if got := keys[0].(*array.String); got.Value(0) != "a" || got.Value(1) != "b" {
			t.Fatalf("keys %v", got)
		}
		joinReleaseArrays(keys)
		a.Release()
		b.Release()
		ab.Release()
	}
}

// TestGroupTableIntKeyModes feeds integer keys in patterns that keep the
// table in its direct index (ascending, descending, clustered, NULLs) and
// that push it out to the slots part way (a far key, then a sparse spread),
// and checks every row's group, "new" flag and the stored keys against a
// map.
func TestGroupTableIntKeyModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	patterns := map[string]func(batch, i int) (int64, bool){
		"ascending clustered": func(b, i int) (int64, bool) { return int64((b*500 + i) / 4), false },
		"descending":          func(b, i int) (int64, bool) { return int64(100000 - b*500 - i), false },
		"random dense":        func(b, i int) (int64, bool) { return int64(rng.IntN(3000)) - 1500, rng.IntN(50) == 0 },
		"far key later": func(b, i int) (int64, bool) {
			if b == 3 && i == 7 {
				return 1 << 40, false
			}
			return int64(rng.IntN(2000)), false
		},
		"sparse": func(b, i int) (int64, bool) { return rng.Int64N(1<<50) * 3, rng.IntN(30) == 0 },
		"ascending to the int64 limit": func(b, i int) (int64, bool) {
			return math.MaxInt64 - 3000 + int64(b*300+i%400), false
		},
		"descending to the int64 limit": func(b, i int) (int64, bool) {
			return math.MinInt64 + 4000 - int64(b*500+i), false
		},
		"extremes": func(b, i int) (int64, bool) {
			return []int64{math.MinInt64, math.MaxInt64, 0, -1}[rng.IntN(4)], false
		},
	}
	for name, gen := range patterns {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tab, err := newGroupTable([]arrow.DataType{plan.Int64})
			if err != nil {
				t.Fatal(err)
			}
			ref := newIntGroupRef()
			const rows = 500
			for b := 0; b < 8; b++ {
				vals := make([]int64, rows)
				isNull := make([]bool, rows)
				for i := range vals {
					vals[i], isNull[i] = gen(b, i)
				}
				ref.lookupAndCheck(t, mem, tab, vals, isNull, fmt.Sprint("batch ", b))
			}
			if wantHashed := name == "far key later" || name == "sparse" || name == "extremes"; tab.hashed != wantHashed {
				t.Errorf("hashed = %v, want %v", tab.hashed, wantHashed)
			}
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			for k := range ref.want {
				lo, hi = min(lo, k), max(hi, k)
			}
			if span := uint64(hi) - uint64(lo) + 1; uint64(len(tab.dgids)) > 4*span {
				t.Errorf("direct index of %d entries for a range of %d keys", len(tab.dgids), span)
			}
			keys := tab.buildKeys(0, tab.numGroups(), mem)
			k := keys[0].(*array.Int64)
			order := ref.order
			if k.Len() != len(order) {
				t.Fatalf("%d groups, want %d", k.Len(), len(order))
			}
			for g, v := range order {
				if (v == nil) != k.IsNull(g) || v != nil && k.Value(g) != *v {
					t.Fatalf("group %d key %v, want %v", g, k.GetOneForMarshal(g), v)
				}
			}
			joinReleaseArrays(keys)
			tab.releaseSlots()
		})
	}
}

// TestGroupTableShortStringKeys feeds batches of one to three string key
// columns, some the short-string path takes (values of up to 8 bytes, few
// distinct) and some it must leave to the hashed path (a long value, a
// NULL, too many distinct values, a buffer ending right after a value), in
// turn, and checks every row's group and "new" flag against a map, and the
// stored keys.
func TestGroupTableShortStringKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	short := []string{"", "A", "N", "R", "F", "O", "MAIL", "SHIP", "REG AIR", "12345678", "a\x00"}
	for cols := 1; cols <= 4; cols++ {
		t.Run(fmt.Sprint(cols, " columns"), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			types := make([]arrow.DataType, cols)
			for c := range types {
				types[c] = plan.Utf8
			}
			tab, err := newGroupTable(types)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int32{}
			var order []string
			for b := 0; b < 12; b++ {
				rows := 1 + rng.IntN(700)
				kind := b % 4 // 0, 1: short; 2: a long value or a NULL; 3: many distinct
				vals := make([][]string, cols)
				valid := make([][]bool, cols)
				for c := 0; c < cols; c++ {
					vals[c], valid[c] = make([]string, rows), make([]bool, rows)
					for i := 0; i < rows; i++ {
						v := short[rng.IntN(4+c)]
						switch {
						case kind == 2 && i == rows/2 && c == 0:
							v = "longer than eight"
						case kind == 3:
							v = fmt.Sprint(rng.IntN(40))
						}
						vals[c][i], valid[c][i] = v, !(kind == 2 && c == cols-1 && i == rows/3)
					}
				}
				arrs := make([]arrow.Array, cols)
				for c := range arrs {
					bl := array.NewStringBuilder(mem)
					bl.AppendValues(vals[c], valid[c])
					arrs[c] = bl.NewArray()
					bl.Release()
				}
				gids, isNew := make([]int32, rows), make([]bool, rows)
				if err := tab.lookup(arrs, rows, gids, isNew); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < rows; i++ {
					key := ""
					for c := 0; c < cols; c++ {
						if valid[c][i] {
							key += fmt.Sprintf("%q|", vals[c][i])
						} else {
							key += "NULL|"
						}
					}
					g, seen := want[key]
					if !seen {
						g = int32(len(order))
						want[key] = g
						order = append(order, key)
					}
					if gids[i] != g || isNew[i] == seen {
						t.Fatalf("batch %d (kind %d) row %d %s: gid %d new %v, want %d new %v", b, kind, i, key, gids[i], isNew[i], g, !seen)
					}
				}
				joinReleaseArrays(arrs)
			}
			keys := tab.buildKeys(0, tab.numGroups(), mem)
			for g, key := range order {
				got := ""
				for c := 0; c < cols; c++ {
					k := keys[c].(*array.String)
					if k.IsNull(g) {
						got += "NULL|"
					} else {
						got += fmt.Sprintf("%q|", k.Value(g))
					}
				}
				if got != key {
					t.Fatalf("group %d keys %s, want %s", g, got, key)
				}
			}
			joinReleaseArrays(keys)
			tab.releaseSlots()
		})
	}
}

// TestGroupTableReturnsToDirect: keys that span a wide range from the first
// batches (two sorted streams far apart, as a final aggregate reads its
// partial results) send the table to its slots; once its groups fill the
// range densely enough it moves back to a direct index, once, and a far
// key later sends it to the slots for good. Every row's group and "new"
// flag is checked against a map, before and after each move.
func TestGroupTableReturnsToDirect(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tab, err := newGroupTable([]arrow.DataType{plan.Int64})
	if err != nil {
		t.Fatal(err)
	}
	ref := newIntGroupRef()
	const rows = 1000
	var wasHashed bool
	for b := 0; b < 302; b++ {
		vals := make([]int64, rows)
		nulls := make([]bool, rows)
		for i := range vals {
			base := int64(b/2) * rows * 8
			if b%2 == 1 {
				base += 3_000_000
			}
			vals[i] = base + int64(i)*8
			if b == 301 && i == 5 {
				vals[i] = 1 << 40 // far away: back to the slots, for good
			}
			if b == 1 && i == 9 {
				// Only in the batch that leaves the direct index: the
				// range kept while hashed must still cover it.
				vals[i] = 4_300_000
			}
			nulls[i] = b == 100 && i == 7
		}
		ref.lookupAndCheck(t, mem, tab, vals, nulls, fmt.Sprint("batch ", b))
		wasHashed = wasHashed || tab.hashed
		if b == 299 && (!wasHashed || tab.hashed || !tab.returned) {
			t.Fatalf("after batch %d: went hashed %v, hashed now %v, returned %v; want back on a direct index", b, wasHashed, tab.hashed, tab.returned)
		}
	}
	if !tab.hashed {
		t.Errorf("a key 2^40 away did not send the table back to its slots")
	}
	tab.releaseSlots()
}

// intGroupRef is the grouping integer keys must get: group ids in order of
// first appearance, all NULLs one group.
type intGroupRef struct {
	want    map[int64]int32
	nullGid int32
	order   []*int64 // each group's key (nil: NULL)
}

func newIntGroupRef() *intGroupRef { return &intGroupRef{want: map[int64]int32{}, nullGid: -1} }

// lookupAndCheck looks up vals (nulls[i]: row i is NULL) in tab and checks
// every row's group id and "new" flag against the reference.
func (r *intGroupRef) lookupAndCheck(t *testing.T, mem memory.Allocator, tab *groupTable, vals []int64, nulls []bool, label string) {
	t.Helper()
	bld := array.NewInt64Builder(mem)
	bld.AppendValues(vals, nil)
	for i, null := range nulls {
		if null {
			bld.SetNull(i)
		}
	}
	col := bld.NewArray()
	bld.Release()
	defer col.Release()
	gids, isNew := make([]int32, len(vals)), make([]bool, len(vals))
	if err := tab.lookup([]arrow.Array{col}, len(vals), gids, isNew); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		g, seen := r.want[v]
		if nulls[i] {
			g, seen = r.nullGid, r.nullGid >= 0
		}
		if !seen {
			g = int32(len(r.order))
			if nulls[i] {
				r.nullGid = g
				r.order = append(r.order, nil)
			} else {
				r.want[v] = g
				r.order = append(r.order, &v)
			}
		}
		if gids[i] != g || isNew[i] == seen {
			t.Fatalf("%s row %d key %d (null %v): gid %d new %v, want %d new %v", label, i, v, nulls[i], gids[i], isNew[i], g, !seen)
		}
	}
}

// TestGroupTableMixedKeysArena groups batches of a string, an int32 and a
// second string key (NULLs in each, arrays sliced out of larger ones, values
// long and empty) through the hashed path, so that the string keys' byte
// arena grows over many batches and the new groups of a batch are stored
// before later rows of the same batch are checked against them; every
// row's group and "new" flag is checked against a map, and the keys built
// back in several ranges.
func TestGroupTableMixedKeysArena(t *testing.T) {
	// Twice: the second table's key stores grow into the buffers the first
	// one gave back (free), which hold its bytes (or, under make test,
	// SLUICE_ALLOC_POISON's), and must read only what they wrote.
	for pass := range 2 {
		t.Run(fmt.Sprint("pass", pass), func(t *testing.T) { mixedKeysArena(t, uint64(pass)) })
	}
}

func mixedKeysArena(t *testing.T, seed uint64) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(21+seed, 22))
	tab, err := newGroupTable([]arrow.DataType{plan.Utf8, arrow.PrimitiveTypes.Int32, plan.Utf8})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int32{}
	var order []string
	nulls := false // odd batches only, so that even ones take the no-NULL paths
	str := func() (string, bool) {
		switch rng.IntN(10) {
		case 0:
			return "", !nulls
		case 1:
			return "", true
		}
		return fmt.Sprintf("value %d %s", rng.IntN(60), string(make([]byte, rng.IntN(30)))), true
	}
	for b := 0; b < 30; b++ {
		rows := 1 + rng.IntN(900)
		pad := rng.IntN(5)
		nulls = b%2 == 1
		sb1, ib, sb2 := array.NewStringBuilder(mem), array.NewInt32Builder(mem), array.NewStringBuilder(mem)
		keys := make([]string, rows)
		for i := 0; i < rows+2*pad; i++ {
			v1, ok1 := str()
			v2, ok2 := str()
			n, okn := int32(rng.IntN(4)), rng.IntN(7) != 0
			sb1.AppendValues([]string{v1}, []bool{ok1})
			sb2.AppendValues([]string{v2}, []bool{ok2})
			ib.AppendValues([]int32{n}, []bool{okn})
			if i >= pad && i < pad+rows {
				keys[i-pad] = fmt.Sprintf("%q %v|%d %v|%q %v", v1, ok1, n*int32(boolInt(okn)), okn, v2, ok2)
			}
		}
		full := []arrow.Array{sb1.NewArray(), ib.NewArray(), sb2.NewArray()}
		sb1.Release()
		ib.Release()
		sb2.Release()
		cols := make([]arrow.Array, 3)
		for c, a := range full {
			cols[c] = array.NewSlice(a, int64(pad), int64(pad+rows))
		}
		joinReleaseArrays(full)
		gids, isNew := make([]int32, rows), make([]bool, rows)
		if err := tab.lookup(cols, rows, gids, isNew); err != nil {
			t.Fatal(err)
		}
		for i, key := range keys {
			g, seen := want[key]
			if !seen {
				g = int32(len(order))
				want[key] = g
				order = append(order, key)
			}
			if gids[i] != g || isNew[i] == seen {
				t.Fatalf("batch %d row %d %s: gid %d new %v, want %d new %v", b, i, key, gids[i], isNew[i], g, !seen)
			}
		}
		joinReleaseArrays(cols)
	}
	if tab.numGroups() != len(order) {
		t.Fatalf("%d groups, want %d", tab.numGroups(), len(order))
	}
	for start := 0; start < len(order); start += 97 {
		end := min(start+97, len(order))
		keys := tab.buildKeys(start, end, mem)
		s1, n, s2 := keys[0].(*array.String), keys[1].(*array.Int32), keys[2].(*array.String)
		for g := start; g < end; g++ {
			i := g - start
			got := fmt.Sprintf("%q %v|%d %v|%q %v", s1.Value(i), s1.IsValid(i), n.Value(i)*int32(boolInt(n.IsValid(i))), n.IsValid(i), s2.Value(i), s2.IsValid(i))
			if got != order[g] {
				t.Fatalf("group %d keys %s, want %s", g, got, order[g])
			}
		}
		joinReleaseArrays(keys)
	}
	tab.free()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BenchmarkGroupStringKeysBuild measures the output of 75,000 string
// groups (a customer's e-mail address, a tenth NULL) in batches of 8,192.
func BenchmarkGroupStringKeysBuild(b *testing.B) {
	mem := memory.NewGoAllocator()
	sb := array.NewStringBuilder(mem)
	const groups = 75_000
	for i := 0; i < groups; i++ {
		if i%10 == 0 {
			sb.AppendNull()
			continue
		}
		sb.Append(fmt.Sprintf("customer.%07d@example.org", i))
	}
	col := sb.NewArray()
	sb.Release()
	defer col.Release()
	tab, err := newGroupTable([]arrow.DataType{arrow.BinaryTypes.String})
	if err != nil {
		b.Fatal(err)
	}
	gids, isNew := make([]int32, groups), make([]bool, groups)
	if err := tab.lookup([]arrow.Array{col}, groups, gids, isNew); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		for start := 0; start < tab.numGroups(); start += 8192 {
			joinReleaseArrays(tab.buildKeys(start, min(start+8192, tab.numGroups()), mem))
		}
	}
}
