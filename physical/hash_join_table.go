package physical

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
)

// joinBuildTable is a join's buffered build side: every build row in one
// concatenated batch, and (for hash joins) a chained hash index over the
// rows whose keys are all non-NULL.
type joinBuildTable struct {
	cols    []arrow.Array // build columns, numRows rows each
	numRows int
	keys    []arrow.Array // evaluated build keys (hash join only)
	// General index: heads maps hash&mask to the first row+1 of a chain
	// through links (hash kept next to the link: one cache miss per step).
	heads []int32
	links []joinLink
	mask  uint64
	// Single integer key index (intKey): open addressing on the key value
	// itself, one slot per distinct key; rows sharing a key chain through
	// next, which is only allocated when a key repeats.
	intKey bool
	islots []joinIntSlot
	next   []int32
	// Direct index (intKey with dense keys): dheads[k-dmin] is the first
	// row+1 with key k. No hashing, no probing, no key compare, and 4 bytes
	// per key value instead of 16 per slot (a part or customer key index
	// fits in cache).
	direct bool
	dmin   int64
	dheads []int32
	// rank, when not nil, makes the direct index compact for keys spread
	// thinly over their range: dheads then has one entry per distinct key,
	// in key order, and rank maps k-dmin to its entry.
	rank *keyRank
	// Key bitmap (intKey, keys too sparse for a direct index but within a
	// range of 64 values per row, or of 8M values: 1 MiB): bit k-dmin is
	// set when a build row has key k. Probes check it first, so the many
	// probe rows of a join against a filtered build side miss in a bitmap
	// that fits in cache rather than in a slot table that does not, and a
	// small slot table is spared probes that mostly miss: whether the first
	// slot is empty is a coin toss the branch predictor loses (q17's 204
	// parts probed by 6M lineitem rows twice: 11 ns a row through the
	// slots alone). Up to 1 MiB so that a quarter's orders (q4, q12, q21:
	// keys over 6M values) get one too; lineitem probes it in key order.
	bitmap []uint64
	// pack, when not nil, maps the two integer build keys onto the one
	// int64 key the table is indexed by (probe keys are packed alike).
	pack *keyPack
	// hasNullKey reports whether some build row has a NULL key (null-aware
	// anti joins output nothing then).
	hasNullKey bool
	res        *mempool.Reservation
	// spilled, when not nil, holds the build rows instead: the pool
	// refused them, and they went to bucket files (hash_join_spill.go).
	spilled *joinSpilledBuild
}

// release frees the table's arrays and memory reservation.
func (t *joinBuildTable) release() {
	for _, c := range t.cols {
		c.Release()
	}
	for _, k := range t.keys {
		k.Release()
	}
	mempool.FreeSlice(t.heads)
	mempool.FreeSlice(t.links)
	mempool.FreeSlice(t.islots)
	mempool.FreeSlice(t.next)
	mempool.FreeSlice(t.dheads)
	mempool.FreeSlice(t.bitmap)
	if t.rank != nil {
		mempool.FreeSlice(t.rank.words)
		t.rank = nil
	}
	t.cols, t.keys, t.heads, t.links, t.islots, t.next, t.dheads, t.bitmap = nil, nil, nil, nil, nil, nil, nil, nil
	if t.spilled != nil {
		t.spilled.close()
		t.spilled = nil
	}
	t.res.SetSpillable(false)
	t.res.Free()
}

