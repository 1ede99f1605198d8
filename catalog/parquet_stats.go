package catalog

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// DistinctCount implements ColumnStatistics. For integer and date columns
// the footer's min/max bound the distinct values (max-min+1, at most the row
// count); other types are unknown. The join-order heuristics use it to tell
// a key join from a many-to-many join such as TPC-H's nation keys.
func (t *ParquetTable) DistinctCount(col int) int64 {
	if col < 0 || col >= t.schema.NumFields() || t.schema.Field(col).Type.ID() == arrow.DECIMAL128 {
		// A decimal's range counts its steps, not the values it holds.
		return -1
	}
	lo, hi, ok := t.IntRange(col)
	if !ok {
		return -1
	}
	return min(hi-lo+1, t.rows)
}

// IntRange implements ColumnStatistics: the smallest and largest value of
// an integer, date or decimal column (unscaled, when it fits 64 bits) over
// every row group's footer statistics.
func (t *ParquetTable) IntRange(col int) (lo, hi int64, ok bool) {
	for _, f := range t.Files {
		for _, rg := range f.RowGroups {
			if col >= len(rg.Columns) || !rg.Columns[col].HasMinMax {
				return 0, 0, false
			}
			mn, ok1 := asInt64(rg.Columns[col].Min)
			mx, ok2 := asInt64(rg.Columns[col].Max)
			if !ok1 || !ok2 {
				return 0, 0, false
			}
			if !ok || mn < lo {
				lo = mn
			}
			if !ok || mx > hi {
				hi = mx
			}
			ok = true
		}
	}
	return lo, hi, ok
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case decimal128.Num:
		if x.HighBits() == int64(x.LowBits())>>63 { // fits 64 bits
			return int64(x.LowBits()), true
		}
	}
	return 0, false
}

var _ ColumnStatistics = (*ParquetTable)(nil)
