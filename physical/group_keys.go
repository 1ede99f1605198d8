package physical

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// groupKeyStore holds one group-key column's distinct values, one per group
// id, in a typed Go slice so that probing compares values without boxing and
// the keys can be emitted as an Arrow array at the end. NULL is a value of
// its own (GROUP BY puts all NULLs in one group).
type groupKeyStore interface {
	// prepare makes arr (one batch's key column) the array add and equal
	// read, so that they do no per-row type assertions.
	prepare(arr arrow.Array)
	// add appends row `row` of the prepared array as the next group's key.
	add(row int)
	// addRows is add for each of rows, in order.
	addRows(rows []int32)
	// equal reports whether row `row` of the prepared array equals group
	// g's key.
	equal(row int, g int32) bool
	// mismatch sets bad[i] for every row i with verify[i] whose key differs
	// from group gids[i]'s.
	mismatch(gids []int32, verify, bad []bool)
	// build returns the keys of groups [start, end).
	build(start, end int, mem memory.Allocator) arrow.Array
	// bytesPerGroup estimates the memory one group's key takes.
	bytesPerGroup() int64
	// free gives the store's slices back to mempool; the store is not
	// used afterwards.
	free()
}

// newGroupKeyStore returns the store for keys of type t.
func newGroupKeyStore(t arrow.DataType) (groupKeyStore, error) {
	switch t.ID() {
	case arrow.INT64:
		return &groupFixedKeys[int64]{typ: t, get: func(a arrow.Array) []int64 { return a.(*array.Int64).Int64Values() }}, nil
	case arrow.TIMESTAMP:
		return &groupFixedKeys[arrow.Timestamp]{typ: t, get: func(a arrow.Array) []arrow.Timestamp { return a.(*array.Timestamp).TimestampValues() }}, nil
	case arrow.INT32:
		return &groupFixedKeys[int32]{typ: t, get: func(a arrow.Array) []int32 { return a.(*array.Int32).Int32Values() }}, nil
	case arrow.DATE32:
		return &groupFixedKeys[arrow.Date32]{typ: t, get: func(a arrow.Array) []arrow.Date32 { return a.(*array.Date32).Date32Values() }}, nil
	case arrow.FLOAT64:
		// Doubles are grouped by expr.FloatKey, which makes every NaN
		// one group and -0 the group of 0 (== would give each NaN a
		// group); the groups' keys come back as doubles.
		var keys []uint64
		return &groupFixedKeys[uint64]{typ: t, get: func(a arrow.Array) []uint64 {
			v := a.(*array.Float64).Float64Values()
			keys = slices.Grow(keys[:0], len(v))[:len(v)]
			for i, f := range v {
				keys[i] = expr.FloatKey(f)
			}
			return keys
		}}, nil
	case arrow.DECIMAL128:
		return &groupFixedKeys[decimal128.Num]{typ: t, get: func(a arrow.Array) []decimal128.Num { return a.(*array.Decimal128).Values() }}, nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return newGroupIntervalKeys(), nil
	case arrow.STRING:
		return &groupStringKeys{}, nil
	case arrow.BOOL:
		return &groupBoolKeys{}, nil
	case arrow.NULL:
		return &groupNullKeys{}, nil
	}
	return nil, fmt.Errorf("grouping by %s is not supported", t)
}

// groupFixedKeys stores fixed-width keys. get extracts the typed values of an
// input array (the arrays of one batch are fetched once per call, which is
// cheap: it is a slice header over the buffer).
type groupFixedKeys[T comparable] struct {
	typ   arrow.DataType
	get   func(arrow.Array) []T
	vals  []T
	valid []bool
	nulls bool // some group's key is NULL

	cur      arrow.Array
	curVals  []T
	curNulls bool
}

// appendDoubling appends v to s, doubling the capacity when s is full.
// append grows a large slice by about a quarter at a time, which copies a
// key store of a million groups about five times over as it fills (q18
// grouped 1.5 million order keys: 14 % of its CPU in those copies).
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = growKeys(s, 1)
	}
	return append(s, v)
}

// growKeys returns s with room for n more elements, at least doubling its
// capacity. A key store's slices come from mempool and go back to it as
// they grow (and when the store is freed): a fresh slice from the Go heap
// is zeroed and faulted in page by page, and q11's eight string keys per
// customer took a third more CPU that way on a cluster than in one
// process, whose heap happened to have the pages in memory already. A
// store therefore never hands out references into its slices (build
// copies).
func growKeys[T any](s []T, n int) []T {
	if len(s)+n <= cap(s) {
		return s
	}
	return mempool.GrowSlice(s, max(2*cap(s), len(s)+n, 64))
}

// addEach adds rows one at a time (a batch with NULLs, once its room is
// reserved, so add only appends).
func addEach(s groupKeyStore, rows []int32) {
	for _, r := range rows {
		s.add(int(r))
	}
}