// buildJoinTable reads the given partitions of op concurrently, concatenates
// their rows and, when keys is non-empty, indexes them by key hash. Memory is
// reserved from tc.Memory under owner.
func buildJoinTable(ctx context.Context, op Operator, partitions []int, keys []expr.Expr, tc *TaskContext, owner string) (*joinBuildTable, error) {
	t := &joinBuildTable{res: tc.NewReservation(ctx, owner)}
	var (
		mu      sync.Mutex
		batches []arrow.RecordBatch
	)
	releaseBatches := func() {
		for _, b := range batches {
			b.Release()
		}
		batches = nil
	}
	g, gctx := errgroup.WithContext(ctx)
	// Open every partition before reading any: an input that shares work
	// among the streams of one task (a CollectLeft join's table, a
	// SharedOutput) frees it when its last open stream closes, so a
	// partition opened after another one had finished would compute it
	// all again, or fail as a repartition executed twice.
	streams := make([]Stream, 0, len(partitions))
	for _, p := range partitions {
		s, err := ExecuteOp(gctx, op, p, tc)
		if err != nil {
			for _, s := range streams {
				s.Close()
			}
			return nil, fmt.Errorf("reading build side: %w", err)
		}
		streams = append(streams, s)
	}
	for _, s := range streams {
		g.Go(Safe(func() error {
			defer s.Close()
			checkFailpoint(FailpointHashJoinBuild)
			for {
				b, err := s.Next(gctx)
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				mu.Lock()
				err = t.res.Grow(kernels.BatchBytes(b))
				if err == nil {
					batches = append(batches, b)
				}
				mu.Unlock()
				if err != nil {
					b.Release()
					return err
				}
			}
		}))
	}
	if err := g.Wait(); err != nil {
		releaseBatches()
		t.res.Free()
		return nil, fmt.Errorf("reading build side: %w", err)
	}
	err := t.finish(op.Schema(), batches, keys, tc)
	releaseBatches()
	if err != nil {
		return nil, err
	}
	return t, nil
}

// finish makes the table of the build rows in batches (which the caller
// still releases): their columns joined, then indexed by keys. On error the
// table is released.
func (t *joinBuildTable) finish(schema *arrow.Schema, batches []arrow.RecordBatch, keys []expr.Expr, tc *TaskContext) error {
	err := t.concat(schema, batches, tc)
	if err == nil && len(keys) > 0 {
		err = t.index(keys, tc)
	}
	if err != nil {
		t.release()
	}
	return err
}

// concat joins the batches' columns into one array per column.
func (t *joinBuildTable) concat(schema *arrow.Schema, batches []arrow.RecordBatch, tc *TaskContext) error {
	for _, b := range batches {
		t.numRows += int(b.NumRows())
	}
	t.cols = make([]arrow.Array, 0, schema.NumFields())
	for c, f := range schema.Fields() {
		var col arrow.Array
		switch len(batches) {
		case 0:
			col = joinNullColumns([]arrow.Field{f}, 0, tc.Alloc)[0]
		case 1:
			col = batches[0].Column(c)
			col.Retain()
		default:
			parts := make([]arrow.Array, len(batches))
			for i, b := range batches {
				parts[i] = b.Column(c)
			}
			var err error
			if col, err = array.Concatenate(parts, tc.Alloc); err != nil {
				return fmt.Errorf("concatenating build side: %w", err)
			}
		}
		t.cols = append(t.cols, col)
	}
	return nil
}

