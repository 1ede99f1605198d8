package physical

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/plan"
)

// JoinMode says how a HashJoin's build side relates to its output
// partitions.
type JoinMode int

// Join modes.
const (
	// JoinCollectLeft builds one table from every left partition, shared by
	// all output partitions of a task; output partition i probes right
	// partition i.
	JoinCollectLeft JoinMode = iota
	// JoinPartitioned joins left partition i with right partition i (both
	// sides hash-partitioned on the keys, same count).
	JoinPartitioned
)

func (m JoinMode) String() string {
	if m == JoinPartitioned {
		return "Partitioned"
	}
	return "CollectLeft"
}

// HashJoin is an equi-join: the left input is hashed on leftKeys, the right
// input probes it with rightKeys. A pair of rows matches when every key pair
// is equal (NULL never equals anything) and the optional filter, evaluated
// on left columns followed by right columns, is true.
//
// With nullAware (RightAnti, one key, CollectLeft) the join implements
// `probe NOT IN (build keys)`: nothing is output if a build key is NULL;
// every probe row is output if the build side is empty; otherwise probe rows
// with a NULL key or a matching key are dropped.
//
// Output: semi/anti joins output the named side's columns; the others output
// left columns then right columns, all nullable.
type HashJoin struct {
	left, right         Operator
	joinType            JoinType
	leftKeys, rightKeys []expr.Expr
	filter              expr.Expr
	nullAware           bool
	mode                JoinMode
	out                 *joinOutput
	shared              *joinShared
}

// NewHashJoin validates the join and computes its schema.
func NewHashJoin(left, right Operator, joinType JoinType, leftKeys, rightKeys []expr.Expr, filter expr.Expr, nullAware bool, mode JoinMode) (*HashJoin, error) {
	if joinType < JoinInner || joinType > JoinRightAnti {
		return nil, fmt.Errorf("hash join: unknown join type %d", joinType)
	}
	if len(leftKeys) == 0 || len(leftKeys) != len(rightKeys) {
		return nil, fmt.Errorf("hash join: need equal non-zero numbers of keys, got %d and %d", len(leftKeys), len(rightKeys))
	}
	for i := range leftKeys {
		lt, rt := leftKeys[i].DataType(), rightKeys[i].DataType()
		if !arrow.TypeEqual(lt, rt) {
			return nil, fmt.Errorf("hash join: key %d types differ: %s and %s", i, lt, rt)
		}
		if _, err := joinKeyEqual(lt); err != nil {
			return nil, fmt.Errorf("hash join: %w", err)
		}
	}
	if filter != nil && filter.DataType().ID() != arrow.BOOL {
		return nil, fmt.Errorf("hash join: filter %s is %s, not boolean", filter, filter.DataType())
	}
	lp, rp := left.OutputPartitioning().Count, right.OutputPartitioning().Count
	switch mode {
	case JoinCollectLeft:
		if joinType.EmitsUnmatchedBuild() && rp != 1 {
			return nil, fmt.Errorf("hash join: %s join in CollectLeft mode needs a single probe partition, got %d", joinType, rp)
		}
	case JoinPartitioned:
		if lp != rp {
			return nil, fmt.Errorf("hash join: partitioned mode needs equal partition counts, got %d and %d", lp, rp)
		}
	default:
		return nil, fmt.Errorf("hash join: unknown mode %d", mode)
	}
	if nullAware {
		if joinType != JoinRightAnti || len(leftKeys) != 1 || mode != JoinCollectLeft {
			return nil, fmt.Errorf("hash join: null-aware needs a RightAnti join on one key in CollectLeft mode")
		}
	}
	schema, pair := joinSchemas(joinType, left.Schema(), right.Schema())
	return &HashJoin{
		left: left, right: right, joinType: joinType, leftKeys: leftKeys, rightKeys: rightKeys,
		filter: filter, nullAware: nullAware, mode: mode, shared: newJoinShared(),
		out: &joinOutput{
			joinType: joinType, schema: schema, pairSchema: pair, filter: filter, nullAware: nullAware,
			leftFields: left.Schema().Fields(), rightFields: right.Schema().Fields(),
		},
	}, nil
}

