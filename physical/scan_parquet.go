package physical

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	pqcol "sluice/physical/datasource/parquet"
	"sluice/physical/kernels"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

// ParquetScan reads a Parquet table. Its work units are (file, row group)
// pairs that survive min/max pruning, spread over the output partitions
// balanced by row count. Each partition decodes on its own goroutine, one
// batch ahead of its consumer.
type ParquetScan struct {
	name       string
	table      *catalog.ParquetTable
	projection []int
	pruning    []ColumnPredicate
	schema     *arrow.Schema
	// parts[p] are partition p's units, in file order.
	parts [][]parquetUnit
	units int

	// shares are the tasks' shares of the scan (scan_share.go), by task;
	// execution state, never part of the plan.
	shareMu sync.Mutex
	shares  map[*TaskContext]*scanShare
}

// parquetUnit is one row group to read.
type parquetUnit struct {
	file, rowGroup int
	rows           int64
}

// NewParquetScan returns a scan of t producing the columns at projection
// (indices into t's schema, in that order; empty: zero-column batches that
// only carry row counts), skipping row groups that pruning proves empty,
// over `partitions` output partitions. name is the table name, for EXPLAIN.
func NewParquetScan(name string, t *catalog.ParquetTable, projection []int, pruning []ColumnPredicate, partitions int) *ParquetScan {
	partitions = max(partitions, 1)
	s := &ParquetScan{
		name:       name,
		table:      t,
		projection: slices.Clone(projection),
		pruning:    slices.Clone(pruning),
		schema:     ProjectSchema(t.Schema(), projection),
	}
	var units []parquetUnit
	for fi, f := range t.Files {
		for gi := range f.RowGroups {
			rg := &f.RowGroups[gi]
			if rowGroupMayMatch(rg, t.Schema(), pruning) {
				units = append(units, parquetUnit{file: fi, rowGroup: gi, rows: rg.NumRows})
			}
		}
	}
	s.units = len(units)
	s.parts = balanceUnits(units, partitions, func(u parquetUnit) int64 { return u.rows })
	for _, p := range s.parts {
		slices.SortFunc(p, func(a, b parquetUnit) int {
			return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.rowGroup, b.rowGroup))
		})
	}
	return s
}

// CheckParquetProjection refuses a scan of a column whose type is not one
// of sluice's (lists, structs, maps, binary, times, UUIDs): the engine has
// no operators or wire encoding for them, so rather than answer in
// process and fail to ship the plan to a cluster, every mode refuses the
// query the same way, naming the column. The table's other columns stay
// readable.
func CheckParquetProjection(name string, t *catalog.ParquetTable, projection []int) error {
	for _, c := range projection {
		if c < 0 || c >= t.Schema().NumFields() {
			continue
		}
		f := t.Schema().Field(c)
		if _, err := expr.TypeToProto(f.Type); err != nil {
			return fmt.Errorf("table %s: column %q has type %s, which sluice does not support (select the table's other columns)", name, f.Name, f.Type)
		}
	}
	return nil
}

// balanceUnits deals units to n partitions, largest first, each to the
// partition with the least weight so far (lowest index on ties), so the split
// is deterministic.
func balanceUnits[U any](units []U, n int, weight func(U) int64) [][]U {
	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(weight(units[b]), weight(units[a])) })
	parts := make([][]U, n)
	load := make([]int64, n)
	for _, i := range order {
		best := 0
		for p := 1; p < n; p++ {
			if load[p] < load[best] {
				best = p
			}
		}
		parts[best] = append(parts[best], units[i])
		load[best] += weight(units[i])
	}
	return parts
}

// ProjectSchema is the schema of the fields at projection.
func ProjectSchema(s *arrow.Schema, projection []int) *arrow.Schema {
	fields := make([]arrow.Field, len(projection))
	for i, c := range projection {
		fields[i] = s.Field(c)
	}
	return arrow.NewSchema(fields, nil)
}

// Schema implements Operator.
func (s *ParquetScan) Schema() *arrow.Schema { return s.schema }

// Children implements Operator.
func (s *ParquetScan) Children() []Operator { return nil }

// OutputPartitioning implements Operator.
func (s *ParquetScan) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: len(s.parts)}
}

// NumUnits is the number of row groups left to read after pruning.
func (s *ParquetScan) NumUnits() int { return s.units }

func (s *ParquetScan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ParquetScan: %s files=%d rowGroups=%d/%d partitions=%d projection=[%s]",
		s.name, len(s.table.Files), s.units, s.table.NumRowGroups(), len(s.parts), fieldNames(s.schema))
	if len(s.pruning) > 0 {
		ps := make([]string, len(s.pruning))
		for i, p := range s.pruning {
			ps[i] = predicateString(p, s.table.Schema())
		}
		fmt.Fprintf(&b, " pruning=[%s]", strings.Join(ps, ", "))
	}
	return b.String()
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func predicateString(p ColumnPredicate, s *arrow.Schema) string {
	if p.Column < 0 || p.Column >= s.NumFields() {
		return p.String()
	}
	return fmt.Sprintf("%s %s %s", s.Field(p.Column).Name, p.Op, p.Value.String())
}

// Execute implements Operator.
func (s *ParquetScan) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	return s.execute(ctx, partition, tc, nil)
}