// index evaluates the build keys and builds the chained hash index.
func (t *joinBuildTable) index(keys []expr.Expr, tc *TaskContext) error {
	n := t.numRows
	fields := make([]arrow.Field, len(t.cols))
	for i, c := range t.cols {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: c.DataType(), Nullable: true}
	}
	batch := array.NewRecordBatch(arrow.NewSchema(fields, nil), t.cols, int64(n))
	defer batch.Release()
	for _, k := range keys {
		a, err := k.Eval(batch, tc.Alloc)
		if err != nil {
			return fmt.Errorf("hash join build key %s: %w", k, err)
		}
		t.keys = append(t.keys, a)
	}
	if pk, ok := newKeyPack(t.keys); ok {
		packed := pk.pack(tc.Alloc, t.keys)
		joinReleaseArrays(t.keys)
		t.keys, t.pack = []arrow.Array{packed}, pk
	}
	if vals, ok := joinIntKeyValues(t.keys, nil); ok {
		lo, span, ok := joinKeySpan(vals, t.keys[0])
		// Direct while the index takes at most 128 bytes per build row (the
		// slots take 32 to 64 plus the bitmap), or 16 KiB in all: filtered
		// orders after hash partitioning (one order key in 8 used, half of
		// those per partition, half of those kept: q3, q21) stay direct,
		// and probes arriving in key order (lineitem) read the index in
		// order instead of missing the cache once per row. Measured with
		// the 22 queries twice on a pipelined 2-executor cluster: 4x rows
		// 7.37/7.40 s, 16x 6.89/7.11 s, 32x 6.72/6.71 s.
		// The direct indexes take memory by the keys' span, not by the
		// rows: where the pool refuses it (a spilled join's bucket holds
		// a sixteenth of the rows over the whole span), the slots below
		// take memory by the rows instead.
		if ok && span > int64(n)*rankedMinSpread && span > rankedMinSpan && span <= max(int64(n)*rankedMaxSpread, 1<<23) &&
			t.reserveOrSkip((span+63)/64*16+int64(n)*16) {
			return t.indexRanked(vals, lo, span, tc)
		}
		if ok && span <= 1<<25 && span <= max(int64(n)*32, 4096) && t.reserveOrSkip(span*4+int64(n)*4) {
			reordered, err := t.clusterByKey(vals, lo, span, tc)
			if err != nil {
				return err
			}
			if reordered {
				vals, _ = joinIntKeyValues(t.keys, nil)
			}
			t.indexDirect(vals, lo, span)
			return nil
		}
		size := joinIntSlotCount(n)
		bits := int64(0)
		if ok && span <= max(int64(n)*64, 1<<23) && t.reserveOrSkip(span/8) {
			bits = span
			t.res.Shrink(span / 8) // reserved again with the slots
		}
		// Slots of 16 bytes, plus next (4 per row) if keys repeat, plus
		// the bitmap.
		if err := t.res.Grow(int64(size)*16 + int64(n)*4 + bits/8); err != nil {
			return fmt.Errorf("hash join build: %w", err)
		}
		t.indexInt(vals, size)
		if bits > 0 {
			t.dmin = lo
			t.bitmap = mempool.AllocSlice[uint64](int((bits + 63) / 64))
			setKeyBits(t.bitmap, vals, t.keys[0], lo)
		}
		return nil
	}
	size := 1
	for size < n {
		size *= 2
	}
	// heads (4 bytes per bucket) + hashes (8 per row) + links (16 per row).
	if err := t.res.Grow(int64(size)*4 + int64(n)*24); err != nil {
		return fmt.Errorf("hash join build: %w", err)
	}
	hashes := mempool.AllocSlice[uint64](n)
	defer mempool.FreeSlice(hashes)
	if err := HashRows(t.keys, hashes); err != nil {
		return fmt.Errorf("hash join build: %w", err)
	}
	t.heads = mempool.AllocSlice[int32](size)
	t.links = mempool.AllocSlice[joinLink](n)
	t.mask = uint64(size - 1)
	anyNulls := false
	for _, k := range t.keys {
		anyNulls = anyNulls || k.NullN() > 0
	}
	// Insert in reverse so that each chain lists rows in ascending order.
	for r := n - 1; r >= 0; r-- {
		if anyNulls && joinRowHasNull(t.keys, r) {
			t.hasNullKey = true
			continue
		}
		b := hashes[r] & t.mask
		t.links[r] = joinLink{hash: hashes[r], next: t.heads[b]}
		t.heads[b] = int32(r + 1)
	}
	return nil
}

type joinLink struct {
	hash uint64
	next int32
}

type joinIntSlot struct {
	key  int64
	head int32 // first row+1; 0 = empty slot
	dup  bool  // more rows follow through next
}

// indexInt builds the single-integer-key index.
func (t *joinBuildTable) indexInt(vals []int64, size int) {
	t.intKey = true
	t.islots = mempool.AllocSlice[joinIntSlot](size)
	t.mask = uint64(size - 1)
	k := t.keys[0]
	nulls := k.NullN() > 0
	for r := len(vals) - 1; r >= 0; r-- {
		if nulls && k.IsNull(r) {
			t.hasNullKey = true
			continue
		}
		v := vals[r]
		pos := mix(uint64(v)) & t.mask
		for {
			s := &t.islots[pos]
			if s.head == 0 {
				s.key, s.head = v, int32(r+1)
				break
			}
			if s.key == v {
				if t.next == nil {
					t.next = mempool.AllocSlice[int32](len(vals))
				}
				t.next[r] = s.head
				s.head, s.dup = int32(r+1), true
				break
			}
			pos = (pos + 1) & t.mask
		}
	}
}

