package physical

import (
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/kernels"
	"sluice/plan"
)

// aggArrayAgg is array_agg(x [ORDER BY ...]) [FILTER (WHERE p)]: each
// group's values, NULLs included, as an array (NULL for a group without
// values). It keeps the arrays it was given (the argument of each batch,
// or the element arrays of merged partial states) and, per group,
// references to rows of them; emitting gathers the referenced rows into
// the elements of a list array. The partial state is that list itself, so
// merging appends a state's elements to its group: array_agg splits into
// partial and final aggregation like sum. With ORDER BY (cmp set) the
// order keys of each batch are kept beside its values and every group's
// rows are sorted when emitting; like ordered string_agg it then runs in
// single-stage aggregation, as does DISTINCT, which sorts by the argument
// and keeps one row of each run of equal ones (one NULL too, as
// PostgreSQL does). Arg2, when set, is the FILTER condition: rows
// where it is not true are skipped (a NULL argument cannot stand for
// them, since NULL is a value array_agg keeps).
type aggArrayAgg struct {
	elem  arrow.DataType
	srcs  []arrow.Array
	refs  [][]kernels.RowRef // per group: (index into srcs, row)
	bytes int64
	cmp   *rowComparator // ORDER BY keys, one slot per srcs entry; nil without ORDER BY
	// dedup (DISTINCT, whose ORDER BY keys are the argument) keeps one
	// of each run of rows with equal keys.
	dedup bool
	// joined is srcs concatenated, made on the first emit after a change
	// so that emitting in chunks gathers from one array.
	joined arrow.Array
	starts []int64 // offset of each src in joined
}

// aggOrderedArrayAgg is array_agg with ORDER BY: the stream hands it the
// order keys of every batch.
type aggOrderedArrayAgg struct{ *aggArrayAgg }

var (
	_ aggBinaryAccumulator  = (*aggArrayAgg)(nil)
	_ aggOrderedAccumulator = aggOrderedArrayAgg{}
)

// newAggArrayAgg returns the accumulator of a, ordered when a has ORDER BY.
func newAggArrayAgg(a AggregateExpr, argType arrow.DataType) (aggAccumulator, error) {
	if argType.ID() == arrow.LIST {
		return nil, fmt.Errorf("array_agg of arrays is not supported")
	}
	if a.Arg2 != nil && a.Arg2.DataType().ID() != arrow.BOOL {
		return nil, fmt.Errorf("array_agg: filter of type %s, not boolean", a.Arg2.DataType())
	}
	s := &aggArrayAgg{elem: argType, dedup: a.Distinct}
	if a.Distinct && len(a.OrderBy) == 0 {
		return nil, fmt.Errorf("array_agg(DISTINCT ...) needs its argument as ORDER BY key")
	}
	if len(a.OrderBy) > 0 {
		c, err := newRowComparator(a.OrderBy)
		if err != nil {
			return nil, fmt.Errorf("array_agg: %w", err)
		}
		s.cmp = c
		return aggOrderedArrayAgg{s}, nil
	}
	return s, nil
}

func (s *aggArrayAgg) resize(n int) { s.refs = growSlice(s.refs, n) }

// keep retains arr as the next source and returns its index.
func (s *aggArrayAgg) keep(arr arrow.Array) int32 {
	arr.Retain()
	s.srcs = append(s.srcs, arr)
	s.bytes += kernels.ArrayBytes(arr.Data())
	s.dropJoined()
	return int32(len(s.srcs) - 1)
}

func (s *aggArrayAgg) update(gids []int32, arg arrow.Array) error {
	return s.add(gids, arg, nil)
}

func (s *aggArrayAgg) update2(gids []int32, arg, filter arrow.Array) error {
	return s.add(gids, arg, filter)
}

// add appends every row of arg whose filter (if any) is true to its group.
func (s *aggArrayAgg) add(gids []int32, arg, filter arrow.Array) error {
	if s.cmp != nil {
		return errors.New("array_agg: ORDER BY needs the order keys")
	}
	return s.addRows(gids, arg, filter)
}

func (s *aggArrayAgg) addRows(gids []int32, arg, filter arrow.Array) error {
	var f *array.Boolean
	if filter != nil {
		var ok bool
		if f, ok = filter.(*array.Boolean); !ok {
			return fmt.Errorf("array_agg: filter of type %s", filter.DataType())
		}
	}
	b := s.keep(arg)
	before := int64(0)
	for i, g := range gids {
		if f != nil && (f.IsNull(i) || !f.Value(i)) {
			continue
		}
		before = int64(cap(s.refs[g]))
		s.refs[g] = append(s.refs[g], kernels.RowRef{Batch: b, Row: int32(i)})
		s.bytes += 8 * (int64(cap(s.refs[g])) - before)
	}
	return nil
}

func (s aggOrderedArrayAgg) updateOrdered(gids []int32, arg, filter arrow.Array, keys []arrow.Array) error {
	if s.cmp == nil {
		kernels.ReleaseAll(keys)
		return errors.New("array_agg: no ORDER BY")
	}
	s.cmp.addBatch(keys)
	for _, k := range keys {
		s.bytes += kernels.ArrayBytes(k.Data())
	}
	return s.addRows(gids, arg, filter)
}