// freePooled gives a slice growKeys (or growStates) grew back to mempool
// and returns nil, for the field that held it.
func freePooled[T any](s []T) []T {
	mempool.FreeSlice(s[:cap(s)])
	return nil
}

func (s *groupFixedKeys[T]) prepare(arr arrow.Array) {
	s.cur, s.curVals, s.curNulls = arr, s.get(arr), arr.NullN() > 0
}

func (s *groupFixedKeys[T]) add(row int) {
	if s.curNulls && s.cur.IsNull(row) {
		var zero T
		s.vals = appendDoubling(s.vals, zero)
		s.valid = appendDoubling(s.valid, false)
		s.nulls = true
		return
	}
	s.vals = appendDoubling(s.vals, s.curVals[row])
	s.valid = appendDoubling(s.valid, true)
}

func (s *groupFixedKeys[T]) addRows(rows []int32) {
	s.vals = growKeys(s.vals, len(rows))
	s.valid = growKeys(s.valid, len(rows))
	if s.curNulls {
		addEach(s, rows)
		return
	}
	for _, r := range rows {
		s.vals = append(s.vals, s.curVals[r])
		s.valid = append(s.valid, true)
	}
}

func (s *groupFixedKeys[T]) equal(row int, g int32) bool {
	if s.curNulls && s.cur.IsNull(row) {
		return !s.valid[g]
	}
	return s.curVals[row] == s.vals[g] && (!s.nulls || s.valid[g])
}

func (s *groupFixedKeys[T]) mismatch(gids []int32, verify, bad []bool) {
	if s.curNulls || s.nulls {
		for i, g := range gids {
			if verify[i] && !s.equal(i, g) {
				bad[i] = true
			}
		}
		return
	}
	vals, cur := s.vals, s.curVals
	for i, g := range gids {
		if verify[i] && cur[i] != vals[g] {
			bad[i] = true
		}
	}
}

func (s *groupFixedKeys[T]) build(start, end int, mem memory.Allocator) arrow.Array {
	b := array.NewBuilder(mem, s.typ)
	defer b.Release()
	b.Reserve(end - start)
	for i := start; i < end; i++ {
		if !s.valid[i] {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.Int64Builder:
			bb.UnsafeAppend(any(s.vals[i]).(int64))
		case *array.TimestampBuilder:
			bb.UnsafeAppend(any(s.vals[i]).(arrow.Timestamp))
		case *array.Int32Builder:
			bb.UnsafeAppend(any(s.vals[i]).(int32))
		case *array.Date32Builder:
			bb.UnsafeAppend(any(s.vals[i]).(arrow.Date32))
		case *array.Float64Builder:
			bb.UnsafeAppend(math.Float64frombits(any(s.vals[i]).(uint64)))
		case *array.Decimal128Builder:
			bb.UnsafeAppend(any(s.vals[i]).(decimal128.Num))
		}
	}
	return b.NewArray()
}

func (s *groupFixedKeys[T]) free() {
	s.vals = freePooled(s.vals)
	s.valid = freePooled(s.valid)
}

func (s *groupFixedKeys[T]) bytesPerGroup() int64 {
	var zero T
	return int64(sizeOfFixed(any(zero))) + 1
}

func sizeOfFixed(v any) int {
	switch v.(type) {
	case int32, arrow.Date32:
		return 4
	case decimal128.Num:
		return 16
	}
	return 8
}

// groupIntervalKeys groups intervals as PostgreSQL does, by
// expr.IntervalKey ('1 mon', '30 days' and '720:00:00' are one group): the
// keys are stored and compared as those numbers, and each group's first
// interval is its key in the output.
type groupIntervalKeys struct {
	*groupFixedKeys[decimal128.Num]
	first []arrow.MonthDayNanoInterval
	curIv []arrow.MonthDayNanoInterval
}

func newGroupIntervalKeys() *groupIntervalKeys {
	var keys []decimal128.Num
	return &groupIntervalKeys{groupFixedKeys: &groupFixedKeys[decimal128.Num]{typ: plan.Interval, get: func(a arrow.Array) []decimal128.Num {
		v := a.(*array.MonthDayNanoInterval).MonthDayNanoIntervalValues()
		keys = slices.Grow(keys[:0], len(v))[:len(v)]
		for i, x := range v {
			keys[i] = expr.IntervalKey(x)
		}
		return keys
	}}}
}

func (s *groupIntervalKeys) prepare(arr arrow.Array) {
	s.groupFixedKeys.prepare(arr)
	s.curIv = arr.(*array.MonthDayNanoInterval).MonthDayNanoIntervalValues()
}

func (s *groupIntervalKeys) add(row int) {
	s.groupFixedKeys.add(row)
	s.first = appendDoubling(s.first, s.curIv[row])
}

