package physical

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
)

// Runtime join filters. A hash join whose probe side is a Parquet scan
// hands that scan, once its build side is known, the set of build keys as
// a bitmap over their range; the scan drops the rows whose key is not in it
// before shaping them (decimal widening, dictionary decoding, the filter's
// copy) and before the join probes them one by one. Only joins that never
// output a probe row without a match use one (inner, right semi, and the
// joins that output build rows), only on a single integer key, and only a
// probe key that is a scan column passed through unchanged (projections,
// filters, the coalescing of partitions, and the probe side of inner,
// right outer, full outer and right semi joins below, so that lineitem in
// q5 is filtered by both its supplier and its order keys, and TPC-DS
// store_sales by its date before it meets store_returns). A scan whose filter keeps nearly every row
// stops applying it (lineitem against all of orders).
//
// A published filter also skips whole row groups: before it reads a row
// group, the scan compares the filter's keys with the group's min/max
// statistics of the key column (rulesOut).
//
// The join and the scan meet through their TaskContext: the join registers
// a filter for the scan before executing its probe side, the scan takes the
// filters registered for it when it starts, and the join fills its filter
// in when the build side is complete. The scan reads nothing until every
// join filter it took is filled in: a row group read before would be read
// whole, without the groups the filter skips or the rows it drops, and a
// join whose build side turned out empty never asks its probe side for a
// row, so a probe scan that read ahead read for nothing (TPC-DS q24 read
// all of customer behind a join that found no rows; an empty build side
// publishes a filter that rules out every row group). The join fills its
// filter in right after its build and before it asks for the first probe
// row: the scan gives up only reading ahead while the build side is read.
// A cross-stage dynamic filter (dynamic_filter.go) is not waited for: it
// comes from another stage, perhaps only after the scan is done
// (pipelined mode); once it comes it filters every row group and batch
// read after.

// runtimeFilter is one join's filter of one scan column; keys is nil until
// the join has built its table (and stays nil when the table's keys give
// no bitmap).
type runtimeFilter struct {
	col  int // the scan's output column
	key  int // which of the join's keys it is (a join may have several)
	keys atomic.Pointer[keyBitmap]
	// ready is closed, once, when a join's filter is published (nil for
	// a cross-stage dynamic filter, which no scan waits for).
	ready chan struct{}
	once  sync.Once
	// published: a cross-stage dynamic filter has come (or will not).
	published atomic.Bool
	// A cross-stage dynamic filter (dynamic_filter.go) has its keys in
	// dyn instead, and counts what it drops in m (nil: not analyzed).
	dynamic bool
	strings bool // a dynamic filter of a string column
	dyn     atomic.Pointer[KeySet]
	m       *opMetrics
}

// keySelector is what a scan asks of a filter's keys.
type keySelector interface {
	selectKeys(col arrow.Array, sel []int32) []int32
	anyIn(mn, mx int64) bool
}

// selector returns the filter's keys, or nil while they are unknown.
func (f *runtimeFilter) selector() keySelector {
	if b := f.keys.Load(); b != nil {
		return b
	}
	if d := f.dyn.Load(); d != nil {
		return d
	}
	return nil
}

// publish makes the filter of build table t available, once per task.
func (f *runtimeFilter) publish(t *joinBuildTable) {
	f.once.Do(func() {
		if b := buildKeyBitmap(t, f.key); b != nil {
			f.keys.Store(b)
		}
		f.settle()
	})
}

// settle wakes the scans waiting for the filter.
func (f *runtimeFilter) settle() { close(f.ready) }

// publishNone settles the filter without keys: the join's build side
// spilled, so no set of its keys is held, and the scan keeps every row.
func (f *runtimeFilter) publishNone() { f.once.Do(f.settle) }

// keyBitmap is the set of a build side's non-NULL integer keys: bit k-lo.
type keyBitmap struct {
	lo   int64
	bits []uint64
	span uint64
}

// joinKeyRef names one key of one join and a scan it filters (a key read
// from a UNION ALL filters a scan in each branch).
type joinKeyRef struct {
	h    *HashJoin
	key  int
	scan *ParquetScan
}

