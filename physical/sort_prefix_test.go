package physical

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/kernels"
	"sluice/plan"
)

// TestSortRefsByPrefix sorts random rows of every key type (ints, dates,
// floats with NaN, -0 and infinities, decimals beyond int64, strings with
// NUL bytes, shared prefixes and lengths around 7 and 8, booleans, NULLs)
// by one to eight keys in random directions and NULL placements, with
// random thresholds for encoding and for ranking strings, over several
// batches, and checks that the result is a permutation in the
// comparator's order.
func TestSortRefsByPrefix(t *testing.T) {
	defer func(n, m int) { minPrefixSortRows, maxRankedStrings = n, m }(minPrefixSortRows, maxRankedStrings)
	rng := rand.New(rand.NewPCG(31, 32))
	schema := jaSchema("i32", arrow.PrimitiveTypes.Int32, "i64", plan.Int64, "f", plan.Float64,
		"d", &arrow.Decimal128Type{Precision: 38, Scale: 2}, "s", plan.Utf8, "b", arrow.FixedWidthTypes.Boolean,
		"dt", arrow.FixedWidthTypes.Date32)
	strs := []string{"", "a", "ab", "ab\x00", "abcdefg", "abcdefgh", "abcdefgi", "abcdefghij", "Electronics", "Children", "Books", "\xff\xff", "zz"}
	floats := []float64{math.NaN(), math.Inf(-1), math.Inf(1), 0, math.Copysign(0, -1), -1.5, 1.5, 1e300, -1e-300}
	decs := []string{"0", "-0.01", "0.01", "92233720368547758.07", "92233720368547758.08", "-92233720368547758.08", "-92233720368547758.09", "99999999999999999999.99", "-99999999999999999999.99", "12.34"}
	value := func(c int) any {
		if rng.IntN(6) == 0 {
			return nil
		}
		switch c {
		case 0:
			return []int{math.MinInt32, -1, 0, 1, math.MaxInt32, 7}[rng.IntN(6)]
		case 1:
			return []int{math.MinInt64, -1, 0, 1, math.MaxInt64, 7}[rng.IntN(6)]
		case 2:
			return floats[rng.IntN(len(floats))]
		case 3:
			return decs[rng.IntN(len(decs))]
		case 4:
			return strs[rng.IntN(len(strs))]
		case 5:
			return rng.IntN(2) == 0
		}
		return rng.IntN(5) - 2
	}
	for iter := 0; iter < 300; iter++ {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		minPrefixSortRows = rng.IntN(40)
		maxRankedStrings = rng.IntN(12)
		var keys []SortKey
		for n := 1 + rng.IntN(8); len(keys) < n; {
			c := rng.IntN(7)
			f := schema.Field(c)
			keys = append(keys, SortKey{Expr: jaCol(c, f.Name, f.Type), Desc: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0})
		}
		cmp, err := newRowComparator(keys)
		if err != nil {
			t.Fatal(err)
		}
		var refs []kernels.RowRef
		var batches []arrow.RecordBatch
		for b := 0; b < 1+rng.IntN(3); b++ {
			rows := make([][]any, rng.IntN(60))
			for i := range rows {
				rows[i] = make([]any, 7)
				for c := range rows[i] {
					rows[i][c] = value(c)
				}
			}
			batch := jaBatch(t, mem, schema, rows)
			batches = append(batches, batch)
			arrs, err := cmp.evalKeys(batch, mem)
			if err != nil {
				t.Fatal(err)
			}
			cmp.addBatch(arrs)
			for r := range rows {
				refs = append(refs, kernels.RowRef{Batch: int32(b), Row: int32(r)})
			}
		}
		sorted := append([]kernels.RowRef(nil), refs...)
		sortRefsByPrefix(cmp, sorted)
		seen := map[kernels.RowRef]bool{}
		for i, r := range sorted {
			if seen[r] {
				t.Fatalf("iteration %d: row %v twice", iter, r)
			}
			seen[r] = true
			if i > 0 && cmp.compare(sorted[i-1], r) > 0 {
				row := func(r kernels.RowRef) string {
					return fmt.Sprint(jaRows([]arrow.RecordBatch{batches[r.Batch].NewSlice(int64(r.Row), int64(r.Row)+1)}))
				}
				t.Fatalf("iteration %d keys %v: %s sorted before %s", iter, keys, row(sorted[i-1]), row(r))
			}
		}
		if len(seen) != len(refs) {
			t.Fatalf("iteration %d: %d rows out of %d", iter, len(seen), len(refs))
		}
		cmp.release()
		kernels.ReleaseAll(batches)
		mem.AssertSize(t, 0)
	}
}