// Schema implements Operator.
func (h *HashJoin) Schema() *arrow.Schema { return h.out.schema }

// Children implements Operator.
func (h *HashJoin) Children() []Operator { return []Operator{h.left, h.right} }

// OutputPartitioning implements Operator: one output partition per right
// partition. Output partition p holds only rows of right partition p, so a
// hash partitioning of the right side carries over to its columns whenever
// every output row has a right row (not Left or Full).
//
// In Partitioned mode partition p also holds only left partition p's rows,
// so a left or left-semi/anti join's output is hashed as its left side is;
// it is not claimed. A join over it would then run in the same task, while
// this join still holds its build table to emit from it, and under a tight
// memory limit the pair failed where a shuffle between them let each spill
// (TPC-H q21, TestSpillTPCH).
func (h *HashJoin) OutputPartitioning() Partitioning {
	return joinOutputPartitioning(h.joinType, h.right.OutputPartitioning(), len(h.left.Schema().Fields()))
}

// joinOutputPartitioning is the partitioning of a join's output given its
// probe (right) side's: the probe side's hash keys, shifted past the left
// columns when the output has them, for joins where every output row
// carries a probe row. Otherwise the output is partitioned in an unknown
// way.
func joinOutputPartitioning(jt JoinType, right Partitioning, leftWidth int) Partitioning {
	switch jt {
	case JoinInner, JoinRight, JoinRightSemi, JoinRightAnti:
		if right.Kind != PartHash {
			break
		}
		shift := leftWidth
		if jt == JoinRightSemi || jt == JoinRightAnti {
			shift = 0
		}
		return shiftedHash(right, shift)
	}
	return Partitioning{Kind: PartUnknown, Count: right.Count}
}

// equalColumns lists pairs of op's output columns that hold equal values
// in every output row: the key columns an inner hash join matched on
// (equal and not NULL), seen through filters. A hash partitioning on one
// of a pair holds on the other.
func equalColumns(op Operator) [][2]int {
	switch o := op.(type) {
	case *HashJoin:
		if o.joinType != JoinInner {
			return nil
		}
		return o.keyColumnPairs()
	case *Filter:
		return equalColumns(o.input)
	}
	return nil
}

// keyColumnPairs lists the join's key pairs that are plain columns of one
// type, as output columns: the left key's index and the right key's,
// moved past the left columns.
func (h *HashJoin) keyColumnPairs() [][2]int {
	nl := len(h.left.Schema().Fields())
	var out [][2]int
	for i := range h.leftKeys {
		l, ok1 := h.leftKeys[i].(*expr.Column)
		r, ok2 := h.rightKeys[i].(*expr.Column)
		if ok1 && ok2 && arrow.TypeEqual(l.Type, r.Type) {
			out = append(out, [2]int{l.Index, nl + r.Index})
		}
	}
	return out
}

// shiftedHash is hash partitioning p with its key columns moved shift
// places right, or unknown when a key is not a plain column.
func shiftedHash(p Partitioning, shift int) Partitioning {
	keys := make([]expr.Expr, len(p.Keys))
	for i, k := range p.Keys {
		c, ok := k.(*expr.Column)
		if !ok {
			return Partitioning{Kind: PartUnknown, Count: p.Count}
		}
		keys[i] = &expr.Column{Index: c.Index + shift, Name: c.Name, Type: c.Type}
	}
	return Partitioning{Kind: PartHash, Count: p.Count, Keys: keys}
}

func (h *HashJoin) String() string {
	on := make([]string, len(h.leftKeys))
	for i := range h.leftKeys {
		on[i] = fmt.Sprintf("%s = %s", h.leftKeys[i], h.rightKeys[i])
	}
	s := fmt.Sprintf("HashJoin(%s, %s): on=[%s]", h.joinType, h.mode, strings.Join(on, ", "))
	if h.filter != nil {
		s += fmt.Sprintf(", filter=%s", h.filter)
	}
	if h.nullAware {
		s += ", null-aware"
	}
	return s
}