func (s *groupIntervalKeys) addRows(rows []int32) {
	s.groupFixedKeys.addRows(rows)
	s.first = growKeys(s.first, len(rows))
	for _, r := range rows {
		s.first = append(s.first, s.curIv[r])
	}
}

func (s *groupIntervalKeys) build(start, end int, mem memory.Allocator) arrow.Array {
	b := array.NewMonthDayNanoIntervalBuilder(mem)
	defer b.Release()
	b.Reserve(end - start)
	for i := start; i < end; i++ {
		if s.valid[i] {
			b.UnsafeAppend(s.first[i])
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

func (s *groupIntervalKeys) bytesPerGroup() int64 { return s.groupFixedKeys.bytesPerGroup() + 16 }

func (s *groupIntervalKeys) free() {
	s.groupFixedKeys.free()
	s.first = freePooled(s.first)
}

// groupStringKeys stores utf8 keys in one byte arena: group g's key is
// data[offs[g]:offs[g+1]]. One string per group would be one allocation per
// new group and a pointer per group for the garbage collector to trace (q67
// rolls 1M rows up over four string keys: a quarter of its aggregation time
// went to those copies and their write barriers).
type groupStringKeys struct {
	data  []byte
	offs  []int64 // len(offs) == groups+1
	valid []bool
	nulls bool

	cur      *array.String
	curNulls bool
}

func (s *groupStringKeys) prepare(arr arrow.Array) {
	s.cur, s.curNulls = arr.(*array.String), arr.NullN() > 0
	if s.offs == nil {
		s.offs = append(s.offs, 0)
	}
}

// key returns group g's key without copying it; it is valid until the next
// add.
func (s *groupStringKeys) key(g int32) string {
	b := s.data[s.offs[g]:s.offs[g+1]]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (s *groupStringKeys) add(row int) {
	if s.curNulls && s.cur.IsNull(row) {
		s.offs = appendDoubling(s.offs, int64(len(s.data)))
		s.valid = appendDoubling(s.valid, false)
		s.nulls = true
		return
	}
	s.data = appendBytesDoubling(s.data, s.cur.Value(row))
	s.offs = appendDoubling(s.offs, int64(len(s.data)))
	s.valid = appendDoubling(s.valid, true)
}

func (s *groupStringKeys) addRows(rows []int32) {
	if len(rows) == 0 {
		return
	}
	// The arena and the offsets grow once for the batch (a NULL's slot
	// may span bytes too, so the total is an upper bound with NULLs).
	offs := s.cur.ValueOffsets()
	var src []byte
	if b := s.cur.Data().Buffers()[2]; b != nil {
		src = b.Bytes()
	}
	total := 0
	for _, r := range rows {
		total += int(offs[r+1] - offs[r])
	}
	s.data = growKeys(s.data, total)
	s.offs = growKeys(s.offs, len(rows))
	s.valid = growKeys(s.valid, len(rows))
	if s.curNulls {
		addEach(s, rows)
		return
	}
	for _, r := range rows {
		s.data = append(s.data, src[offs[r]:offs[r+1]]...)
		s.offs = append(s.offs, int64(len(s.data)))
		s.valid = append(s.valid, true)
	}
}

// appendBytesDoubling appends v to s, at least doubling the capacity when it
// is too small (as appendDoubling, for the byte arena).
func appendBytesDoubling(s []byte, v string) []byte {
	if len(s)+len(v) > cap(s) {
		s = growKeys(s, max(len(v), 1024))
	}
	return append(s, v...)
}

func (s *groupStringKeys) equal(row int, g int32) bool {
	if s.curNulls && s.cur.IsNull(row) {
		return !s.valid[g]
	}
	return s.cur.Value(row) == s.key(g) && (!s.nulls || s.valid[g])
}

func (s *groupStringKeys) mismatch(gids []int32, verify, bad []bool) {
	if s.curNulls || s.nulls {
		for i, g := range gids {
			if verify[i] && !s.equal(i, g) {
				bad[i] = true
			}
		}
		return
	}
	cur := s.cur
	for i, g := range gids {
		if verify[i] && cur.Value(i) != s.key(g) {
			bad[i] = true
		}
	}
}

func (s *groupStringKeys) build(start, end int, mem memory.Allocator) arrow.Array {
	n := end - start
	var base, size int64
	if n > 0 {
		base, size = s.offs[start], s.offs[end]-s.offs[start]
	}
	if size > math.MaxInt32 {
		// More than a String array's 32-bit offsets can address: the
		// builder reports it.
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for i := start; i < end; i++ {
			if !s.valid[i] {
				b.AppendNull()
			} else {
				b.Append(s.key(int32(i)))
			}
		}
		return b.NewArray()
	}
	// The groups' keys lie end to end in the arena: one copy, and the
	// offsets moved to start at 0.
	offBuf := mempool.NewOutputBuffer(mem, (n+1)*4)
	offs := arrow.GetData[int32](offBuf.Bytes())[:n+1]
	for i := range offs {
		offs[i] = int32(s.offs[start+i] - base)
	}
	valBuf := mempool.NewOutputBuffer(mem, int(size))
	copy(valBuf.Bytes(), s.data[base:base+size])
	var validity *memory.Buffer
	nulls := 0
	if s.nulls {
		validity = kernels.NewValidity(mem, n)
		for i, ok := range s.valid[start:end] {
			if !ok {
				bitutil.ClearBit(validity.Bytes(), i)
				nulls++
			}
		}
	}
	return kernels.FinishArray(arrow.BinaryTypes.String, n, validity, offBuf, valBuf, nulls)
}

func (s *groupStringKeys) free() {
	s.data = freePooled(s.data)
	s.offs = freePooled(s.offs)
	s.valid = freePooled(s.valid)
}

func (s *groupStringKeys) bytesPerGroup() int64 {
	avg := int64(0)
	if n := int64(len(s.valid)); n > 0 {
		avg = int64(len(s.data)) / n
	}
	return 9 + avg
}

// groupBoolKeys stores boolean keys: 0 false, 1 true, 2 NULL.
type groupBoolKeys struct {
	vals []uint8
	cur  arrow.Array
}

func (s *groupBoolKeys) prepare(arr arrow.Array) { s.cur = arr }

func boolKeyCode(arr arrow.Array, row int) uint8 {
	if arr.IsNull(row) {
		return 2
	}
	if arr.(*array.Boolean).Value(row) {
		return 1
	}
	return 0
}

func (s *groupBoolKeys) add(row int) { s.vals = appendDoubling(s.vals, boolKeyCode(s.cur, row)) }

func (s *groupBoolKeys) addRows(rows []int32) { addEach(s, rows) }

func (s *groupBoolKeys) equal(row int, g int32) bool {
	return boolKeyCode(s.cur, row) == s.vals[g]
}

func (s *groupBoolKeys) mismatch(gids []int32, verify, bad []bool) {
	for i, g := range gids {
		if verify[i] && !s.equal(i, g) {
			bad[i] = true
		}
	}
}

func (s *groupBoolKeys) build(start, end int, mem memory.Allocator) arrow.Array {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	for _, v := range s.vals[start:end] {
		if v == 2 {
			b.AppendNull()
		} else {
			b.Append(v == 1)
		}
	}
	return b.NewArray()
}

func (s *groupBoolKeys) bytesPerGroup() int64 { return 1 }

func (s *groupBoolKeys) free() {
	s.vals = freePooled(s.vals)
}

// groupNullKeys stores keys of the NULL type (every value is NULL).
type groupNullKeys struct{}

func (groupNullKeys) prepare(arrow.Array)              {}
func (groupNullKeys) add(int)                          {}
func (groupNullKeys) addRows([]int32)                  {}
func (groupNullKeys) equal(int, int32) bool            { return true }
func (groupNullKeys) mismatch([]int32, []bool, []bool) {}
func (groupNullKeys) bytesPerGroup() int64             { return 0 }
func (groupNullKeys) free()                            {}
func (groupNullKeys) build(start, end int, _ memory.Allocator) arrow.Array {
	return array.NewNull(end - start)
}

// groupTable assigns a dense group id (0, 1, ...) to each distinct key row.
// It is an open-addressing hash table of (hash, group id) slots over
// HashRows hashes, with key equality checked on the typed key stores.
//
// A single integer key (int64, int32, date32, timestamp) takes a faster
// path: slots hold the key value itself in place of the hash (no HashRows,
// no second lookup in the key store) and NULL has a group outside the slots.
type groupTable struct {
	keys    []groupKeyStore
	slots   []groupSlot // power-of-two length
	n       int32       // number of groups
	hashes  []uint64    // scratch: per-row hashes of the current batch
	intKey  bool
	nullGid int32   // intKey: group id of NULL, -1 until seen
	ints    []int64 // intKey: scratch for widened key values
	touch   int32   // sink for the prefetching pass (keeps it from being elided)
	// intKey, direct mode: while the keys seen span a dense enough range,
	// dgids[v-dmin] is the group id+1 of key v (0: none yet) and the slots
	// are unused. Keys clustered or sorted by value (lineitem by
	// l_orderkey) then find their groups in memory read in order instead
	// of one cache miss per row. hashed: the keys became too sparse and
	// the table moved to the slots for good.
	dgids  []int32
	dmin   int64
	hashed bool
	// Hashed: the range of the keys seen since leaving the direct index
	// (klo > khi: none), and whether the table went back to it already.
	klo, khi int64
	returned bool
	verify   []bool  // scratch: row's group needs a key check (it was not new)
	bad      []bool  // scratch: row's hash matched another key
	added    []int32 // scratch: rows that created their group, in order
	// lookupShortStrings scratch: each row's combination of codes, and
	// each combination's group id+1 (0: not looked up yet).
	combos, comboGids []int32
}

type groupSlot struct {
	hash uint64
	gid  int32 // group id + 1; 0 = empty
}

func newGroupTable(types []arrow.DataType) (*groupTable, error) {
	t := &groupTable{slots: mempool.AllocSlice[groupSlot](64)}
	for _, typ := range types {
		s, err := newGroupKeyStore(typ)
		if err != nil {
			return nil, err
		}
		t.keys = append(t.keys, s)
	}
	if len(types) == 1 {
		switch types[0].ID() {
		case arrow.INT64, arrow.INT32, arrow.DATE32, arrow.TIMESTAMP:
			t.intKey, t.nullGid = true, -1
		}
	}
	return t, nil
}

// numGroups returns the number of distinct keys seen.
func (t *groupTable) numGroups() int { return int(t.n) }

// memSize estimates the table's memory in bytes.
func (t *groupTable) memSize() int64 {
	per := int64(0)
	for _, k := range t.keys {
		per += k.bytesPerGroup()
	}
	return int64(len(t.slots))*16 + int64(len(t.dgids))*4 + int64(t.n)*per
}

// lookup writes the group id of every row of cols into gids (growing the
// table for new keys). newRows, when non-nil, receives true for rows that
// created their group.
func (t *groupTable) lookup(cols []arrow.Array, n int, gids []int32, newRows []bool) error {
	if len(t.keys) == 0 {
		for i := 0; i < n; i++ {
			gids[i] = 0
			if newRows != nil {
				newRows[i] = false
			}
		}
		if t.n == 0 && n > 0 {
			t.n = 1
			if newRows != nil {
				newRows[0] = true
			}
		}
		return nil
	}
	if t.intKey {
		t.lookupInt(cols[0], n, gids, newRows)
		return nil
	}
	if ok, err := t.lookupShortStrings(cols, n, gids, newRows); ok || err != nil {
		return err
	}
	return t.lookupHashed(cols, n, gids, newRows)
}

// lookupHashed is lookup through the hash slots, for any keys.
func (t *groupTable) lookupHashed(cols []arrow.Array, n int, gids []int32, newRows []bool) error {
	if cap(t.hashes) < n {
		t.hashes = make([]uint64, n)
	}
	hashes := t.hashes[:n]
	if err := HashRows(cols, hashes); err != nil {
		return fmt.Errorf("hashing group keys: %w", err)
	}
	for c, k := range t.keys {
		k.prepare(cols[c])
	}
	// Pass 1 assigns each row the group whose slot hash equals the row's
	// hash (or a new group), without comparing keys. Pass 2 checks the keys
	// column by column in typed loops (no per-row interface calls); rows
	// whose hash matched a different key are looked up again with full key
	// comparison. 64-bit hash collisions are rare, so pass 3 rarely runs.
	t.verify = growSlice(t.verify[:0], n)
	t.bad = growSlice(t.bad[:0], n)
	verify, bad := t.verify, t.bad
	added := t.added[:0]
	for i := 0; i < n; i++ {
		if int(t.n)*2 >= len(t.slots) {
			t.grow()
		}
		h := hashes[i]
		mask := uint64(len(t.slots) - 1)
		pos := h & mask
		for {
			s := &t.slots[pos]
			if s.gid == 0 {
				s.hash, s.gid = h, t.n+1
				added = append(added, int32(i))
				gids[i] = t.n
				verify[i] = false
				t.n++
				break
			}
			if s.hash == h {
				gids[i] = s.gid - 1
				verify[i] = true
				break
			}
			pos = (pos + 1) & mask
		}
	}
	// The new groups' keys are stored column by column, before pass 2
	// compares later rows of the batch against them.
	for _, k := range t.keys {
		k.addRows(added)
	}
	t.added = added
	clear(bad)
	for _, k := range t.keys {
		k.mismatch(gids[:n], verify, bad)
	}
	for i := 0; i < n; i++ {
		if bad[i] {
			verify[i] = t.slowLookup(hashes[i], i, gids)
		}
	}
	if newRows != nil {
		for i := 0; i < n; i++ {
			newRows[i] = !verify[i]
		}
	}
	return nil
}

// Short-string keys: up to shortKeyCols string key columns whose values in a
// batch are at most 8 bytes long, without NULLs, and take at most
// shortKeyDistinct values per column (flags, modes, priorities: q1 groups
// 6M rows by l_returnflag and l_linestatus).
const (
	shortKeyCols     = 3
	shortKeyDistinct = 16
)

// lookupShortStrings is lookup for a batch of short-string keys: each row's
// values are mapped to small codes through per-column tables of the batch's
// distinct values (one 8-byte word and a length each), and each combination
// of codes is looked up in the hash slots once, through its first row; the
// other rows of the combination take its group without hashing or
// comparing strings. It reports false, having written nothing, for a batch
// that is not like that.
func (t *groupTable) lookupShortStrings(cols []arrow.Array, n int, gids []int32, newRows []bool) (bool, error) {
	k := len(cols)
	if k == 0 || k > shortKeyCols || n == 0 {
		return false, nil
	}
	type column struct {
		offs []int32
		data []byte
	}
	var cs [shortKeyCols]column
	for c, a := range cols {
		s, ok := a.(*array.String)
		if !ok || s.NullN() > 0 {
			return false, nil
		}
		cs[c].offs = s.ValueOffsets()
		if buf := s.Data().Buffers()[2]; buf != nil {
			cs[c].data = buf.Bytes()
		}
	}
	// Per column, an open-addressing table of 2*shortKeyDistinct slots of
	// the distinct (word, length) pairs seen, and their codes.
	const slots = 2 * shortKeyDistinct
	var words [shortKeyCols][slots]uint64
	var lens, codes [shortKeyCols][slots]int32 // lens: length+1, 0 = empty
	var distinct [shortKeyCols]int32
	// One-byte values (flags, status codes) take their code from a table
	// indexed by the byte (-1: not seen yet) instead of the hash.
	var byByte [shortKeyCols][256]int8
	for c := range k {
		for j := range byByte[c] {
			byByte[c][j] = -1
		}
	}
	t.combos = growSlice(t.combos[:0], n)
	combos := t.combos
	for i := 0; i < n; i++ {
		combo := int32(0)
		for c := 0; c < k; c++ {
			b, e := int(cs[c].offs[i]), int(cs[c].offs[i+1])
			l := e - b
			if l == 1 {
				v := cs[c].data[b]
				code := byByte[c][v]
				if code < 0 {
					if distinct[c] == shortKeyDistinct {
						return false, nil
					}
					code = int8(distinct[c])
					byByte[c][v] = code
					distinct[c]++
				}
				combo = combo*shortKeyDistinct + int32(code)
				continue
			}
			if l > 8 {
				return false, nil
			}
			w := shortWord(cs[c].data, b, e)
			pos := mix(w^uint64(l)*0x9e3779b97f4a7c15) & (slots - 1)
			for lens[c][pos] != 0 && (lens[c][pos] != int32(l)+1 || words[c][pos] != w) {
				pos = (pos + 1) & (slots - 1)
			}
			if lens[c][pos] == 0 {
				if distinct[c] == shortKeyDistinct {
					return false, nil
				}
				words[c][pos], lens[c][pos], codes[c][pos] = w, int32(l)+1, distinct[c]
				distinct[c]++
			}
			combo = combo*shortKeyDistinct + codes[c][pos]
		}
		combos[i] = combo
	}
	// Resolve each combination through its first row, in row order (so
	// that groups are created in the order the hashed path would).
	ncombos := 1
	for range k {
		ncombos *= shortKeyDistinct
	}
	t.comboGids = growSlice(t.comboGids[:0], ncombos)
	clear(t.comboGids)
	for i := 0; i < n; i++ {
		g := &t.comboGids[combos[i]]
		if *g != 0 {
			gids[i] = *g - 1
			if newRows != nil {
				newRows[i] = false
			}
			continue
		}
		one := make([]arrow.Array, k)
		for c, a := range cols {
			one[c] = array.NewSlice(a, int64(i), int64(i+1))
		}
		var gid [1]int32
		var isNew [1]bool
		err := t.lookupHashed(one, 1, gid[:], isNew[:])
		for _, a := range one {
			a.Release()
		}
		if err != nil {
			return true, err
		}
		*g = gid[0] + 1
		gids[i] = gid[0]
		if newRows != nil {
			newRows[i] = isNew[0]
		}
	}
	return true, nil
}

// slowLookup finds or creates row i's group comparing full keys; it
// reports whether the group already existed.
func (t *groupTable) slowLookup(h uint64, i int, gids []int32) bool {
	if int(t.n)*2 >= len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	pos := h & mask
	for {
		s := &t.slots[pos]
		if s.gid == 0 {
			s.hash, s.gid = h, t.n+1
			for _, k := range t.keys {
				k.add(i)
			}
			gids[i] = t.n
			t.n++
			return false
		}
		if s.hash == h && t.rowEqual(i, s.gid-1) {
			gids[i] = s.gid - 1
			return true
		}
		pos = (pos + 1) & mask
	}
}

func (t *groupTable) rowEqual(row int, g int32) bool {
	for _, k := range t.keys {
		if !k.equal(row, g) {
			return false
		}
	}
	return true
}

// lookupInt is lookup for a single integer key: the slot's hash field holds
// the key value and the slot position comes from mixing the value.
func (t *groupTable) lookupInt(col arrow.Array, n int, gids []int32, newRows []bool) {
	vals, _ := joinIntKeyValues([]arrow.Array{col}, t.ints)
	if _, direct := col.(*array.Int64); !direct {
		t.ints = vals
	}
	store := t.keys[0]
	store.prepare(col)
	nulls := col.NullN() > 0
	if t.hashed && !t.returned {
		t.maybeReturnDirect(col, vals[:n], nulls)
	}
	if !t.hashed {
		if t.directRange(col, vals[:n], nulls) {
			t.lookupDirect(col, vals[:n], nulls, gids, newRows)
			return
		}
		t.leaveDirect()
		t.trackKeys(col, vals[:n], nulls)
	}
	// Size the table for the worst case (every row new) up front, so that
	// slot positions stay valid for the whole batch.
	for (int(t.n)+n)*2 >= len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	// First pass: compute positions and touch their slots. The loads are
	// independent, so the CPU overlaps the cache misses; the second pass
	// then finds the slots in cache.
	t.hashes = growSlice(t.hashes[:0], n)
	pos := t.hashes
	var touch int32
	for i, v := range vals[:n] {
		p := mix(uint64(v)) & mask
		pos[i] = p
		touch += t.slots[p].gid
	}
	t.touch = touch
	for i := 0; i < n; i++ {
		if nulls && col.IsNull(i) {
			isNew := t.nullGid < 0
			if isNew {
				t.nullGid = t.n
				store.add(i)
				t.n++
			}
			gids[i] = t.nullGid
			if newRows != nil {
				newRows[i] = isNew
			}
			continue
		}
		k := uint64(vals[i])
		p := pos[i]
		for {
			s := &t.slots[p]
			if s.gid == 0 {
				s.hash, s.gid = k, t.n+1
				store.add(i)
				gids[i] = t.n
				if newRows != nil {
					newRows[i] = true
				}
				t.n++
				break
			}
			if s.hash == k {
				gids[i] = s.gid - 1
				if newRows != nil {
					newRows[i] = false
				}
				break
			}
			p = (p + 1) & mask
		}
	}
}

// Direct mode limits: a range of up to directSmall keys is always indexed
// directly (at most 4 MiB); a wider one while it has at most directSparse
// keys per group (64 bytes of index per group; the slots take 32 to 64 at
// their load factor of 1/4 to 1/2), and never wider than directMax keys
// (64 MiB). 16 keeps TPC-H's order keys direct after hash partitioning
// (one key in 8 is used; half of those per partition): q18 303 -> 220 ms.
const (
	directSmall  = 1 << 20
	directSparse = 16
	directMax    = 1 << 24
)

// directRange makes the direct index cover the non-NULL keys of vals and
// reports whether it could (false: leave direct mode).
func (t *groupTable) directRange(col arrow.Array, vals []int64, nulls bool) bool {
	lo, hi, any := int64(math.MaxInt64), int64(math.MinInt64), false
	for i, v := range vals {
		if nulls && col.IsNull(i) {
			continue
		}
		lo, hi, any = min(lo, v), max(hi, v), true
	}
	if !any {
		return true
	}
	curLo, curHi := t.dmin, t.dmin+int64(len(t.dgids))-1
	if t.dgids == nil {
		curLo, curHi = lo, hi
	}
	if lo >= curLo && hi <= curHi && t.dgids != nil {
		return true
	}
	lo, hi = min(lo, curLo), max(hi, curHi)
	span := uint64(hi) - uint64(lo) + 1
	if hi < lo || span == 0 || span > directMax || (span > directSmall && span > directSparse*uint64(int(t.n)+len(vals))) {
		return false
	}
	// Grow with headroom in the direction the keys went, so that keys
	// arriving in order do not copy the index at every batch (none next to
	// the int64 limits, where the headroom would pass them).
	size := max(span, min(2*uint64(len(t.dgids)), directMax))
	if lo > math.MaxInt64-directMax || hi < math.MinInt64+directMax {
		size = span
	}
	newMin := lo
	if t.dgids != nil && lo < t.dmin {
		newMin = hi - int64(size) + 1
	}
	d := mempool.AllocSlice[int32](int(size))
	if t.dgids != nil {
		copy(d[t.dmin-newMin:], t.dgids)
		mempool.FreeSlice(t.dgids)
	}
	t.dgids, t.dmin = d, newMin
	return true
}

// lookupDirect is lookupInt through the direct index (which covers vals).
func (t *groupTable) lookupDirect(col arrow.Array, vals []int64, nulls bool, gids []int32, newRows []bool) {
	d, lo, store := t.dgids, t.dmin, t.keys[0]
	for i, v := range vals {
		isNew := false
		switch {
		case nulls && col.IsNull(i):
			if isNew = t.nullGid < 0; isNew {
				t.nullGid = t.n
				store.add(i)
				t.n++
			}
			gids[i] = t.nullGid
		default:
			g := &d[v-lo]
			if isNew = *g == 0; isNew {
				t.n++
				*g = t.n
				store.add(i)
			}
			gids[i] = *g - 1
		}
		if newRows != nil {
			newRows[i] = isNew
		}
	}
}

// returnMinGroups is the fewest groups a hashed table must have before
// maybeReturnDirect considers the direct index again: below it the slots
// stay in cache.
const returnMinGroups = 1 << 16

// maybeReturnDirect moves a hashed table back to a direct index, once, when
// its groups have become dense enough in the range of the keys seen (those
// of vals included): a final aggregate fed by sorted partial results sees
// its key range whole in the first batches, long before it has groups
// enough to fill it (q18: 750K groups per partition over 6M order keys).
func (t *groupTable) maybeReturnDirect(col arrow.Array, vals []int64, nulls bool) {
	t.trackKeys(col, vals, nulls)
	if int(t.n) < returnMinGroups || t.khi < t.klo {
		return
	}
	span := uint64(t.khi) - uint64(t.klo) + 1
	if span == 0 || span > directMax || span > directSparse*uint64(t.n) {
		return
	}
	t.returned, t.hashed = true, false
	t.dgids, t.dmin = mempool.AllocSlice[int32](int(span)), t.klo
	for _, sl := range t.slots {
		if sl.gid != 0 {
			t.dgids[int64(sl.hash)-t.klo] = sl.gid
		}
	}
	mempool.FreeSlice(t.slots)
	t.slots = mempool.AllocSlice[groupSlot](64)
}

// trackKeys widens the hashed table's key range to the non-NULL keys of
// vals.
func (t *groupTable) trackKeys(col arrow.Array, vals []int64, nulls bool) {
	for i, v := range vals {
		if nulls && col.IsNull(i) {
			continue
		}
		t.klo, t.khi = min(t.klo, v), max(t.khi, v)
	}
}

// leaveDirect moves the groups of the direct index into the slots; the
// table stays hashed from then on (unless maybeReturnDirect moves it back,
// once).
func (t *groupTable) leaveDirect() {
	t.hashed = true
	t.klo, t.khi = math.MaxInt64, math.MinInt64
	if t.dgids == nil {
		return
	}
	t.klo, t.khi = t.dmin, t.dmin+int64(len(t.dgids))-1
	for int(t.n)*2 >= len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for j, g := range t.dgids {
		if g == 0 {
			continue
		}
		k := uint64(t.dmin + int64(j))
		pos := mix(k) & mask
		for t.slots[pos].gid != 0 {
			pos = (pos + 1) & mask
		}
		t.slots[pos] = groupSlot{hash: k, gid: g}
	}
	mempool.FreeSlice(t.dgids)
	t.dgids = nil
}

// stayHashed keeps a new table out of direct mode for good. A spilling
// aggregate's groups after its first spill are one hash bucket's, spread
// thin over the whole key range: a direct index would cost the memory of
// every key of the range for a fraction of them, be refused, and split the
// bucket again and again (100,000 dense keys under a 512 KiB limit took
// 30 seconds instead of one).
func (t *groupTable) stayHashed() {
	if t.dgids == nil && t.n == 0 {
		t.hashed, t.returned = true, true
	}
}

// grow doubles the slot array and reinserts every slot.
func (t *groupTable) grow() {
	old := t.slots
	t.slots = mempool.AllocSlice[groupSlot](len(old) * 2)
	defer mempool.FreeSlice(old)
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.gid == 0 {
			continue
		}
		pos := s.hash & mask
		if t.intKey {
			pos = mix(s.hash) & mask
		}
		for t.slots[pos].gid != 0 {
			pos = (pos + 1) & mask
		}
		t.slots[pos] = s
	}
}

// releaseSlots gives the slot array back once no more rows will be looked
// up (the keys and group ids stay).
func (t *groupTable) releaseSlots() {
	mempool.FreeSlice(t.slots)
	t.slots = nil
	mempool.FreeSlice(t.dgids)
	t.dgids = nil
}

// free gives the slots and the key stores back to mempool once the groups'
// keys are built (or no longer wanted); the table is not used afterwards.
// A table never freed is simply collected.
func (t *groupTable) free() {
	if t == nil {
		return
	}
	t.releaseSlots()
	for _, k := range t.keys {
		k.free()
	}
	t.keys = nil
}

// buildKeys returns the key columns of groups [start, end).
func (t *groupTable) buildKeys(start, end int, mem memory.Allocator) []arrow.Array {
	out := make([]arrow.Array, len(t.keys))
	for i, k := range t.keys {
		out[i] = k.build(start, end, mem)
	}
	return out
}