func (s aggOrderedArrayAgg) evalKeys(b arrow.RecordBatch, mem memory.Allocator) ([]arrow.Array, error) {
	return s.cmp.evalKeys(b, mem)
}

// merge appends the elements of each partial state to its group.
func (s *aggArrayAgg) merge(gids []int32, states []arrow.Array) error {
	if s.cmp != nil {
		return errors.New("array_agg with ORDER BY cannot merge partial states")
	}
	l, ok := states[0].(*array.List)
	if !ok {
		return fmt.Errorf("array_agg: state of type %s, not an array", states[0].DataType())
	}
	b := s.keep(l.ListValues())
	for i, g := range gids {
		if l.IsNull(i) {
			continue
		}
		lo, hi := l.ValueOffsets(i)
		before := int64(cap(s.refs[g]))
		for k := lo; k < hi; k++ {
			s.refs[g] = append(s.refs[g], kernels.RowRef{Batch: b, Row: int32(k)})
		}
		s.bytes += 8 * (int64(cap(s.refs[g])) - before)
	}
	return nil
}

func (s *aggArrayAgg) stateTypes() []arrow.DataType {
	return []arrow.DataType{plan.ArrayOf(s.elem)}
}

func (s *aggArrayAgg) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	if s.cmp != nil {
		return nil, errors.New("array_agg with ORDER BY has no partial state")
	}
	l, err := s.emitFinal(start, end, mem)
	if err != nil {
		return nil, err
	}
	return []arrow.Array{l}, nil
}

// emitFinal gathers groups [start, end) into a list array: a group's
// elements in arrival order (key order with ORDER BY, rows with equal
// keys in arrival order), NULL for a group without any.
func (s *aggArrayAgg) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	if s.joined == nil && len(s.srcs) > 0 {
		joined, err := array.Concatenate(s.srcs, mem)
		if err != nil {
			return nil, fmt.Errorf("array_agg: %w", err)
		}
		s.joined = joined
		s.starts = make([]int64, len(s.srcs))
		var off int64
		for i, a := range s.srcs {
			s.starts[i] = off
			off += int64(a.Len())
		}
	}
	n := end - start
	offsets := make([]int32, n+1)
	valid := make([]bool, n)
	var idx []int32
	for g := start; g < end; g++ {
		refs := s.refs[g]
		if s.cmp != nil {
			sort.SliceStable(refs, func(i, j int) bool { return s.cmp.compare(refs[i], refs[j]) < 0 })
		}
		for k, r := range refs {
			if s.dedup && k > 0 && s.cmp.compare(refs[k-1], r) == 0 {
				continue
			}
			idx = append(idx, int32(s.starts[r.Batch]+int64(r.Row)))
		}
		offsets[g-start+1] = int32(len(idx))
		valid[g-start] = len(refs) > 0
	}
	var values arrow.Array
	if s.joined == nil {
		values = array.MakeArrayOfNull(mem, s.elem, 0)
	} else {
		var err error
		if values, err = kernels.TakeArray(mem, s.joined, idx); err != nil {
			return nil, fmt.Errorf("array_agg: %w", err)
		}
	}
	defer values.Release()
	ob := array.NewInt32Builder(mem)
	defer ob.Release()
	ob.AppendValues(offsets, nil)
	offArr := ob.NewInt32Array()
	defer offArr.Release()
	vb := array.NewBooleanBuilder(mem)
	defer vb.Release()
	vb.AppendValues(valid, nil)
	vArr := vb.NewBooleanArray()
	defer vArr.Release()
	return listFromParts(plan.ArrayOf(s.elem), offArr, vArr, values, mem)
}

// listFromParts builds a list array of type lt from its offsets, a
// validity per row, and its elements.
func listFromParts(lt arrow.DataType, offsets *array.Int32, valid *array.Boolean, values arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	n := valid.Len()
	nulls := 0
	bits := memory.NewResizableBuffer(mem)
	bits.Resize((n + 7) / 8)
	bs := bits.Bytes()
	clear(bs)
	for i := 0; i < n; i++ {
		if valid.Value(i) {
			bs[i/8] |= 1 << (i % 8)
		} else {
			nulls++
		}
	}
	data := array.NewData(lt, n, []*memory.Buffer{bits, offsets.Data().Buffers()[1]}, []arrow.ArrayData{values.Data()}, nulls, 0)
	defer data.Release()
	bits.Release()
	return array.MakeFromData(data), nil
}

func (s *aggArrayAgg) memSize() int64 { return int64(cap(s.refs))*24 + s.bytes }

// dropJoined forgets the concatenation, which a new source outdates.
func (s *aggArrayAgg) dropJoined() {
	if s.joined != nil {
		s.joined.Release()
		s.joined, s.starts = nil, nil
	}
}

// release frees the kept arrays and order keys.
func (s *aggArrayAgg) release() {
	s.dropJoined()
	kernels.ReleaseAll(s.srcs)
	s.srcs = nil
	if s.cmp != nil {
		s.cmp.release()
	}
}