// Execute implements Operator.
func (h *HashJoin) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	// A runtime filter is registered before the probe side starts, so that
	// its scan finds it (runtime_filter.go).
	var rfs []*runtimeFilter
	for _, t := range h.runtimeFilterTargets() {
		rfs = append(rfs, tc.runtimeFilters().forJoin(h, t.scan, t.col, t.key))
	}
	probe, err := ExecuteOp(ctx, h.right, partition, tc)
	if err != nil {
		return nil, fmt.Errorf("hash join probe: %w", err)
	}
	owner := fmt.Sprintf("HashJoin[%d]", partition)
	if h.mode == JoinPartitioned {
		if tc.SpillDir != "" {
			// A build side the pool refuses spills (hash_join_spill.go).
			return h.newSpillingJoin(ctx, tc, probe, h.left, []int{partition}, owner, 0), nil
		}
		var table *joinBuildTable
		return h.probeStream(tc, probe, func(ctx context.Context) (*joinBuildTable, error) {
			t, err := buildJoinTable(ctx, h.left, []int{partition}, h.leftKeys, tc, owner)
			table = t
			return t, err
		}, func() {
			if table != nil {
				table.release()
				table = nil
			}
		}), nil
	}
	e := h.shared.acquire(tc)
	parts := allPartitions(h.left)
	if tc.SpillDir != "" {
		// The shared build side spills once, to bucket files every
		// partition reads (hash_join_spill.go).
		s := &spillingJoinStream{h: h, tc: tc, owner: owner, probe: probe, release: func() { h.shared.release(tc, e) }}
		s.getBuild = func(ctx context.Context) (*joinBuildTable, error) {
			t, err := h.shared.get(ctx, e, func(ctx context.Context) (*joinBuildTable, error) {
				return readJoinBuild(ctx, h.left, parts, h.leftKeys, tc, newJoinBuildReservation(ctx, tc, "HashJoin[collect]", 0), 0)
			})
			if err == nil {
				for _, rf := range rfs {
					if t.spilled != nil {
						rf.publishNone()
					} else {
						rf.publish(t)
					}
				}
			}
			return t, err
		}
		return s, nil
	}
	return h.probeStream(tc, probe, func(ctx context.Context) (*joinBuildTable, error) {
		t, err := h.shared.get(ctx, e, func(ctx context.Context) (*joinBuildTable, error) {
			return buildJoinTable(ctx, h.left, parts, h.leftKeys, tc, "HashJoin[collect]")
		})
		if err == nil {
			for _, rf := range rfs {
				rf.publish(t)
			}
		}
		return t, err
	}, func() { h.shared.release(tc, e) }), nil
}

// probeStream probes the table getTable returns with the rows of probe;
// onClose releases the table.
func (h *HashJoin) probeStream(tc *TaskContext, probe Stream, getTable func(context.Context) (*joinBuildTable, error), onClose func()) *joinProbeStream {
	return &joinProbeStream{
		out: h.out, tc: tc, probe: probe, getTable: getTable, onClose: onClose,
		newCandidates: func(t *joinBuildTable) joinCandidates {
			firstOnly := h.filter == nil && (h.joinType == JoinRightSemi || h.joinType == JoinRightAnti)
			return &hashJoinCandidates{table: t, keys: h.rightKeys, tc: tc, firstOnly: firstOnly}
		},
	}
}

// hashJoinCandidates finds, for each probe row, the build rows with equal
// keys: through the integer-key slots, or by walking the hash chain of the
// row's key hash and comparing keys.
type hashJoinCandidates struct {
	table     *joinBuildTable
	keys      []expr.Expr
	tc        *TaskContext
	firstOnly bool

	probeKeys []arrow.Array
	hashes    []uint64
	eq        []func(b, p int) bool
	// Single integer key: probe values (and conversion scratch).
	pInt, scratch []int64
	hasNull       bool
	n             int
	row           int   // next probe row
	chain         int32 // next build row+1 for the current probe row
	started       bool  // the current row's first build row was looked up
}