// runtimeFilters holds a task's runtime filters by the scan they apply to.
// The zero value is ready to use.
type runtimeFilters struct {
	mu     sync.Mutex
	byScan map[*ParquetScan][]*runtimeFilter
	byJoin map[joinKeyRef]*runtimeFilter
	byID   map[int][]*runtimeFilter // dynamic filters, by filter ID
}

// forJoin returns the filter join h registered (registering it on its
// first call, for column col of scan), shared by all of the task's
// partitions of h.
func (r *runtimeFilters) forJoin(h *HashJoin, scan *ParquetScan, col, key int) *runtimeFilter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.byJoin[joinKeyRef{h, key, scan}]; ok {
		return f
	}
	if r.byJoin == nil {
		r.byJoin, r.byScan = map[joinKeyRef]*runtimeFilter{}, map[*ParquetScan][]*runtimeFilter{}
	}
	f := &runtimeFilter{col: col, key: key, ready: make(chan struct{})}
	r.byJoin[joinKeyRef{h, key, scan}] = f
	r.byScan[scan] = append(r.byScan[scan], f)
	return f
}

// runtimeFilters returns the task's runtime filter registry.
func (tc *TaskContext) runtimeFilters() *runtimeFilters {
	if r := tc.filters.Load(); r != nil {
		return r
	}
	tc.filters.CompareAndSwap(nil, &runtimeFilters{})
	return tc.filters.Load()
}

// forScan returns the filters registered for scan (none when no join of
// the task registered any: the registry is not created for the asking).
func (r *runtimeFilters) forScan(scan *ParquetScan) []*runtimeFilter {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runtimeFilter(nil), r.byScan[scan]...)
}

// maxFilterSpan bounds a key bitmap (16 MiB).
const maxFilterSpan = 1 << 27

// filterTarget is a scan column a join's probe key reads unchanged: the
// join's key-th key may filter it.
type filterTarget struct {
	scan     *ParquetScan
	col, key int
}

// runtimeFilterTargets returns the scan columns the probe keys of h read,
// when h may filter its probe side at all. Each gets a filter of its own:
// a probe row whose value of any one key no build row has cannot match,
// and of a join on item and date (TPC-DS q72's inventory) the date filter
// may skip row groups where the item filter drops rows.
func (h *HashJoin) runtimeFilterTargets() []filterTarget {
	switch h.joinType {
	case JoinInner, JoinRightSemi, JoinLeftSemi, JoinLeft, JoinLeftAnti:
	default:
		return nil // probe rows without a match are output
	}
	if h.mode != JoinCollectLeft || h.nullAware {
		return nil
	}
	var out []filterTarget
	var build, probe []Operator // walked once, when a key reaches a scan
	for k, rk := range h.rightKeys {
		c, ok := rk.(*expr.Column)
		if !ok {
			continue
		}
		for _, t := range traceProbeColumns(h.right, c.Index, nil, true) {
			if build == nil {
				build, probe = PreOrder(h.left), PreOrder(h.right)
			}
			// A scan the build side reads too would wait for the filter
			// its own rows are to make; one that another branch of a
			// union reads too would lose rows that branch may need.
			reads := 0
			for _, op := range probe {
				if op == Operator(t.scan) {
					reads++
				}
			}
			if reads == 1 && !slices.Contains(build, Operator(t.scan)) {
				out = append(out, filterTarget{t.scan, t.col, k})
			}
		}
	}
	return out
}

// probeColumn is a scan column a probe key reads unchanged.
type probeColumn struct {
	scan *ParquetScan
	col  int
}

// TraceProbeColumn follows output column col of op, the probe side of a
// join that drops its unmatched probe rows, down to the Parquet scan
// column it reads unchanged, if any: through projections, filters, the
// coalescing of partitions and the probe side of lower inner, right outer,
// full outer and right semi joins, where dropping a row that the join above
// cannot match changes nothing else. A stage placeholder is crossed when
// exchange gives the body of the stage it reads (nil: never crossed).
func TraceProbeColumn(op Operator, col int, exchange func(*UnresolvedExchange) (Operator, bool)) (*ParquetScan, int, bool) {
	if t := traceProbeColumns(op, col, exchange, false); len(t) == 1 {
		return t[0].scan, t[0].col, true
	}
	return nil, 0, false
}

