package catalog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// PageIndex is what a column chunk's page index says about its data
// pages: where each starts (its first row within the row group) and its
// statistics.
type PageIndex struct {
	// FirstRows[i] is page i's first row within the row group, ascending.
	FirstRows []int64
	// Stats[i] are page i's statistics. A page holding only NULLs has
	// AllNull[i] set and no min/max.
	Stats   []ColumnStats
	AllNull []bool
}

// ReadPageIndex reads the page index of leaf's column chunk in row group
// rg, converting its statistics for a column read as arrow type typ (the
// type the footer's statistics are converted for). It returns nil, with no
// error, when the writer wrote no page index for the chunk (most writers
// but parquet-mr and Spark write none by default). A page index that does
// not decode is an error: the caller reads the chunk whole.
func ReadPageIndex(rdr *file.Reader, rg, leaf int, typ arrow.DataType) (pi *PageIndex, err error) {
	// arrow-go panics on a column index it cannot decode.
	defer func() {
		if r := recover(); r != nil {
			pi, err = nil, fmt.Errorf("row group %d column %d: bad page index: %v", rg, leaf, r)
		}
	}()
	idx, err := rdr.GetPageIndexReader().RowGroup(rg)
	if err != nil || idx == nil {
		return nil, err
	}
	oi, err := idx.GetOffsetIndex(leaf)
	if err != nil || oi == nil {
		return nil, err
	}
	ci, err := idx.GetColumnIndex(leaf)
	if err != nil || ci == nil {
		return nil, err
	}
	locs := oi.GetPageLocations()
	nullPages := ci.GetNullPages()
	if len(locs) == 0 || len(nullPages) != len(locs) {
		return nil, fmt.Errorf("row group %d column %d: page index lists %d pages with %d statistics", rg, leaf, len(locs), len(nullPages))
	}
	pi = &PageIndex{FirstRows: make([]int64, len(locs)), Stats: make([]ColumnStats, len(locs)), AllNull: nullPages}
	for i, l := range locs {
		pi.FirstRows[i] = l.FirstRowIndex
		if i > 0 && l.FirstRowIndex < pi.FirstRows[i-1] || l.FirstRowIndex < 0 {
			return nil, fmt.Errorf("row group %d column %d: page index rows out of order", rg, leaf)
		}
		pi.Stats[i].NullCount = -1
	}
	if pi.FirstRows[0] != 0 {
		return nil, fmt.Errorf("row group %d column %d: first page starts at row %d", rg, leaf, pi.FirstRows[0])
	}
	if ci.IsSetNullCounts() {
		if nc := ci.GetNullCounts(); len(nc) == len(locs) {
			for i, n := range nc {
				pi.Stats[i].NullCount = n
			}
		}
	}
	mins, maxs := pageBounds(ci)
	if len(mins) != len(locs) || len(maxs) != len(locs) {
		return pi, nil // no usable min/max: null pages and counts still help
	}
	for i := range locs {
		if nullPages[i] {
			continue
		}
		lo, hi := statBounds(mins[i], maxs[i], typ)
		if lo != nil && hi != nil {
			pi.Stats[i].HasMinMax, pi.Stats[i].Min, pi.Stats[i].Max = true, lo, hi
		}
	}
	return pi, nil
}

// pageBounds returns a column index's per-page minimums and maximums as
// the values statBounds takes (entries of all-NULL pages are zero values).
func pageBounds(ci metadata.ColumnIndex) (mins, maxs []any) {
	switch c := ci.(type) {
	case *metadata.TypedColumnIndex[int32]:
		return anys(c.MinValues()), anys(c.MaxValues())
	case *metadata.TypedColumnIndex[int64]:
		return anys(c.MinValues()), anys(c.MaxValues())
	case *metadata.TypedColumnIndex[float32]:
		return anys(c.MinValues()), anys(c.MaxValues())
	case *metadata.TypedColumnIndex[float64]:
		return anys(c.MinValues()), anys(c.MaxValues())
	case *metadata.TypedColumnIndex[bool]:
		return anys(c.MinValues()), anys(c.MaxValues())
	case *metadata.TypedColumnIndex[parquet.ByteArray]:
		return anys(c.MinValues()), anys(c.MaxValues())
	case *metadata.TypedColumnIndex[parquet.FixedLenByteArray]:
		return anys(c.MinValues()), anys(c.MaxValues())
	}
	return nil, nil
}

func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