func (c *hashJoinCandidates) reset(b arrow.RecordBatch) error {
	c.clear()
	for _, k := range c.keys {
		a, err := k.Eval(b, c.tc.Alloc)
		if err != nil {
			return fmt.Errorf("hash join probe key %s: %w", k, err)
		}
		c.probeKeys = append(c.probeKeys, a)
	}
	if pk := c.table.pack; pk != nil {
		packed := pk.pack(c.tc.Alloc, c.probeKeys)
		joinReleaseArrays(c.probeKeys)
		c.probeKeys = append(c.probeKeys[:0], packed)
	}
	c.n = int(b.NumRows())
	c.hasNull = false
	for _, pk := range c.probeKeys {
		c.hasNull = c.hasNull || pk.NullN() > 0
	}
	c.row, c.chain, c.started = 0, 0, false
	if c.table.intKey {
		vals, _ := joinIntKeyValues(c.probeKeys, c.scratch)
		if _, direct := c.probeKeys[0].(*array.Int64); !direct {
			c.scratch = vals // converted: keep the buffer for the next batch
		}
		c.pInt = vals
		return nil
	}
	c.hashes = growSlice(c.hashes[:0], c.n)
	if err := HashRows(c.probeKeys, c.hashes); err != nil {
		return fmt.Errorf("hash join probe: %w", err)
	}
	for i, pk := range c.probeKeys {
		bk := c.table.keys[i]
		mk, err := joinKeyEqual(bk.DataType())
		if err != nil {
			return err
		}
		c.eq = append(c.eq, mk(bk, pk))
	}
	return nil
}

func (c *hashJoinCandidates) probeKeyNull(r int) bool {
	return c.hasNull && joinRowHasNull(c.probeKeys, r)
}

func (c *hashJoinCandidates) match(b, p int) bool {
	for _, eq := range c.eq {
		if !eq(b, p) {
			return false
		}
	}
	return true
}

// first returns the first candidate build row+1 of probe row p (0: none)
// and whether more may follow through the chain.
func (c *hashJoinCandidates) first(p int) (int32, bool) {
	if c.hasNull && joinRowHasNull(c.probeKeys, p) {
		return 0, false
	}
	t := c.table
	if t.direct {
		return t.directLookup(c.pInt[p])
	}
	if t.intKey {
		k := c.pInt[p]
		if t.bitmap != nil {
			if d := uint64(k - t.dmin); d >= uint64(len(t.bitmap))*64 || t.bitmap[d>>6]&(1<<(d&63)) == 0 {
				return 0, false
			}
		}
		pos := mix(uint64(k)) & t.mask
		for {
			s := &t.islots[pos]
			if s.head == 0 {
				return 0, false
			}
			if s.key == k {
				return s.head, s.dup
			}
			pos = (pos + 1) & t.mask
		}
	}
	return t.heads[c.hashes[p]&t.mask], true
}

// advance returns the build row+1 after row b (0: end of chain).
func (c *hashJoinCandidates) advance(b int) int32 {
	if c.table.intKey {
		return c.table.next[b]
	}
	return c.table.links[b].next
}

// accept reports whether build row b really matches probe row p (integer
// keys are exact already; chains mix keys sharing a bucket).
func (c *hashJoinCandidates) accept(b, p int) bool {
	if c.table.intKey {
		return true
	}
	return c.table.links[b].hash == c.hashes[p] && c.match(b, p)
}