// traceProbeColumns is TraceProbeColumn that, with unions, also goes into
// every input of a UNION ALL, whose column col is each input's: a row of
// any branch that the join above cannot match is dropped there as well
// as here, so each branch that reads the column unchanged from a scan
// gives a target (TPC-DS q5's sales and returns of each channel, joined
// with a fortnight of date_dim after their union).
func traceProbeColumns(op Operator, col int, exchange func(*UnresolvedExchange) (Operator, bool), unions bool) []probeColumn {
	for {
		switch x := op.(type) {
		case *Union:
			if !unions {
				return nil
			}
			var out []probeColumn
			for _, in := range x.inputs {
				out = append(out, traceProbeColumns(in, col, exchange, true)...)
			}
			return out
		case *Projection:
			src, ok := x.exprs[col].(*expr.Column)
			if !ok {
				return nil
			}
			col, op = src.Index, x.input
			continue
		case *Filter:
			op = x.input
			continue
		case *CoalescePartitions:
			op = x.input // the task reads every partition of its input
			continue
		case *DynamicFilterBuild:
			op = x.input
			continue
		case *UnresolvedExchange:
			if exchange == nil {
				return nil
			}
			body, ok := exchange(x)
			if !ok {
				return nil
			}
			op = body // the stage's output columns are its body's
			continue
		case *HashJoin:
			// A lower join's probe column: the rows it drops there never
			// reach this join either, as long as the lower join drops
			// unmatched rows itself and outputs probe columns unchanged.
			switch x.joinType {
			case JoinInner, JoinRight, JoinFull:
				// A right or full outer join also outputs its probe rows
				// unchanged, matched or not (and a build row that loses
				// its match to the filter comes out with a NULL key,
				// which this join drops too).
				nl := len(x.left.Schema().Fields())
				if col < nl {
					return nil // a build column of the lower join
				}
				col, op = col-nl, x.right
				continue
			case JoinRightSemi:
				op = x.right
				continue
			}
		case *ParquetScan:
			switch x.schema.Field(col).Type.ID() {
			case arrow.INT64, arrow.INT32:
				return []probeColumn{{x, col}}
			case arrow.STRING, arrow.LARGE_STRING:
				if exchange != nil {
					return []probeColumn{{x, col}} // only dynamic filters take strings
				}
			}
		}
		return nil
	}
}

// TraceBuildColumn follows output column col of op, a join's build side,
// down to the stage placeholder whose column holds a superset of its
// values (NULLs aside): every operator on the way outputs only values of
// that column it read (projections of the column, filters, sorts, limits,
// the coalescing of partitions, joins of either side, the group keys of
// aggregates). The keys the placeholder's stage writes are then all the
// keys the build side can have.
func TraceBuildColumn(op Operator, col int) (*UnresolvedExchange, int, bool) {
	for {
		switch x := op.(type) {
		case *Projection:
			src, ok := x.exprs[col].(*expr.Column)
			if !ok {
				return nil, 0, false
			}
			col, op = src.Index, x.input
			continue
		case *Filter:
			op = x.input
			continue
		case *CoalescePartitions:
			op = x.input
			continue
		case *Sort:
			op = x.input
			continue
		case *SortPreservingMerge:
			op = x.input
			continue
		case *Limit:
			op = x.input
			continue
		case *DynamicFilterBuild:
			op = x.input
			continue
		case *HashJoin:
			nl := len(x.left.Schema().Fields())
			switch x.joinType {
			case JoinLeftSemi, JoinLeftAnti:
				op = x.left
			case JoinRightSemi, JoinRightAnti:
				op = x.right
			default:
				if col < nl {
					op = x.left
				} else {
					col, op = col-nl, x.right
				}
			}
			continue
		case *HashAggregate:
			if col >= len(x.groupBy) {
				return nil, 0, false
			}
			src, ok := x.groupBy[col].(*expr.Column)
			if !ok {
				return nil, 0, false
			}
			col, op = src.Index, x.input
			continue
		case *UnresolvedExchange:
			return x, col, true
		}
		return nil, 0, false
	}
}