// execute is Execute for a scan read by a Filter: filters are the filter's
// conjuncts (compiled against the scan's schema). Those on a single string
// column the scan reads as a dictionary are evaluated once per dictionary
// entry, and rows whose entry fails one are dropped before their strings
// are decoded; those on values read as they are, per batch; everything
// else is left to the Filter, which checks every row it receives unless
// the stream marks the batch as judged on every conjunct exactly
// (prefetchStream.lastFiltered).
func (s *ParquetScan) execute(ctx context.Context, partition int, tc *TaskContext, filters []expr.Expr) (Stream, error) {
	if partition < 0 || partition >= len(s.parts) {
		return nil, fmt.Errorf("parquet scan %s: partition %d out of range [0, %d)", s.name, partition, len(s.parts))
	}
	if st := s.sharedStream(ctx, partition, tc, filters); st != nil {
		return st, nil
	}
	return startPrefetchMarked(ctx, s.producer(partition, tc, filters)), nil
}

// producer returns what reads partition's row groups and emits their
// batches (execute's, or a reader of a task's share of the scan).
func (s *ParquetScan) producer(partition int, tc *TaskContext, filters []expr.Expr) func(ctx context.Context, emit func(arrow.RecordBatch, bool) error) error {
	units := s.parts[partition]
	batchSize := tc.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	var rfs *runtimeFilterState
	if len(s.projection) > 0 {
		rfs = newRuntimeFilterState(tc.filters.Load().forScan(s))
	}
	var m *opMetrics
	if tc.Analyzer != nil {
		m = tc.Analyzer.metricsOf(s)
	}
	return func(ctx context.Context, emit func(arrow.RecordBatch, bool) error) error {
		if err := rfs.await(ctx); err != nil {
			return err
		}
		for start := 0; start < len(units); {
			if rfs.skips(s, units[start]) {
				start++
				continue
			}
			// Row groups are read together, one file at a time.
			end := start + 1
			for end < len(units) && units[end].file == units[start].file && !rfs.rulesOut(s, units[end]) {
				end++
			}
			var err error
			if len(s.projection) == 0 {
				err = emitRowCounts(ctx, s.schema, units[start:end], batchSize, func(b arrow.RecordBatch) error { return emit(b, false) })
			} else {
				err = s.readFile(ctx, tc.Alloc, batchSize, units[start:end], filters, rfs, m, emit)
			}
			if err != nil {
				return fmt.Errorf("parquet scan %s: %w", s.name, err)
			}
			start = end
		}
		return nil
	}
}

// emitRowCounts produces zero-column batches for an empty projection
// straight from the footer's row counts, without reading data.
func emitRowCounts(ctx context.Context, schema *arrow.Schema, units []parquetUnit, batchSize int, emit func(arrow.RecordBatch) error) error {
	for _, u := range units {
		for left := u.rows; left > 0; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(left, int64(batchSize))
			if err := emit(array.NewRecordBatch(schema, nil, n)); err != nil {
				return err
			}
			left -= n
		}
	}
	return nil
}