// joinKeySpan returns the smallest non-NULL key and the size of the key
// range, and whether there is a non-NULL key and the range is under 2^30.
func joinKeySpan(vals []int64, k arrow.Array) (int64, int64, bool) {
	nulls := k.NullN() > 0
	lo, hi, seen := int64(0), int64(0), false
	for r, v := range vals {
		if nulls && k.IsNull(r) {
			continue
		}
		if !seen {
			lo, hi, seen = v, v, true
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if !seen {
		return 0, 0, false
	}
	span := uint64(hi) - uint64(lo) + 1 // exact in uint64 for any int64 pair
	if span == 0 || span > 1<<30 {
		return 0, 0, false
	}
	return lo, int64(span), true
}

// Ranked direct index: for keys spread over a range wider than
// rankedMinSpread values per build row (and than rankedMinSpan values), the
// direct index takes one entry per distinct key instead of one per value
// of the range, found through a bitmap of the keys with a running count of
// set bits per 64-bit word. q5's and q3's filtered orders (227K and 727K
// keys over 6M values) took a 24 MiB index, zeroed, counted into and
// written a cache line per four rows at each build; ranked it is 1.5 MiB
// of bitmap and counts plus 4 bytes per key, and a probe arriving in key
// order (lineitem) still reads it in order.
const (
	rankedMinSpread = 8
	rankedMaxSpread = 256
	rankedMinSpan   = 1 << 18
)

// keyRank maps an offset d in [0, span) to the number of keys below it,
// for the offsets that are keys.
type keyRank struct {
	words []rankWord
	span  uint64
	count int // keys in all
}

// rankWord is 64 offsets: which are keys, and how many keys come before.
type rankWord struct {
	bits uint64
	base uint32
}

// lookup returns the rank of offset d and whether d is a key.
func (r *keyRank) lookup(d uint64) (uint64, bool) {
	if d >= r.span {
		return 0, false
	}
	w := r.words[d>>6]
	bit := uint64(1) << (d & 63)
	if w.bits&bit == 0 {
		return 0, false
	}
	return uint64(w.base) + uint64(bits.OnesCount64(w.bits&(bit-1))), true
}

// newKeyRank builds the rank of the non-NULL keys vals (of k) over
// [lo, lo+span).
func newKeyRank(vals []int64, k arrow.Array, lo, span int64) *keyRank {
	r := &keyRank{words: mempool.AllocSlice[rankWord](int((span + 63) / 64)), span: uint64(span)}
	nulls := k.NullN() > 0
	for i, v := range vals {
		if nulls && k.IsNull(i) {
			continue
		}
		d := uint64(v - lo)
		r.words[d>>6].bits |= 1 << (d & 63)
	}
	n := 0
	for i := range r.words {
		r.words[i].base = uint32(n)
		n += bits.OnesCount64(r.words[i].bits)
	}
	r.count = n
	return r
}

// ranks returns the rank of each key of vals (0 for a NULL key: the
// index skips those rows).
func (r *keyRank) ranks(vals []int64, k arrow.Array, lo int64) []int64 {
	out := mempool.AllocSlice[int64](len(vals))
	nulls := k.NullN() > 0
	for i, v := range vals {
		if nulls && k.IsNull(i) {
			continue
		}
		x, _ := r.lookup(uint64(v - lo))
		out[i] = int64(x)
	}
	return out
}

// reserveOrSkip reserves n bytes for an optional index, and reports
// whether the pool granted them; a refusal is not an error, as a smaller
// index will do.
func (t *joinBuildTable) reserveOrSkip(n int64) bool {
	return t.res.Grow(n) == nil
}

// indexRanked builds the ranked direct index over keys [lo, lo+span).
func (t *joinBuildTable) indexRanked(vals []int64, lo, span int64, tc *TaskContext) error {
	n := int64(len(vals))
	// The caller reserved the rank's words, dheads and next (4 bytes a row
	// each at most), and the ranks (8 a row) while building.
	k := t.keys[0]
	t.rank = newKeyRank(vals, k, lo, span)
	pos := t.rank.ranks(vals, k, lo)
	reordered, err := t.clusterByKey(pos, 0, int64(t.rank.count), tc)
	if err != nil {
		mempool.FreeSlice(pos)
		return err
	}
	if reordered {
		vals, _ = joinIntKeyValues(t.keys, nil)
		mempool.FreeSlice(pos)
		pos = t.rank.ranks(vals, t.keys[0], lo)
	}
	t.indexDirect(pos, 0, int64(t.rank.count))
	mempool.FreeSlice(pos)
	t.res.Shrink(n * 8)
	t.dmin = lo
	return nil
}

// indexDirect builds the direct index over keys [lo, lo+span).
func (t *joinBuildTable) indexDirect(vals []int64, lo, span int64) {
	t.intKey, t.direct, t.dmin = true, true, lo
	t.dheads = mempool.AllocSlice[int32](int(span))
	k := t.keys[0]
	nulls := k.NullN() > 0
	// Insert in reverse so that each chain lists rows in ascending order.
	for r := len(vals) - 1; r >= 0; r-- {
		if nulls && k.IsNull(r) {
			t.hasNullKey = true
			continue
		}
		d := vals[r] - lo
		if h := t.dheads[d]; h != 0 {
			if t.next == nil {
				t.next = mempool.AllocSlice[int32](len(vals))
			}
			t.next[r] = h
		}
		t.dheads[d] = int32(r + 1)
	}
}

// clusterMinRows is the smallest build side clusterByKey reorders: below
// it the table stays in cache and chains cost nothing.
const clusterMinRows = 1 << 16

// clusterByKey reorders a large build side whose keys repeat so that the
// rows of each key are adjacent, in their original order (a counting sort
// over the key range [lo, lo+span); NULL keys go last), and returns the
// reports whether it did. Chains then step to the next row, and a probe
// takes its matches from consecutive rows: q13's 1.5M orders keyed by
// customer were walked one cache miss per matching row. A table without
// repeated keys, or a small one, is left as it is.
func (t *joinBuildTable) clusterByKey(vals []int64, lo, span int64, tc *TaskContext) (bool, error) {
	n := len(vals)
	if n < clusterMinRows {
		return false, nil
	}
	k := t.keys[0]
	nulls := k.NullN() > 0
	start := mempool.AllocSlice[int32](int(span) + 1)
	defer mempool.FreeSlice(start)
	dup := false
	for r, v := range vals {
		if nulls && k.IsNull(r) {
			continue
		}
		c := &start[v-lo+1]
		dup = dup || *c != 0
		*c++
	}
	if !dup {
		return false, nil
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	perm := mempool.AllocSlice[int32](n)
	defer mempool.FreeSlice(perm)
	tail := int(start[len(start)-1]) // NULL keys after every key
	for r, v := range vals {
		if nulls && k.IsNull(r) {
			perm[tail] = int32(r)
			tail++
			continue
		}
		d := v - lo
		perm[start[d]] = int32(r)
		start[d]++
	}
	// The reordered copy exists beside the original until the swap.
	var bytes int64
	for _, c := range t.cols {
		bytes += kernels.ArrayBytes(c.Data())
	}
	bytes += kernels.ArrayBytes(k.Data())
	if err := t.res.Grow(bytes); err != nil {
		return false, fmt.Errorf("hash join build: %w", err)
	}
	defer t.res.Shrink(bytes)
	cols := make([]arrow.Array, len(t.cols)+1)
	for i, c := range append(slices.Clone(t.cols), k) {
		taken, err := kernels.TakeArray(tc.Alloc, c, perm)
		if err != nil {
			joinReleaseArrays(cols[:i])
			return false, fmt.Errorf("hash join build: clustering by key: %w", err)
		}
		cols[i] = taken
	}
	joinReleaseArrays(t.cols)
	k.Release()
	t.cols, t.keys[0] = cols[:len(t.cols)], cols[len(t.cols)]
	return true, nil
}

// directLookup returns the first build row+1 with key k (0: none) and
// whether more rows share it.
func (t *joinBuildTable) directLookup(k int64) (int32, bool) {
	d := uint64(k - t.dmin)
	if t.rank != nil {
		var ok bool
		if d, ok = t.rank.lookup(d); !ok {
			return 0, false
		}
	}
	if d >= uint64(len(t.dheads)) {
		return 0, false
	}
	h := t.dheads[d]
	return h, h != 0 && t.next != nil && t.next[h-1] != 0
}

// joinIntSlotCount is the power-of-two slot count keeping the load factor
// of n keys at most 3/4.
func joinIntSlotCount(n int) int {
	size := 16
	for size*3 < n*4 {
		size *= 2
	}
	return size
}

// joinIntKeyValues returns the values of a single integer key column as
// int64s (converting into scratch when needed); ok is false for other keys.
func joinIntKeyValues(keys []arrow.Array, scratch []int64) ([]int64, bool) {
	if len(keys) != 1 {
		return nil, false
	}
	switch a := keys[0].(type) {
	case *array.Int64:
		return a.Int64Values(), true
	case *array.Timestamp:
		v := a.TimestampValues()
		out := growSlice(scratch[:0], len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out, true
	case *array.Int32:
		v := a.Int32Values()
		out := growSlice(scratch[:0], len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out, true
	case *array.Date32:
		v := a.Date32Values()
		out := growSlice(scratch[:0], len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out, true
	}
	return nil, false
}

func joinRowHasNull(cols []arrow.Array, r int) bool {
	for _, c := range cols {
		if c.IsNull(r) {
			return true
		}
	}
	return false
}

// joinShared lets the output partitions of one join executing in the same
// task share one build table: the operator is immutable plan data, so this
// per-task runtime state lives behind a pointer, keyed by TaskContext, and is
// freed when the task's last stream of the join closes.
type joinShared struct {
	mu     sync.Mutex
	builds map[*TaskContext]*joinSharedBuild
}

type joinSharedBuild struct {
	refs    int
	started bool
	done    chan struct{}
	table   *joinBuildTable
	err     error
}

func newJoinShared() *joinShared {
	return &joinShared{builds: map[*TaskContext]*joinSharedBuild{}}
}

// acquire registers one more stream of tc using the shared build.
func (s *joinShared) acquire(tc *TaskContext) *joinSharedBuild {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.builds[tc]
	if e == nil {
		e = &joinSharedBuild{done: make(chan struct{})}
		s.builds[tc] = e
	}
	e.refs++
	return e
}

// get returns the table, building it in the first caller; the others wait
// for it (or for their ctx).
func (s *joinShared) get(ctx context.Context, e *joinSharedBuild, build func(context.Context) (*joinBuildTable, error)) (*joinBuildTable, error) {
	s.mu.Lock()
	first := !e.started
	e.started = true
	s.mu.Unlock()
	if first {
		// A panicking build must still wake the partitions waiting.
		e.err = RunSafe(func() error {
			t, err := build(ctx)
			e.table = t
			return err
		})
		close(e.done)
	}
	select {
	case <-e.done:
		return e.table, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// release drops one stream's reference; the last one frees the table.
func (s *joinShared) release(tc *TaskContext, e *joinSharedBuild) {
	s.mu.Lock()
	e.refs--
	last := e.refs == 0
	if last {
		delete(s.builds, tc)
	}
	started := e.started
	s.mu.Unlock()
	if last && started {
		// The builder runs inside a stream's Next; that stream holds a
		// reference until its Close, so the build has finished by now.
		<-e.done
		if e.table != nil {
			e.table.release()
			e.table = nil
		}
	}
}

// keyPack maps a pair of integer keys (a, b) within the build side's ranges
// onto one int64, (a-amin)*bspan + (b-bmin), so that a join on two integer
// columns (partsupp with lineitem on part and supplier) gets the integer
// indexes: one slot holding key and row instead of a hash bucket, a link and
// two key columns to compare, each a cache miss on a large build side. A
// pair outside the ranges cannot match and packs to -1; a pair with a NULL
// is NULL.
type keyPack struct {
	amin, aspan, bmin, bspan int64
}

// newKeyPack returns the pack for two integer build key columns whose
// ranges multiply to under 2^62, or false.
func newKeyPack(keys []arrow.Array) (*keyPack, bool) {
	if len(keys) != 2 {
		return nil, false
	}
	pk := &keyPack{}
	for i, k := range keys {
		vals, ok := joinIntKeyValues(keys[i:i+1], nil)
		if !ok {
			return nil, false
		}
		lo, span, ok := joinKeySpan(vals, k)
		if !ok || span > 1<<31 {
			return nil, false
		}
		if i == 0 {
			pk.amin, pk.aspan = lo, span
		} else {
			pk.bmin, pk.bspan = lo, span
		}
	}
	return pk, true
}

// pack returns keys packed into one Int64 array.
func (pk *keyPack) pack(mem memory.Allocator, keys []arrow.Array) arrow.Array {
	av, _ := joinIntKeyValues(keys[0:1], nil)
	bv, _ := joinIntKeyValues(keys[1:2], nil)
	n := len(av)
	nulls := keys[0].NullN() > 0 || keys[1].NullN() > 0
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if nulls && (keys[0].IsNull(i) || keys[1].IsNull(i)) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		da, db := uint64(av[i]-pk.amin), uint64(bv[i]-pk.bmin)
		v := int64(-1)
		if da < uint64(pk.aspan) && db < uint64(pk.bspan) {
			v = int64(da)*pk.bspan + int64(db)
		}
		b.UnsafeAppend(v)
	}
	return b.NewArray()
}