// buildKeyBitmap returns the bitmap of a build table's keys, or nil when
// the table is not on one integer key or its keys span too wide a range.
func buildKeyBitmap(t *joinBuildTable, key int) *keyBitmap {
	var vals []int64
	var k arrow.Array
	switch {
	case t.pack != nil:
		// Two integer keys packed into one: take the one asked for back
		// out (a NULL in either key is a NULL packed key, which no probe
		// row matches anyway).
		k = t.keys[0]
		packed, ok := joinIntKeyValues(t.keys, nil)
		if !ok || key > 1 {
			return nil
		}
		vals = make([]int64, len(packed))
		for r, v := range packed {
			if key == 0 {
				vals[r] = v/t.pack.bspan + t.pack.amin
			} else {
				vals[r] = v%t.pack.bspan + t.pack.bmin
			}
		}
	case key < len(t.keys):
		k = t.keys[key]
		var ok bool
		if vals, ok = joinIntKeyValues(t.keys[key:key+1], nil); !ok {
			return nil
		}
	default:
		return nil
	}
	lo, n, ok := joinKeySpan(vals, k)
	if !ok && k.Len() == k.NullN() {
		// No build row has a key: no probe row can match, and the scan
		// reads none of its row groups (anyIn is false everywhere).
		return &keyBitmap{}
	}
	span := uint64(n)
	if !ok || span > maxFilterSpan {
		return nil
	}
	b := &keyBitmap{lo: lo, span: span, bits: make([]uint64, (span+63)/64)}
	setKeyBits(b.bits, vals, k, lo)
	return b
}

// setKeyBits sets bit v-lo of bits for every non-NULL key v (vals are the
// values of k).
func setKeyBits(bits []uint64, vals []int64, k arrow.Array, lo int64) {
	nulls := k.NullN() > 0
	for r, v := range vals {
		if nulls && k.IsNull(r) {
			continue
		}
		d := uint64(v - lo)
		bits[d>>6] |= 1 << (d & 63)
	}
}

// selectKeys keeps, of sel (all rows when nil), the rows of col whose
// value is a key of b; NULL never is.
func (b *keyBitmap) selectKeys(col arrow.Array, sel []int32) []int32 {
	switch a := col.(type) {
	case *array.Int64:
		sel = selectBitmapKeys(a.Int64Values(), b, sel)
	case *array.Int32:
		sel = selectBitmapKeys(a.Int32Values(), b, sel)
	default:
		return sel // another type: keep everything
	}
	if col.NullN() > 0 {
		k := 0
		for _, i := range sel {
			if col.IsValid(int(i)) {
				sel[k] = i
				k++
			}
		}
		sel = sel[:k]
	}
	return sel
}

// selectBitmapKeys is selectKeys over values, NULLs aside. Every row is
// written and the count advances by its bit, without a branch on it (the
// outcome is as unpredictable as the join's selectivity).
func selectBitmapKeys[T int32 | int64](vals []T, b *keyBitmap, sel []int32) []int32 {
	lo, span, bits := b.lo, b.span, b.bits
	k := 0
	if sel == nil {
		sel = make([]int32, len(vals))
		for i, v := range vals {
			sel[k] = int32(i)
			if d := uint64(int64(v) - lo); d < span {
				k += int(bits[d>>6] >> (d & 63) & 1)
			}
		}
		return sel[:k]
	}
	for _, i := range sel {
		sel[k] = i
		if d := uint64(int64(vals[i]) - lo); d < span {
			k += int(bits[d>>6] >> (d & 63) & 1)
		}
	}
	return sel[:k]
}

// runtimeFilterState is one scan partition's use of its runtime filters:
// a filter that keeps nearly all the rows of its first batches is dropped.
type runtimeFilterState struct {
	filters []*runtimeFilter
	seen    []int64 // rows each filter judged
	kept    []int64 // rows each filter kept
	off     []bool  // dropped: not selective enough
}

// runtimeFilterTrial is how many rows a filter is judged on before it may
// be dropped, and runtimeFilterKeep the share of kept rows above which it
// is.
const (
	runtimeFilterTrial = 1 << 16
	runtimeFilterKeep  = 0.9
)