func (c *hashJoinCandidates) next(bi, pi []int32, limit int) ([]int32, []int32, bool) {
	added := 0
	fast := !c.hasNull && !c.started
	switch {
	case fast && c.table.rank != nil && (c.firstOnly || c.table.next == nil):
		// A ranked direct index without chains: the same loop through the
		// key's rank.
		t := c.table
		dh, lo, rk := t.dheads, t.dmin, t.rank
		for c.row < c.n && added < limit {
			m := min(c.n-c.row, limit-added)
			bi, pi = slices.Grow(bi, m), slices.Grow(pi, m)
			bb, pp := bi[len(bi):len(bi)+m], pi[len(pi):len(pi)+m]
			k := 0
			for i, key := range c.pInt[c.row : c.row+m] {
				h := int32(0)
				if r, ok := rk.lookup(uint64(key - lo)); ok {
					h = dh[r]
				}
				bb[k] = h - 1
				pp[k] = int32(c.row + i)
				k += b2i(h != 0)
			}
			bi, pi = bi[:len(bi)+k], pi[:len(pi)+k]
			added += k
			c.row += m
		}
	case fast && c.table.direct && c.table.rank == nil && (c.firstOnly || c.table.next == nil):
		// A direct index without chains: at most one candidate per probe
		// row. Every row is written and the count advances by whether it
		// had one, without a branch on it (a join keeping a fifth of its
		// probe rows, as q5's and q7's supplier joins do, mispredicts
		// that branch often).
		t := c.table
		dh, lo := t.dheads, t.dmin
		for c.row < c.n && added < limit {
			m := min(c.n-c.row, limit-added)
			bi, pi = slices.Grow(bi, m), slices.Grow(pi, m)
			bb, pp := bi[len(bi):len(bi)+m], pi[len(pi):len(pi)+m]
			k := 0
			for i, key := range c.pInt[c.row : c.row+m] {
				h := int32(0)
				if d := uint64(key - lo); d < uint64(len(dh)) {
					h = dh[d]
				}
				bb[k] = h - 1
				pp[k] = int32(c.row + i)
				k += b2i(h != 0)
			}
			bi, pi = bi[:len(bi)+k], pi[:len(pi)+k]
			added += k
			c.row += m
		}
	case fast && c.table.direct && c.table.rank == nil:
		// Fast path for a direct index: one load per probe row.
		t := c.table
		dh, lo := t.dheads, t.dmin
		for c.row < c.n && added < limit {
			p := c.row
			d := uint64(c.pInt[p] - lo)
			if d >= uint64(len(dh)) || dh[d] == 0 {
				c.row++
				continue
			}
			h := dh[d]
			if !c.firstOnly && t.next != nil && t.next[h-1] != 0 {
				break // a chain: the general loop below walks it
			}
			bi = append(bi, h-1)
			pi = append(pi, int32(p))
			added++
			c.row++
		}
	case fast && c.table.intKey && !c.table.direct:
		// Fast path: a tight loop for the common unique-key case.
		t := c.table
		bm, lo, nb := t.bitmap, t.dmin, uint64(len(t.bitmap))*64
		// The row cursor lives in a local while the loop runs: as a field
		// it was loaded and stored for every row (the appends below write
		// memory the compiler cannot tell apart from it), and a bitmap
		// that rules out most rows (q17: 2,000 parts of 200,000) makes
		// that most of the work.
		row, keys := c.row, c.pInt[:c.n]
		for row < len(keys) && added < limit {
			p := row
			k := keys[p]
			if bm != nil {
				// Rows the key bitmap rules out never touch the slots.
				if d := uint64(k - lo); d >= nb || bm[d>>6]&(1<<(d&63)) == 0 {
					row++
					continue
				}
			}
			pos := mix(uint64(k)) & t.mask
			var s *joinIntSlot
			for {
				s = &t.islots[pos]
				if s.head == 0 || s.key == k {
					break
				}
				pos = (pos + 1) & t.mask
			}
			if s.head == 0 {
				row++
				continue
			}
			if s.dup && !c.firstOnly {
				// Hand the chain to the general loop below.
				break
			}
			bi = append(bi, s.head-1)
			pi = append(pi, int32(p))
			added++
			row++
		}
		c.row = row
	default:
		fast = false
	}
	if fast {
		if c.row >= c.n {
			return bi, pi, true
		}
		if added >= limit {
			return bi, pi, false
		}
	}
	for c.row < c.n {
		p := c.row
		more := true
		if !c.started {
			c.started = true
			c.chain, more = c.first(p)
		}
		for c.chain != 0 {
			b := int(c.chain - 1)
			if more {
				c.chain = c.advance(b)
			} else {
				c.chain = 0
			}
			if c.accept(b, p) {
				bi = append(bi, int32(b))
				pi = append(pi, int32(p))
				added++
				if c.firstOnly {
					c.chain = 0
				}
				if added >= limit {
					if c.chain == 0 {
						c.row++
						c.started = false
					}
					return bi, pi, c.row >= c.n
				}
			}
		}
		c.row++
		c.started = false
	}
	return bi, pi, true
}