// readFile reads the projected columns of units, which all belong to one
// file, and emits them batch by batch.
func (s *ParquetScan) readFile(ctx context.Context, mem memory.Allocator, batchSize int, units []parquetUnit, filters []expr.Expr, rfs *runtimeFilterState, m *opMetrics, emit func(arrow.RecordBatch, bool) error) error {
	pf := s.table.Files[units[0].file]
	fi := pf.Info()
	path := fi.Path
	// The reader's own buffers (compressed and decompressed pages, the
	// footer) are written whole before they are read, so recycled ones
	// are handed over without clearing them first.
	props := parquet.NewReaderProperties(mempool.Unzeroed(mem))
	// Stream column chunks instead of reading each whole into a fresh
	// slice first: by default the reader allocates (and the runtime
	// zeroes) a slice the size of the chunk, preads into it, and then
	// copies every page out of it into its decompression buffer. Streamed,
	// a 16 KiB buffer takes the page headers and each page body is read
	// from the file straight into the decompression buffer. 22 queries
	// twice, three pairs: in process 3.40/3.28/3.21 -> 3.18/3.16/3.22 s
	// (user CPU -5 %), pipelined 3.64/3.49/3.40 -> 3.51/3.25/3.32 s.
	//
	// Not for an object in an object store, though: there every read is a
	// request, so each column chunk is fetched whole, in one.
	props.BufferedStreamEnabled = !fi.Remote()
	rdr, err := catalog.OpenParquetReader(ctx, fi, props, pf.Footer())
	if err != nil {
		return err
	}
	defer rdr.Close()
	// Read each projected field once, in order of first use.
	var fields, leaves []int
	readPos := make([]int, len(s.projection)) // output column → read column
	for i, c := range s.projection {
		j := slices.Index(fields, c)
		if j < 0 {
			j = len(fields)
			fields = append(fields, c)
			leaves = append(leaves, s.table.FieldLeaves(c)...)
		}
		readPos[i] = j
	}
	rowGroups := make([]int, len(units))
	for i, u := range units {
		rowGroups[i] = s.table.Files[u.file].RowGroups[u.rowGroup].Index
	}
	aprops := pqarrow.ArrowReadProperties{BatchSize: int64(batchSize)}
	dictLeaves := pqcol.DictionaryOnlyStrings(rdr, leaves, rowGroups)
	for _, leaf := range dictLeaves {
		aprops.SetReadDict(leaf, true)
	}
	df := s.dictFilters(filters, dictLeaves)
	var vf *valueFilters // chosen at the first batch, when the read types are known
	fr, err := pqarrow.NewFileReader(rdr, aprops, mem)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	// Read with the metadata-free manifest the table's schema came from, so
	// an Arrow schema stored in the file cannot turn strings into
	// dictionaries or large strings (other than the ones asked for above).
	if fr.Manifest, err = catalog.ParquetArrowSchema(rdr, &aprops); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	facts := readFacts{rawDecimals: pqcol.ReadDecimalsRaw(fr.Manifest, rdr, fields)}
	rawDates := pqcol.ReadDatesRaw(fr.Manifest, rdr, fields)
	// The page index, where the writer wrote one, may rule out pages of
	// the row groups; only the rows of the others are read then.
	var ranges []rowRange
	var rowsTotal int64
	if len(s.pruning) > 0 {
		ranges, rowsTotal = s.pageRanges(rdr, rowGroups, int64(batchSize))
		if ranges != nil && float64(rowsIn(ranges)) > PagePruneMaxKept*float64(rowsTotal) {
			ranges = nil
		}
		if ranges != nil {
			if m != nil {
				m.pageSkipped.Add(rowsTotal - rowsIn(ranges))
			}
			if len(ranges) == 0 {
				return nil
			}
		}
	}
	// The decoders of physical/datasource/parquet read the columns they
	// can (delta-encoded integers, dictionary codes, dictionary integers,
	// flat numbers, decimals and strings); arrow's record reader reads the
	// rest, and every column when pages are skipped: it can seek to a row
	// (through the offset index) and they cannot.
	own, dict := make([]pqcol.Column, len(fields)), make([]bool, len(fields))
	if ranges == nil {
		own, dict = pqcol.OpenColumns(fr.Manifest, rdr, fields, rowGroups, dictLeaves)
	}
	facts.checkedCodes = dict
	var arrowLeaves []int
	for j, c := range fields {
		if own[j] != nil {
			defer own[j].Close()
			continue
		}
		arrowLeaves = append(arrowLeaves, s.table.FieldLeaves(c)...)
	}
	var rr pqarrow.RecordReader
	if len(arrowLeaves) > 0 {
		if rr, err = fr.GetRecordReader(ctx, arrowLeaves, rowGroups); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		defer rr.Release()
	}
	if ranges == nil {
		rowsTotal = 0
		for _, rg := range rowGroups {
			rowsTotal += rdr.MetaData().RowGroup(rg).NumRows()
		}
		ranges = []rowRange{{0, rowsTotal}}
	}
	var readSchema *arrow.Schema
	castCtx := compute.WithAllocator(ctx, mem)
	var pos int64 // the next row the readers give
	for _, r := range ranges {
		if r.start != pos {
			// Only arrow's reader reads when there is more than one
			// range (see above), and ranges are far enough apart that
			// a batch read past one's end stops before the next.
			if rr == nil || r.start < pos {
				return fmt.Errorf("read %s: internal: cannot seek from row %d to %d", path, pos, r.start)
			}
			if err := rr.SeekToRow(r.start); err != nil {
				return fmt.Errorf("read %s: seek to row %d: %w", path, r.start, err)
			}
			pos = r.start
		}
		for rowsLeft := r.end - r.start; rowsLeft > 0; {
			if err := ctx.Err(); err != nil {
				return err
			}
			rec, err := nextReadBatch(mem, rr, own, rawDates, fr.Manifest, fields, &readSchema, batchSize, rowsLeft)
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			if rec == nil {
				if rr != nil {
					if err := rr.Err(); err != nil && err != io.EOF {
						return fmt.Errorf("read %s: %w", path, err)
					}
				}
				return fmt.Errorf("read %s: %d rows of the row groups were not read", path, rowsLeft)
			}
			pos += rec.NumRows()
			if rec.NumRows() > rowsLeft {
				// Read past the range's end: those rows are ruled out.
				cut := rec.NewSlice(0, rowsLeft)
				rec.Release()
				rec = cut
			}
			rowsLeft -= rec.NumRows()
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			out, exact, err := s.filterAndShape(castCtx, mem, rec, readPos, facts, filters, &vf, df, rfs)
			rec.Release()
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			if out == nil {
				continue
			}
			if err := emit(out, exact); err != nil {
				return err
			}
		}
	}
	if rr != nil {
		if err := rr.Err(); err != nil && err != io.EOF {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	return nil
}

// nextReadBatch returns the next batch as read, one column per read field:
// arrow's record reader's columns and the scan's own (own[j] not nil), or
// nil at the end; dates read as their stored integers (rawDates) are
// Date32 again. The caller releases it.
func nextReadBatch(mem memory.Allocator, rr pqarrow.RecordReader, own []pqcol.Column, rawDates []bool, m *pqarrow.SchemaManifest, fields []int, readSchema **arrow.Schema, batchSize int, rowsLeft int64) (arrow.RecordBatch, error) {
	var rec arrow.RecordBatch
	n := min(int64(batchSize), rowsLeft)
	if rr != nil {
		if !rr.Next() {
			return nil, nil
		}
		rec = rr.RecordBatch()
		n = rec.NumRows()
	} else if n == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, len(fields))
	k := 0
	for j := range fields {
		var a arrow.Array
		if own[j] == nil {
			a = rec.Column(k)
			k++
			a.Retain()
		} else {
			var err error
			if a, err = own[j].Read(mem, int(n)); err != nil {
				for _, c := range cols[:j] {
					c.Release()
				}
				return nil, fmt.Errorf("column %s: %w", m.Fields[fields[j]].Field.Name, err)
			}
		}
		if rawDates[j] && a.DataType().ID() == arrow.INT32 {
			d := a.Data()
			dd := array.NewData(arrow.FixedWidthTypes.Date32, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
			a.Release()
			a = array.NewDate32Data(dd)
			dd.Release()
		}
		cols[j] = a
	}
	if *readSchema == nil {
		fs := make([]arrow.Field, len(fields))
		for j := range fields {
			fs[j] = arrow.Field{Name: m.Fields[fields[j]].Field.Name, Type: cols[j].DataType(), Nullable: true}
		}
		*readSchema = arrow.NewSchema(fs, nil)
	}
	out := array.NewRecordBatch(*readSchema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// readFacts are facts about the read columns (fields' order) that shape
// needs.
type readFacts struct {
	// rawDecimals marks decimals read as their stored integers
	// (pqcol.ReadDecimalsRaw), to be scaled into decimal128.
	rawDecimals []bool
	// checkedCodes marks dictionary columns whose codes the scan's own
	// reader checked against their dictionary (dictColumn).
	checkedCodes []bool
}

// filterAndShape applies the scan's value and dictionary filters to a
// batch as read and shapes the rows that pass (nil when none does). The
// value filters are chosen at the first batch, when the read types are
// known. exact reports that the filters were every one of filters and
// judged every row as the Filter would, so the Filter may pass the batch
// on as it is.
func (s *ParquetScan) filterAndShape(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, readPos []int, facts readFacts, filters []expr.Expr, vf **valueFilters, df dictFilters, rfs *runtimeFilterState) (arrow.RecordBatch, bool, error) {
	if *vf == nil {
		*vf = s.valueFilters(filters, rec, readPos)
	}
	sel, keep, vExact := (*vf).selection(mem, rec, readPos)
	dExact := true
	if keep {
		sel, keep, dExact = df.selection(mem, rec, readPos, sel)
	}
	if keep {
		// Rows no join above can match go too; the predicate's judgment
		// (exact) is about the rest.
		sel, keep = rfs.apply(rec, readPos, sel)
	}
	if !keep {
		return nil, false, nil
	}
	exact := len(filters) > 0 && vExact && dExact && (*vf).count+len(df) == len(filters)
	out, err := s.shape(ctx, mem, rec, readPos, sel, facts)
	return out, exact, err
}

// shape builds an output batch from a batch as read: columns in projection
// order, cast to the table's normalized types where the file stores another.
//
// sel, if not nil, lists the rows to keep (the rest failed a dictionary
// filter).
//
// facts says how each read column was read.
func (s *ParquetScan) shape(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, readPos []int, sel []int32, facts readFacts) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(readPos))
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	rows := rec.NumRows()
	if sel != nil {
		rows = int64(len(sel))
	}
	for i, j := range readPos {
		col := rec.Column(j)
		want := s.schema.Field(i).Type
		if d, ok := col.(*array.Dictionary); ok && want.ID() == arrow.STRING {
			dec, err := pqcol.DecodeStringDictionary(mem, d, sel, facts.checkedCodes[j])
			if err != nil {
				release()
				return nil, fmt.Errorf("column %s: %w", s.schema.Field(i).Name, err)
			}
			cols[i] = dec
			continue
		}
		if facts.rawDecimals[j] && want.ID() == arrow.DECIMAL128 {
			dec, err := integersToDecimal(mem, col, want, sel)
			if err != nil {
				release()
				return nil, fmt.Errorf("column %s: %w", s.schema.Field(i).Name, err)
			}
			cols[i] = dec
			continue
		}
		if sel != nil {
			taken, err := kernels.TakeArray(mem, col, sel)
			if err != nil {
				release()
				return nil, fmt.Errorf("column %s: %w", s.schema.Field(i).Name, err)
			}
			col = taken
			defer taken.Release()
		}
		if arrow.TypeEqual(col.DataType(), want) {
			col.Retain()
			cols[i] = col
			continue
		}
		if col.DataType().ID() == arrow.LIST || want.ID() == arrow.LIST {
			// A list read under other field names or nullability is the
			// same data: relabel it. arrow-go's cast of lists runs kernels
			// in goroutines of its own, where a panic takes the process
			// down, so it is never used for them.
			relabeled, err := relabelList(col, want)
			if err != nil {
				release()
				return nil, fmt.Errorf("column %s: %w", s.schema.Field(i).Name, err)
			}
			cols[i] = relabeled
			continue
		}
		cast, err := compute.CastArray(ctx, col, compute.SafeCastOptions(want))
		if err != nil {
			release()
			return nil, fmt.Errorf("column %s: cast %s to %s: %w", s.schema.Field(i).Name, col.DataType(), want, err)
		}
		cols[i] = cast
	}
	out := array.NewRecordBatch(s.schema, cols, rows)
	release()
	return out, nil
}

// rowGroupMayMatch reports whether a row group can hold rows satisfying
// every predicate; false only when its statistics prove otherwise.
func rowGroupMayMatch(rg *catalog.RowGroup, schema *arrow.Schema, preds []ColumnPredicate) bool {
	for _, p := range preds {
		if p.Column < 0 || p.Column >= len(rg.Columns) || p.Column >= schema.NumFields() || !p.Op.IsComparison() {
			continue
		}
		if provablyFalse(rg.Columns[p.Column], rg.NumRows, schema.Field(p.Column).Type, p) {
			return false
		}
	}
	return true
}

// provablyFalse reports whether `column Op value` is false or NULL for every
// row of a chunk with statistics st.
func provablyFalse(st catalog.ColumnStats, rows int64, typ arrow.DataType, p ColumnPredicate) bool {
	if p.Value.Val == nil {
		return false
	}
	if rows > 0 && st.NullCount == rows {
		return true // a comparison with NULL is never true
	}
	if !st.HasMinMax {
		return false
	}
	if typ.ID() == arrow.FLOAT64 && (p.Op == plan.OpGt || p.Op == plan.OpGtEq || p.Op == plan.OpNotEq) {
		// NaN is greater than every number (expr.CompareFloats), so it
		// satisfies these; writers leave NaN out of min and max.
		return false
	}
	cMin, ok1 := compareStat(st.Min, typ, p.Value)
	cMax, ok2 := compareStat(st.Max, typ, p.Value)
	if !ok1 || !ok2 {
		return false
	}
	switch p.Op {
	case plan.OpEq:
		return cMin > 0 || cMax < 0
	case plan.OpNotEq:
		return cMin == 0 && cMax == 0
	case plan.OpLt:
		return cMin >= 0
	case plan.OpLtEq:
		return cMin > 0
	case plan.OpGt:
		return cMax <= 0
	case plan.OpGtEq:
		return cMax < 0
	}
	return false
}

// maxExactFloatInt bounds the integers float64 represents exactly.
const maxExactFloatInt = 1 << 53

// compareStat compares a statistic of a column of type typ with a literal:
// the sign of stat - lit. ok is false when the two cannot be compared
// exactly.
func compareStat(stat any, typ arrow.DataType, lit plan.Literal) (int, bool) {
	switch typ.ID() {
	case arrow.INT32, arrow.INT64:
		s, ok := asInt64(stat)
		if !ok {
			return 0, false
		}
		switch lit.Typ.ID() {
		case arrow.INT32, arrow.INT64:
			v, ok := asInt64(lit.Val)
			return cmp.Compare(s, v), ok
		case arrow.FLOAT64:
			v, ok := lit.Val.(float64)
			if !ok || math.IsNaN(v) || s > maxExactFloatInt || s < -maxExactFloatInt {
				return 0, false
			}
			return cmp.Compare(float64(s), v), true
		case arrow.DECIMAL128:
			v, ok := lit.Val.(decimal128.Num)
			if !ok {
				return 0, false
			}
			return compareDecimal(decimal128.FromI64(s), 0, v, lit.Typ.(*arrow.Decimal128Type).Scale)
		}
	case arrow.FLOAT64:
		s, ok := stat.(float64)
		if !ok || math.IsNaN(s) {
			return 0, false
		}
		switch lit.Typ.ID() {
		case arrow.INT32, arrow.INT64:
			v, ok := asInt64(lit.Val)
			if !ok || v > maxExactFloatInt || v < -maxExactFloatInt {
				return 0, false
			}
			return cmp.Compare(s, float64(v)), true
		case arrow.FLOAT64:
			v, ok := lit.Val.(float64)
			if !ok || math.IsNaN(v) {
				return 0, false
			}
			return cmp.Compare(s, v), true
		}
	case arrow.DECIMAL128:
		s, ok := stat.(decimal128.Num)
		if !ok {
			return 0, false
		}
		scale := typ.(*arrow.Decimal128Type).Scale
		switch lit.Typ.ID() {
		case arrow.INT32, arrow.INT64:
			v, ok := asInt64(lit.Val)
			if !ok {
				return 0, false
			}
			return compareDecimal(s, scale, decimal128.FromI64(v), 0)
		case arrow.DECIMAL128:
			v, ok := lit.Val.(decimal128.Num)
			if !ok {
				return 0, false
			}
			return compareDecimal(s, scale, v, lit.Typ.(*arrow.Decimal128Type).Scale)
		}
	case arrow.DATE32:
		s, ok1 := stat.(int32)
		v, ok2 := lit.Val.(int32)
		if lit.Typ.ID() == arrow.DATE32 && ok1 && ok2 {
			return cmp.Compare(s, v), true
		}
	case arrow.STRING:
		s, ok1 := stat.(string)
		v, ok2 := lit.Val.(string)
		if lit.Typ.ID() == arrow.STRING && ok1 && ok2 {
			return strings.Compare(s, v), true
		}
	case arrow.BOOL:
		s, ok1 := stat.(bool)
		v, ok2 := lit.Val.(bool)
		if lit.Typ.ID() == arrow.BOOL && ok1 && ok2 {
			return cmp.Compare(b2i(s), b2i(v)), true
		}
	}
	return 0, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// compareDecimal compares two decimals of different scales exactly, by
// raising the smaller scale; ok is false if that overflows.
func compareDecimal(a decimal128.Num, sa int32, b decimal128.Num, sb int32) (int, bool) {
	var err error
	switch {
	case sa < sb:
		a, err = a.Rescale(sa, sb)
	case sb < sa:
		b, err = b.Rescale(sb, sa)
	}
	if err != nil {
		return 0, false
	}
	return a.Cmp(b), true
}

// prefetchStream runs a producer on its own goroutine, which stays up to
// prefetchDepth batches ahead of the consumer, so decoding overlaps with the
// work downstream.
type prefetchStream struct {
	ch     chan prefetched
	cancel context.CancelFunc
	done   chan struct{} // closed when the producer has returned
	err    error         // the producer's error; read only after ch is closed
	ended  bool
	closed bool
	// filtered: the batch Next returned last was marked filtered.
	filtered bool
	// waiting: Next is parked on an empty channel.
	waiting atomic.Bool
}

// prefetched is a batch on its way to the reader. filtered marks a batch
// a Parquet scan applied the reading Filter's whole predicate to, exactly
// (see ParquetScan.execute).
type prefetched struct {
	b        arrow.RecordBatch
	filtered bool
}

// prefetchDepth is how many batches a producer may run ahead.
const prefetchDepth = 2

// startPrefetch starts produce on a goroutine. produce calls emit for each
// batch, handing over ownership; emit fails once the stream is closed or
// ctx is done.
func startPrefetch(ctx context.Context, produce func(ctx context.Context, emit func(arrow.RecordBatch) error) error) *prefetchStream {
	return startPrefetchMarked(ctx, func(ctx context.Context, emit func(arrow.RecordBatch, bool) error) error {
		return produce(ctx, func(b arrow.RecordBatch) error { return emit(b, false) })
	})
}

// startPrefetchMarked is startPrefetch for a producer that marks the
// batches it filtered exactly (lastFiltered).
func startPrefetchMarked(ctx context.Context, produce func(ctx context.Context, emit func(b arrow.RecordBatch, filtered bool) error) error) *prefetchStream {
	pctx, cancel := context.WithCancel(ctx)
	s := &prefetchStream{ch: make(chan prefetched, prefetchDepth), cancel: cancel, done: make(chan struct{})}
	emit := func(b arrow.RecordBatch, filtered bool) error {
		select {
		case s.ch <- prefetched{b, filtered}:
			// A consumer parked in Next was woken by the send, but
			// waits behind this goroutine on its processor, up to a
			// scheduler time slice when the other processors are as busy
			// (pipelined streaming queries: first row after 6-9 ms
			// instead of 2-3): hand it the processor now.
			if s.waiting.Load() {
				runtime.Gosched()
			}
			return nil
		case <-pctx.Done():
			b.Release()
			return pctx.Err()
		}
	}
	go func() {
		defer close(s.done)
		err := RunSafe(func() error {
			checkFailpoint(FailpointScan)
			return produce(pctx, emit)
		})
		if err == nil && pctx.Err() != nil {
			err = pctx.Err() // never let a cancelled producer look finished
		}
		s.err = err
		close(s.ch)
	}()
	return s
}

// Next implements Stream.
func (s *prefetchStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.ended {
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var p prefetched
	ok := false
	select {
	case p, ok = <-s.ch:
	default:
		s.waiting.Store(true)
		select {
		case <-ctx.Done():
			s.waiting.Store(false)
			return nil, ctx.Err()
		case p, ok = <-s.ch:
		}
		s.waiting.Store(false)
	}
	if ok {
		s.filtered = p.filtered
		return p.b, nil
	}
	s.ended = true
	if s.err != nil {
		return nil, s.err
	}
	return nil, io.EOF
}

// lastFiltered reports whether the batch Next returned last was marked
// filtered by its producer.
func (s *prefetchStream) lastFiltered() bool { return s.filtered }

// Close implements Stream: it stops the producer, releases what it had
// buffered and waits for it.
func (s *prefetchStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.cancel()
	for p := range s.ch {
		p.b.Release()
	}
	<-s.done
	if s.err == nil {
		s.err = fmt.Errorf("stream closed")
	}
	s.ended = true
}

// dictFilter is one pushed conjunct on a dictionary-read string column:
// pos is the column's position in the scan's output, truth the conjunct's
// value per entry of the dictionary it was last evaluated on.
type dictFilter struct {
	pos   int
	pred  expr.Expr
	dict  arrow.ArrayData // dictionary truth was computed for
	truth []bool
}

type dictFilters []*dictFilter

// dictFilters picks the conjuncts that read exactly one column, a string
// column read as a dictionary from this file.
func (s *ParquetScan) dictFilters(filters []expr.Expr, dictLeaves []int) dictFilters {
	var out dictFilters
	for _, f := range filters {
		cols := expr.ColumnIndexes(f)
		if len(cols) != 1 || f.DataType().ID() != arrow.BOOL {
			continue
		}
		pos := cols[0]
		if pos < 0 || pos >= len(s.projection) || s.schema.Field(pos).Type.ID() != arrow.STRING {
			continue
		}
		leaves := s.table.FieldLeaves(s.projection[pos])
		if len(leaves) == 1 && slices.Contains(dictLeaves, leaves[0]) {
			out = append(out, &dictFilter{pos: pos, pred: f})
		}
	}
	return out
}

// selection returns the rows of rec that pass every dictionary filter (nil:
// all of them), whether any row is left, and whether every filter judged
// every row. A row whose value is NULL is kept for the Filter to judge; so
// is every row of a batch on which a conjunct fails to evaluate.
//
// sel, if not nil, lists the rows still kept by earlier filters; the
// result is a subset of it.
func (fs dictFilters) selection(mem memory.Allocator, rec arrow.RecordBatch, readPos []int, sel []int32) ([]int32, bool, bool) {
	if len(fs) == 0 {
		return sel, true, true
	}
	n := int(rec.NumRows())
	exact := true
	// sel: rows still kept; nil until a filter applies
	for _, f := range fs {
		d, ok := rec.Column(readPos[f.pos]).(*array.Dictionary)
		if !ok {
			exact = false
			continue
		}
		ix, ok := d.Indices().(*array.Int32)
		if !ok || !f.evaluate(mem, d.Dictionary(), rec.Schema(), readPos) {
			exact = false
			continue
		}
		codes, truth, nulls := ix.Int32Values(), f.truth, d.NullN() > 0
		if !nulls {
			sel = selectByCode(codes, truth, sel)
			continue
		}
		// A code outside the dictionary keeps its row: decoding reports
		// the broken file. So does a NULL row, for the Filter to judge.
		exact = false
		pass := func(i int) bool {
			c := codes[i]
			return (nulls && d.IsNull(i)) || uint32(c) >= uint32(len(truth)) || truth[c]
		}
		if sel == nil {
			sel = make([]int32, n)
			k := 0
			for i := range codes {
				sel[k] = int32(i)
				if pass(i) {
					k++
				}
			}
			sel = sel[:k]
			continue
		}
		k := 0
		for _, i := range sel {
			sel[k] = i
			if pass(int(i)) {
				k++
			}
		}
		sel = sel[:k]
	}
	switch {
	case sel == nil:
		return nil, true, exact
	case len(sel) == 0:
		return nil, false, exact
	case len(sel) == n:
		return nil, true, exact
	}
	return sel, true, exact
}

// selectByCode keeps the rows whose dictionary code is true in truth: of
// all rows when sel is nil, else of sel (overwritten). A code outside the
// dictionary keeps its row: decoding reports the broken file. The loops
// write every row and advance by the truth value, without a branch on it.
func selectByCode(codes []int32, truth []bool, sel []int32) []int32 {
	k := 0
	if sel == nil {
		sel = make([]int32, len(codes))
		for i, c := range codes {
			sel[k] = int32(i)
			if uint32(c) >= uint32(len(truth)) {
				k++
				continue
			}
			k += b2i(truth[c])
		}
		return sel[:k]
	}
	for _, i := range sel {
		c := codes[i]
		sel[k] = i
		if uint32(c) >= uint32(len(truth)) {
			k++
			continue
		}
		k += b2i(truth[c])
	}
	return sel[:k]
}

// valueFilters are the conjuncts of a Filter directly over the scan that
// read only columns the file hands over in their output type (dates,
// integers, floats, plain strings; not dictionaries), and comparisons of a
// decimal stored as integers with a literal, judged on the integers
// (rawDecimalConjunct). The scan evaluates them on each batch as read and
// shapes only the rows that pass, so that decoding dictionaries, widening
// decimals and the Filter's own copy are spent on those rows alone. The Filter above
// still evaluates its whole predicate (every function is deterministic, so
// the rows the scan kept pass these conjuncts again); if the conjuncts fail
// to evaluate here every row is kept, for the Filter to report.
type valueFilters struct {
	pred  expr.Expr // the conjuncts ANDed; nil: none
	count int       // how many conjuncts pred holds
	cols  []int     // output positions pred reads
	sel   []int32   // scratch: selection indices
}

func (s *ParquetScan) valueFilters(filters []expr.Expr, rec arrow.RecordBatch, readPos []int) *valueFilters {
	vf := &valueFilters{}
	for _, f := range filters {
		if f.DataType().ID() != arrow.BOOL {
			continue
		}
		cols := expr.ColumnIndexes(f)
		ok := len(cols) > 0
		for _, pos := range cols {
			ok = ok && pos >= 0 && pos < len(readPos) &&
				arrow.TypeEqual(rec.Column(readPos[pos]).DataType(), s.schema.Field(pos).Type)
		}
		if !ok {
			if f = rawDecimalConjunct(f, rec, readPos); f == nil {
				continue
			}
		}
		vf.count++
		if vf.pred == nil {
			vf.pred = f
		} else {
			vf.pred = &expr.Binary{Op: plan.OpAnd, L: vf.pred, R: f, Type: arrow.FixedWidthTypes.Boolean}
		}
		for _, pos := range cols {
			if !slices.Contains(vf.cols, pos) {
				vf.cols = append(vf.cols, pos)
			}
		}
	}
	return vf
}

// rawDecimalConjunct rewrites a comparison of a decimal column the file
// stores as integers (INT32 or INT64 unscaled values, as DuckDB and Spark
// write them) with a literal of the column's own type into the same
// comparison of the stored integers with the literal's unscaled value, so
// the scan can judge it before widening the column. Nil when f is not such
// a comparison, or the literal is outside the stored type's range (the
// Filter above judges those).
func rawDecimalConjunct(f expr.Expr, rec arrow.RecordBatch, readPos []int) expr.Expr {
	b, ok := f.(*expr.Binary)
	if !ok || !b.Op.IsComparison() {
		return nil
	}
	c, lit, colLeft := b.L, b.R, true
	if _, isCol := c.(*expr.Column); !isCol {
		c, lit, colLeft = b.R, b.L, false
	}
	col, ok1 := c.(*expr.Column)
	l, ok2 := lit.(*expr.Literal)
	if !ok1 || !ok2 || col.Index < 0 || col.Index >= len(readPos) || col.Type.ID() != arrow.DECIMAL128 ||
		!arrow.TypeEqual(l.Value.Typ, col.Type) {
		return nil
	}
	v, ok := l.Value.Val.(decimal128.Num)
	if !ok || v.HighBits() != int64(v.LowBits())>>63 {
		return nil // NULL, or beyond int64
	}
	unscaled := int64(v.LowBits())
	var raw plan.Literal
	switch stored := rec.Column(readPos[col.Index]).DataType(); stored.ID() {
	case arrow.INT64:
		raw = plan.Literal{Typ: stored, Val: unscaled}
	case arrow.INT32:
		if unscaled < math.MinInt32 || unscaled > math.MaxInt32 {
			return nil
		}
		raw = plan.Literal{Typ: stored, Val: int32(unscaled)}
	default:
		return nil
	}
	rc := &expr.Column{Index: col.Index, Name: col.Name, Type: raw.Typ}
	rl := &expr.Literal{Value: raw}
	if colLeft {
		return &expr.Binary{Op: b.Op, L: rc, R: rl, Type: b.Type}
	}
	return &expr.Binary{Op: b.Op, L: rl, R: rc, Type: b.Type}
}

// selection returns the rows of rec that pass every value filter (nil: all
// of them), whether any row is left, and whether the filters judged every
// row (they did unless they failed to evaluate). The slice is reused by
// the next call.
func (vf *valueFilters) selection(mem memory.Allocator, rec arrow.RecordBatch, readPos []int) ([]int32, bool, bool) {
	if vf.pred == nil {
		return nil, true, true
	}
	n := rec.NumRows()
	// A batch of the scan's shape holding the columns the conjuncts read;
	// the others are NULL placeholders they never look at.
	cols := make([]arrow.Array, len(readPos))
	fields := make([]arrow.Field, len(readPos))
	for i := range readPos {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.Null, Nullable: true}
	}
	for _, pos := range vf.cols {
		fields[pos].Type = rec.Column(readPos[pos]).DataType()
		cols[pos] = rec.Column(readPos[pos])
		cols[pos].Retain()
	}
	for i := range cols {
		if cols[i] == nil {
			cols[i] = array.NewNull(int(n))
		}
	}
	b := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	for _, c := range cols {
		c.Release()
	}
	res, err := vf.pred.Eval(b, mem)
	b.Release()
	if err != nil {
		return nil, true, false
	}
	defer res.Release()
	mask, ok := res.(*array.Boolean)
	if !ok || int64(mask.Len()) != n {
		return nil, true, false
	}
	vf.sel = kernels.SelectionIndices(mask, vf.sel)
	switch int64(len(vf.sel)) {
	case 0:
		return nil, false, true
	case n:
		return nil, true, true
	}
	return vf.sel, true, true
}

// evaluate computes the conjunct's truth per dictionary entry, unless it
// has for this dictionary already; false if it cannot be evaluated.
func (f *dictFilter) evaluate(mem memory.Allocator, dict arrow.Array, readSchema *arrow.Schema, readPos []int) bool {
	if f.dict == dict.Data() {
		return f.truth != nil
	}
	f.dict, f.truth = dict.Data(), nil
	vals, ok := dict.(*array.String)
	if !ok {
		return false
	}
	// A batch of the scan's shape whose only real column is the
	// dictionary; the conjunct reads no other.
	m := vals.Len()
	cols := make([]arrow.Array, len(readPos))
	fields := make([]arrow.Field, len(readPos))
	for i := range readPos {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.Null, Nullable: true}
		cols[i] = array.NewNull(m)
	}
	fields[f.pos] = arrow.Field{Name: "dict", Type: arrow.BinaryTypes.String, Nullable: true}
	cols[f.pos].Release()
	cols[f.pos] = vals
	vals.Retain()
	b := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(m))
	for _, c := range cols {
		c.Release()
	}
	defer b.Release()
	res, err := f.pred.Eval(b, mem)
	if err != nil {
		return false
	}
	defer res.Release()
	bools, ok := res.(*array.Boolean)
	if !ok || bools.Len() != m {
		return false
	}
	f.truth = make([]bool, m)
	for i := range m {
		f.truth[i] = bools.IsValid(i) && bools.Value(i)
	}
	return true
}

// relabelList returns col, a list, as type want, a list of the same element
// type under other field names or nullability, sharing its buffers.
func relabelList(col arrow.Array, want arrow.DataType) (arrow.Array, error) {
	have, ok1 := col.DataType().(*arrow.ListType)
	w, ok2 := want.(*arrow.ListType)
	if !ok1 || !ok2 || !arrow.TypeEqual(have.Elem(), w.Elem()) {
		return nil, fmt.Errorf("cannot read %s as %s", col.DataType(), want)
	}
	d := col.Data()
	nd := array.NewData(want, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd), nil
}

// widenDecimals writes the unscaled integers vals (the rows sel picks, or
// all) into out as decimal128 numbers.
func widenDecimals[T int32 | int64](out []decimal128.Num, vals []T, sel []int32) {
	if sel == nil {
		for i, v := range vals {
			out[i] = decimal128.New(int64(v)>>63, uint64(int64(v)))
		}
		return
	}
	for i, r := range sel {
		v := int64(vals[r])
		out[i] = decimal128.New(v>>63, uint64(v))
	}
}

// integersToDecimal turns the unscaled integers of a decimal column into a
// decimal128 array of type want (sel, if not nil, picks the rows).
func integersToDecimal(mem memory.Allocator, col arrow.Array, want arrow.DataType, sel []int32) (arrow.Array, error) {
	n := col.Len()
	if sel != nil {
		n = len(sel)
	}
	data := mempool.NewOutputBuffer(mem, n*16)
	out := arrow.GetData[decimal128.Num](data.Bytes())[:n]
	switch a := col.(type) {
	case *array.Int64:
		widenDecimals(out, a.Int64Values(), sel)
	case *array.Int32:
		widenDecimals(out, a.Int32Values(), sel)
	default:
		data.Release()
		return nil, fmt.Errorf("decimal stored as %s", col.DataType())
	}
	var validity *memory.Buffer
	nulls := 0
	if col.NullN() > 0 {
		validity = kernels.NewValidity(mem, n)
		if sel == nil {
			bitutil.CopyBitmap(col.NullBitmapBytes(), col.Data().Offset(), n, validity.Bytes(), 0)
			nulls = col.NullN()
		} else {
			for i, r := range sel {
				if col.IsNull(int(r)) {
					bitutil.ClearBit(validity.Bytes(), i)
					nulls++
				}
			}
		}
	}
	return kernels.FinishArray(want, n, validity, data, nil, nulls), nil
}