func newRuntimeFilterState(fs []*runtimeFilter) *runtimeFilterState {
	if len(fs) == 0 {
		return nil
	}
	return &runtimeFilterState{filters: fs, seen: make([]int64, len(fs)), kept: make([]int64, len(fs)), off: make([]bool, len(fs))}
}

// apply narrows sel (nil: every row of rec) by the filters that are ready
// and still on; readPos maps the scan's output columns to rec's. It
// returns the selection and whether any row is left.
func (st *runtimeFilterState) apply(rec arrow.RecordBatch, readPos []int, sel []int32) ([]int32, bool) {
	if st == nil {
		return sel, true
	}
	n := int(rec.NumRows())
	for i, f := range st.filters {
		b := f.selector()
		if b == nil || st.off[i] {
			continue
		}
		before := n
		if sel != nil {
			before = len(sel)
		}
		sel = b.selectKeys(rec.Column(readPos[f.col]), sel)
		st.seen[i] += int64(before)
		st.kept[i] += int64(len(sel))
		if f.m != nil {
			f.m.dynDropped.Add(int64(before - len(sel)))
		}
		if st.seen[i] >= runtimeFilterTrial && float64(st.kept[i]) > runtimeFilterKeep*float64(st.seen[i]) {
			st.off[i] = true
		}
		if len(sel) == 0 {
			return nil, false
		}
	}
	if sel != nil && len(sel) == n {
		return nil, true
	}
	return sel, true
}

// anyIn reports whether b holds a key in [mn, mx].
func (b *keyBitmap) anyIn(mn, mx int64) bool {
	if b.span == 0 || mx < b.lo || mn > b.lo+int64(b.span)-1 {
		return false
	}
	from := uint64(max(mn, b.lo) - b.lo)
	to := uint64(min(mx, b.lo+int64(b.span)-1) - b.lo)
	for w := from >> 6; w <= to>>6; w++ {
		word := b.bits[w]
		if w == from>>6 {
			word &= ^uint64(0) << (from & 63)
		}
		if w == to>>6 && to&63 != 63 {
			word &= (uint64(1) << (to&63 + 1)) - 1
		}
		if word != 0 {
			return true
		}
	}
	return false
}

// await blocks until every join filter of the scan is published (see the
// top of this file), or ctx ends.
func (st *runtimeFilterState) await(ctx context.Context) error {
	if st == nil {
		return nil
	}
	for _, f := range st.filters {
		if f.ready == nil {
			continue
		}
		select {
		case <-f.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// rulesOut reports whether a published filter proves that row group u of
// scan s holds no key of its build side: the keys in the group's min/max
// range are all absent, or every value of the column there is NULL. The
// scan then skips the group without reading it. A fact table written in
// date order (TPC-DS inventory) loses most of its row groups to a filter
// on a few weeks of dates.
func (st *runtimeFilterState) rulesOut(s *ParquetScan, u parquetUnit) bool {
	return st.rulingOut(s, u) != nil
}

// skips is rulesOut for the unit the scan is about to read: a cross-stage
// dynamic filter that rules it out counts its rows as dropped.
func (st *runtimeFilterState) skips(s *ParquetScan, u parquetUnit) bool {
	f := st.rulingOut(s, u)
	if f != nil && f.m != nil {
		f.m.dynDropped.Add(u.rows)
	}
	return f != nil
}

// rulingOut returns the filter that rules out row group u, if any.
func (st *runtimeFilterState) rulingOut(s *ParquetScan, u parquetUnit) *runtimeFilter {
	if st == nil {
		return nil
	}
	rg := s.table.Files[u.file].RowGroups[u.rowGroup]
	for _, f := range st.filters {
		b := f.selector()
		if b == nil || f.col >= len(s.projection) {
			continue
		}
		field := s.projection[f.col]
		if field >= len(rg.Columns) {
			continue
		}
		cs := rg.Columns[field]
		if cs.NullCount >= 0 && cs.NullCount == rg.NumRows {
			return f
		}
		if !cs.HasMinMax {
			continue
		}
		mn, ok1 := asInt64(cs.Min)
		mx, ok2 := asInt64(cs.Max)
		if ok1 && ok2 && !b.anyIn(mn, mx) {
			return f
		}
	}
	return nil
}