func (c *hashJoinCandidates) clear() {
	joinReleaseArrays(c.probeKeys)
	c.probeKeys = c.probeKeys[:0]
	c.eq = c.eq[:0]
	c.pInt = nil
}

// joinKeyEqual returns a maker of equality functions between a build key
// array and a probe key array of type t (values only: NULLs never get here).
func joinKeyEqual(t arrow.DataType) (func(b, p arrow.Array) func(i, j int) bool, error) {
	switch t.ID() {
	case arrow.INT64:
		return func(b, p arrow.Array) func(i, j int) bool {
			bv, pv := b.(*array.Int64).Int64Values(), p.(*array.Int64).Int64Values()
			return func(i, j int) bool { return bv[i] == pv[j] }
		}, nil
	case arrow.INT32:
		return func(b, p arrow.Array) func(i, j int) bool {
			bv, pv := b.(*array.Int32).Int32Values(), p.(*array.Int32).Int32Values()
			return func(i, j int) bool { return bv[i] == pv[j] }
		}, nil
	case arrow.DATE32:
		return func(b, p arrow.Array) func(i, j int) bool {
			bv, pv := b.(*array.Date32).Date32Values(), p.(*array.Date32).Date32Values()
			return func(i, j int) bool { return bv[i] == pv[j] }
		}, nil
	case arrow.TIMESTAMP:
		return func(b, p arrow.Array) func(i, j int) bool {
			bv, pv := b.(*array.Timestamp).TimestampValues(), p.(*array.Timestamp).TimestampValues()
			return func(i, j int) bool { return bv[i] == pv[j] }
		}, nil
	case arrow.FLOAT64:
		return func(b, p arrow.Array) func(i, j int) bool {
			bv, pv := b.(*array.Float64).Float64Values(), p.(*array.Float64).Float64Values()
			return func(i, j int) bool { return expr.FloatsEqual(bv[i], pv[j]) }
		}, nil
	case arrow.DECIMAL128:
		return func(b, p arrow.Array) func(i, j int) bool {
			bv, pv := b.(*array.Decimal128).Values(), p.(*array.Decimal128).Values()
			return func(i, j int) bool { return bv[i] == pv[j] }
		}, nil
	case arrow.STRING:
		return func(b, p arrow.Array) func(i, j int) bool {
			bs, ps := b.(*array.String), p.(*array.String)
			return func(i, j int) bool { return bs.Value(i) == ps.Value(j) }
		}, nil
	case arrow.BOOL:
		return func(b, p arrow.Array) func(i, j int) bool {
			bs, ps := b.(*array.Boolean), p.(*array.Boolean)
			return func(i, j int) bool { return bs.Value(i) == ps.Value(j) }
		}, nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return func(b, p arrow.Array) func(i, j int) bool {
			bv := b.(*array.MonthDayNanoInterval).MonthDayNanoIntervalValues()
			pv := p.(*array.MonthDayNanoInterval).MonthDayNanoIntervalValues()
			return func(i, j int) bool { return expr.CompareIntervals(bv[i], pv[j]) == 0 }
		}, nil
	}
	return nil, fmt.Errorf("join keys of type %s are not supported", plan.TypeName(t))
}
