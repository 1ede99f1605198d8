package physical

import (
	"github.com/apache/arrow-go/v18/parquet/file"

	"sluice/catalog"
)

// PagePruneMaxKept is the largest share of a read's rows the page index
// may keep for the scan to skip pages. Skipping reads every column through
// arrow's record reader, which can seek, instead of the scan's own
// decoders, which are faster but read every page; so when the index rules
// out little, the read goes on without it. Tests randomize it.
var PagePruneMaxKept = 0.5

// rowRange is a half-open range of rows over the row groups one read
// takes, numbered across them in order.
type rowRange struct{ start, end int64 }

// pageRanges returns the rows of rowGroups (read together, in that order)
// that the page index cannot rule out for the scan's pruning predicates,
// and the number of rows the row groups hold. ranges is nil when the index
// rules nothing out (no predicate, no page index, or every page may
// match). Ranges closer than gap rows are joined, so that a read that runs
// past one range's end (a batch is gap rows at most) never passes the next
// one's start.
func (s *ParquetScan) pageRanges(rdr *file.Reader, rowGroups []int, gap int64) (ranges []rowRange, total int64) {
	schema := s.table.Schema()
	pruned := false
	for _, rg := range rowGroups {
		rows := rdr.MetaData().RowGroup(rg).NumRows()
		keep := []rowRange{{0, rows}}
		// Predicates on one column (a range's two ends) read its index
		// once.
		indexes := map[int]*catalog.PageIndex{}
		for _, p := range s.pruning {
			if p.Value.Val == nil || !p.Op.IsComparison() || p.Column < 0 || p.Column >= schema.NumFields() {
				continue
			}
			leaves := s.table.FieldLeaves(p.Column)
			if len(leaves) != 1 {
				continue
			}
			typ := schema.Field(p.Column).Type
			pi, read := indexes[leaves[0]]
			if !read {
				var err error
				if pi, err = catalog.ReadPageIndex(rdr, rg, leaves[0], typ); err != nil {
					pi = nil
				}
				indexes[leaves[0]] = pi
			}
			if pi == nil {
				continue // no usable index: every page may match
			}
			var may []rowRange
			for i, first := range pi.FirstRows {
				end := rows
				if i+1 < len(pi.FirstRows) {
					end = pi.FirstRows[i+1]
				}
				end = min(end, rows)
				if first >= end {
					continue
				}
				st := pi.Stats[i]
				if pi.AllNull[i] {
					st.NullCount = end - first
				}
				if !provablyFalse(st, end-first, typ, p) {
					may = appendRange(may, rowRange{first, end}, 0)
				}
			}
			keep = intersectRanges(keep, may)
		}
		if len(keep) != 1 || keep[0] != (rowRange{0, rows}) {
			pruned = true
		}
		for _, r := range keep {
			ranges = appendRange(ranges, rowRange{total + r.start, total + r.end}, gap)
		}
		total += rows
	}
	if !pruned {
		return nil, total
	}
	if ranges == nil {
		ranges = []rowRange{} // every row ruled out
	}
	return ranges, total
}

// appendRange appends r to ascending, disjoint ranges, joining it with the
// last one when they are less than gap rows apart (or touch).
func appendRange(rs []rowRange, r rowRange, gap int64) []rowRange {
	if n := len(rs); n > 0 && r.start-rs[n-1].end <= gap {
		rs[n-1].end = max(rs[n-1].end, r.end)
		return rs
	}
	return append(rs, r)
}

// intersectRanges returns the rows in both a and b (each ascending and
// disjoint).
func intersectRanges(a, b []rowRange) []rowRange {
	var out []rowRange
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].start, b[j].start), min(a[i].end, b[j].end)
		if lo < hi {
			out = append(out, rowRange{lo, hi})
		}
		if a[i].end < b[j].end {
			i++
		} else {
			j++
		}
	}
	return out
}

// rowsIn is the number of rows ranges cover.
func rowsIn(ranges []rowRange) int64 {
	var n int64
	for _, r := range ranges {
		n += r.end - r.start
	}
	return n
}
