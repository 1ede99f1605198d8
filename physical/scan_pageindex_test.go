package physical

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/physical/internal/testutil"
	"sluice/physical/kernels"
	"sluice/plan"
)

// writePageIndexed writes rows [0, 4000) of testParquetBatch as two row
// groups with small pages and a page index.
func writePageIndexed(t *testing.T, path string, pageIndex bool) {
	t.Helper()
	props := []parquet.WriterProperty{
		parquet.WithStats(true), parquet.WithPageIndexEnabled(pageIndex),
		parquet.WithDataPageSize(512), parquet.WithBatchSize(64),
		parquet.WithDictionaryDefault(false),
	}
	rec := testParquetBatch(0, 4000)
	defer rec.Release()
	fw := testutil.NewParquetWriter(t, path, rec.Schema(), pqarrow.DefaultWriterProps(), props...)
	for i, r := range [][2]int64{{0, 2000}, {2000, 4000}} {
		if i > 0 {
			if err := fw.NewRowGroupChecked(); err != nil {
				t.Fatal(err)
			}
		}
		part := rec.NewSlice(r[0], r[1])
		if err := fw.WriteBuffered(part); err != nil {
			t.Fatal(err)
		}
		part.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParquetScanPageIndex reads a file with a page index under pruning
// predicates: the rows read must include every row that satisfies them,
// each once and whole (its columns agree with its id), whatever the batch
// size and PagePruneMaxKept; selective predicates must skip rows.
func TestParquetScanPageIndex(t *testing.T) {
	dir := t.TempDir()
	indexed, plain := filepath.Join(dir, "indexed.parquet"), filepath.Join(dir, "plain.parquet")
	writePageIndexed(t, indexed, true)
	writePageIndexed(t, plain, false)
	i64 := func(v int64) plan.Literal { return plan.Literal{Typ: plan.Int64, Val: v} }
	dec := func(unscaled int64) plan.Literal {
		return plan.Literal{Typ: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Val: decimal128.FromI64(unscaled)}
	}
	tests := []struct {
		name      string
		preds     []ColumnPredicate
		match     func(id int64) bool
		selective bool // rules out most pages
	}{
		{"id = 1234", []ColumnPredicate{{0, plan.OpEq, i64(1234)}}, func(id int64) bool { return id == 1234 }, true},
		{"id in [1990, 2010)", []ColumnPredicate{{0, plan.OpGtEq, i64(1990)}, {0, plan.OpLt, i64(2010)}},
			func(id int64) bool { return id >= 1990 && id < 2010 }, true},
		{"id > 3900", []ColumnPredicate{{0, plan.OpGt, i64(3900)}}, func(id int64) bool { return id > 3900 }, true},
		{"id < 5", []ColumnPredicate{{0, plan.OpLt, i64(5)}}, func(id int64) bool { return id < 5 }, true},
		{"id <> 7", []ColumnPredicate{{0, plan.OpNotEq, i64(7)}}, func(id int64) bool { return id != 7 }, false},
		{"id > 5000", []ColumnPredicate{{0, plan.OpGt, i64(5000)}}, func(id int64) bool { return false }, false}, // row groups pruned: nothing read
		{"price <= 10.50", []ColumnPredicate{{2, plan.OpLtEq, dec(1050)}}, func(id int64) bool { return id*100+50 <= 1050 }, true},
		{"day >= 3000 and qty = 3", []ColumnPredicate{
			{3, plan.OpGtEq, plan.Literal{Typ: plan.Date32, Val: int32(3000)}},
			{5, plan.OpEq, plan.Literal{Typ: plan.Int32, Val: int32(3)}}},
			func(id int64) bool { return id >= 3000 && id%7 == 3 }, false},
		{"name = n123", []ColumnPredicate{{1, plan.OpEq, plan.Literal{Typ: plan.Utf8, Val: "n123"}}},
			func(id int64) bool { return id%1000 == 123 }, true},
		{"score < 100.0", []ColumnPredicate{{4, plan.OpLt, plan.Literal{Typ: plan.Float64, Val: 100.0}}},
			func(id int64) bool { return float64(id)/2 < 100 }, true},
	}
	for _, file := range []string{indexed, plain} {
		tbl, err := catalog.OpenParquet(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			for round := range 3 {
				old := PagePruneMaxKept
				PagePruneMaxKept = rand.Float64()
				if round == 0 {
					PagePruneMaxKept = 1
				}
				batch := 1 + rand.IntN(700)
				t.Run(fmt.Sprintf("%s/%s/keep=%.2f/batch=%d", filepath.Base(file), tt.name, PagePruneMaxKept, batch), func(t *testing.T) {
					defer func() { PagePruneMaxKept = old }()
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					scan := NewParquetScan("t", tbl, []int{0, 1, 2, 3, 4, 5}, tt.preds, 1)
					tc := testTaskContext(mem, batch)
					tc.Analyzer = NewAnalyzer(scan)
					bs := drainPartition(t, scan, 0, tc)
					defer kernels.ReleaseAll(bs)
					seen := map[int64]bool{}
					for _, b := range bs {
						ids := b.Column(0).(*array.Int64)
						for r := 0; r < int(b.NumRows()); r++ {
							id := ids.Value(r)
							if seen[id] {
								t.Fatalf("id %d read twice", id)
							}
							seen[id] = true
							want := []any{id, padName(int(id)), nil, int32(id), float64(id) / 2, int32(id % 7)}
							if id%10 == 9 {
								want[1] = nil
							}
							got := []any{id, testutil.Cell(b.Column(1), r), nil, int32(b.Column(3).(*array.Date32).Value(r)),
								b.Column(4).(*array.Float64).Value(r), b.Column(5).(*array.Int32).Value(r)}
							if d := b.Column(2).(*array.Decimal128).Value(r); d != decimal128.FromI64(id*100+50) {
								t.Fatalf("id %d: price %v", id, d)
							}
							if !slices.Equal(got, want) {
								t.Fatalf("id %d: row %v, want %v", id, got, want)
							}
						}
					}
					for id := range int64(4000) {
						if tt.match(id) && !seen[id] {
							t.Fatalf("id %d matches but was not read (%d rows read)", id, len(seen))
						}
					}
					skipped := tc.Analyzer.Metrics()[0].PageSkipped
					if skipped+int64(len(seen)) > 4000 && skipped > 0 {
						t.Fatalf("%d rows read and %d skipped of 4000", len(seen), skipped)
					}
					if file == indexed && PagePruneMaxKept == 1 && tt.selective && (skipped == 0 || len(seen) > 2000) {
						t.Fatalf("selective predicate on an indexed file: %d rows read, %d skipped", len(seen), skipped)
					}
					if file == plain && skipped != 0 {
						t.Fatalf("no page index, but %d rows skipped", skipped)
					}
				})
			}
		}
	}
}

// TestRowRanges checks the range arithmetic page pruning rests on.
func TestRowRanges(t *testing.T) {
	a := []rowRange{{0, 10}, {20, 30}, {40, 50}}
	b := []rowRange{{5, 25}, {28, 45}}
	if got, want := intersectRanges(a, b), []rowRange{{5, 10}, {20, 25}, {28, 30}, {40, 45}}; !slices.Equal(got, want) {
		t.Fatalf("intersect %v, want %v", got, want)
	}
	if got := intersectRanges(a, nil); got != nil {
		t.Fatalf("intersect with nothing: %v", got)
	}
	var rs []rowRange
	for _, r := range []rowRange{{0, 5}, {5, 8}, {10, 12}, {30, 31}} {
		rs = appendRange(rs, r, 2)
	}
	if want := []rowRange{{0, 12}, {30, 31}}; !slices.Equal(rs, want) {
		t.Fatalf("append %v, want %v", rs, want)
	}
	if rowsIn(rs) != 13 {
		t.Fatalf("rowsIn %d", rowsIn(rs))
	}
}
