package physical

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// This file holds the row comparisons the sorting operators share: sort
// keys compared across a growing list of batches, and a binary heap.

// sortKeysString renders sort keys for EXPLAIN.
func sortKeysString(keys []SortKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.String()
	}
	return strings.Join(s, ", ")
}

// keyColumn compares values of one sort key across a growing list of
// batches, ignoring direction and nulls (rowComparator handles those).
type keyColumn interface {
	// add appends the key array of the next batch (nil: slot unused).
	add(a arrow.Array)
	// set replaces the key array of batch slot b.
	set(b int, a arrow.Array)
	compare(a, b kernels.RowRef) int
	isNull(r kernels.RowRef) bool
	// arrays are the key arrays per batch slot.
	arrays() []arrow.Array
}

type baseKeyColumn struct {
	arrs  []arrow.Array
	nulls []bool // per slot: the array has NULLs (skips IsNull calls)
}

func (c *baseKeyColumn) addArr(a arrow.Array) {
	c.arrs = append(c.arrs, a)
	c.nulls = append(c.nulls, a != nil && a.NullN() > 0)
}

func (c *baseKeyColumn) setArr(b int, a arrow.Array) {
	c.arrs[b] = a
	c.nulls[b] = a != nil && a.NullN() > 0
}

func (c *baseKeyColumn) isNull(r kernels.RowRef) bool {
	return c.nulls[r.Batch] && c.arrs[r.Batch].IsNull(int(r.Row))
}

func (c *baseKeyColumn) arrays() []arrow.Array { return c.arrs }

type orderedKeyColumn[T cmp.Ordered] struct {
	baseKeyColumn
	vals [][]T
}

func (c *orderedKeyColumn[T]) add(a arrow.Array) {
	c.addArr(a)
	c.vals = append(c.vals, orderedValues[T](a))
}

func (c *orderedKeyColumn[T]) set(b int, a arrow.Array) {
	c.setArr(b, a)
	c.vals[b] = orderedValues[T](a)
}

func orderedValues[T cmp.Ordered](a arrow.Array) []T {
	if a == nil {
		return nil
	}
	switch x := any(a).(type) {
	case *array.Int32:
		return any(x.Int32Values()).([]T)
	case *array.Date32:
		return any(arrow.GetValues[int32](x.Data(), 1)).([]T)
	case *array.Int64:
		return any(x.Int64Values()).([]T)
	case *array.Timestamp:
		return any(arrow.GetValues[int64](x.Data(), 1)).([]T)
	case *array.Float64:
		return any(x.Float64Values()).([]T)
	}
	panic(fmt.Sprintf("orderedValues: unexpected %T", a))
}

func (c *orderedKeyColumn[T]) compare(a, b kernels.RowRef) int {
	x, y := c.vals[a.Batch][a.Row], c.vals[b.Batch][b.Row]
	if x != x || y != y {
		// A NaN (only a float is unequal to itself): after every number.
		return expr.CompareFloats(any(x).(float64), any(y).(float64))
	}
	return cmp.Compare(x, y)
}

type stringKeyColumn struct {
	baseKeyColumn
	strs []*array.String
}

func (c *stringKeyColumn) add(a arrow.Array) {
	c.addArr(a)
	s, _ := a.(*array.String)
	c.strs = append(c.strs, s)
}

func (c *stringKeyColumn) set(b int, a arrow.Array) {
	c.setArr(b, a)
	c.strs[b], _ = a.(*array.String)
}

func (c *stringKeyColumn) compare(a, b kernels.RowRef) int {
	return strings.Compare(c.strs[a.Batch].Value(int(a.Row)), c.strs[b.Batch].Value(int(b.Row)))
}

type decimalKeyColumn struct {
	baseKeyColumn
	vals [][]decimal.Decimal128
}

func (c *decimalKeyColumn) add(a arrow.Array) {
	c.addArr(a)
	c.vals = append(c.vals, decimalValues(a))
}

func (c *decimalKeyColumn) set(b int, a arrow.Array) {
	c.setArr(b, a)
	c.vals[b] = decimalValues(a)
}

func decimalValues(a arrow.Array) []decimal.Decimal128 {
	if a == nil {
		return nil
	}
	return arrow.GetValues[decimal.Decimal128](a.Data(), 1)
}

func (c *decimalKeyColumn) compare(a, b kernels.RowRef) int {
	return c.vals[a.Batch][a.Row].Cmp(c.vals[b.Batch][b.Row])
}

type boolKeyColumn struct {
	baseKeyColumn
	bools []*array.Boolean
}

func (c *boolKeyColumn) add(a arrow.Array) {
	c.addArr(a)
	x, _ := a.(*array.Boolean)
	c.bools = append(c.bools, x)
}

func (c *boolKeyColumn) set(b int, a arrow.Array) {
	c.setArr(b, a)
	c.bools[b], _ = a.(*array.Boolean)
}

func (c *boolKeyColumn) compare(a, b kernels.RowRef) int {
	x, y := c.bools[a.Batch].Value(int(a.Row)), c.bools[b.Batch].Value(int(b.Row))
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}

// intervalKeyColumn orders intervals as PostgreSQL does
// (expr.CompareIntervals).
type intervalKeyColumn struct {
	baseKeyColumn
	vals [][]arrow.MonthDayNanoInterval
}

func intervalValues(a arrow.Array) []arrow.MonthDayNanoInterval {
	if a == nil {
		return nil
	}
	return arrow.GetValues[arrow.MonthDayNanoInterval](a.Data(), 1)
}

func (c *intervalKeyColumn) add(a arrow.Array) {
	c.addArr(a)
	c.vals = append(c.vals, intervalValues(a))
}

func (c *intervalKeyColumn) set(b int, a arrow.Array) {
	c.setArr(b, a)
	c.vals[b] = intervalValues(a)
}

func (c *intervalKeyColumn) compare(a, b kernels.RowRef) int {
	return expr.CompareIntervals(c.vals[a.Batch][a.Row], c.vals[b.Batch][b.Row])
}

// nullKeyColumn is a key of the NULL type: every value is NULL.
type nullKeyColumn struct{ baseKeyColumn }

func (c *nullKeyColumn) add(a arrow.Array)               { c.addArr(a) }
func (c *nullKeyColumn) set(b int, a arrow.Array)        { c.setArr(b, a) }
func (c *nullKeyColumn) compare(a, b kernels.RowRef) int { return 0 }
func (c *nullKeyColumn) isNull(kernels.RowRef) bool      { return true }

func newKeyColumn(dt arrow.DataType) (keyColumn, error) {
	switch dt.ID() {
	case arrow.INT32, arrow.DATE32:
		return &orderedKeyColumn[int32]{}, nil
	case arrow.INT64, arrow.TIMESTAMP:
		return &orderedKeyColumn[int64]{}, nil
	case arrow.FLOAT64:
		return &orderedKeyColumn[float64]{}, nil
	case arrow.DECIMAL128:
		return &decimalKeyColumn{}, nil
	case arrow.STRING:
		return &stringKeyColumn{}, nil
	case arrow.BOOL:
		return &boolKeyColumn{}, nil
	case arrow.NULL:
		return &nullKeyColumn{}, nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return &intervalKeyColumn{}, nil
	}
	return nil, fmt.Errorf("sorting by %s values is not supported", dt)
}

// rowComparator orders rows of a list of batches by sort keys. Batches are
// added in slots (addBatch); the key arrays it holds are owned by it.
type rowComparator struct {
	keys []SortKey
	cols []keyColumn
}

func newRowComparator(keys []SortKey) (*rowComparator, error) {
	c := &rowComparator{keys: keys, cols: make([]keyColumn, len(keys))}
	for i, k := range keys {
		kc, err := newKeyColumn(k.Expr.DataType())
		if err != nil {
			return nil, err
		}
		c.cols[i] = kc
	}
	return c, nil
}

// evalKeys evaluates the key expressions over batch, checking their types.
func (c *rowComparator) evalKeys(batch arrow.RecordBatch, mem memory.Allocator) ([]arrow.Array, error) {
	exprs := make([]expr.Expr, len(c.keys))
	for i, k := range c.keys {
		exprs[i] = k.Expr
	}
	arrs, err := kernels.EvalAll(exprs, batch, mem)
	if err != nil {
		return nil, err
	}
	for i, a := range arrs {
		if want := c.keys[i].Expr.DataType(); !arrow.TypeEqual(a.DataType(), want) && a.DataType().ID() != arrow.NULL {
			kernels.ReleaseAll(arrs)
			return nil, fmt.Errorf("sort key %s evaluated to %s, expected %s", c.keys[i].Expr, a.DataType(), want)
		}
		if a.DataType().ID() == arrow.NULL {
			// A NULL-typed result for a typed key: every value is NULL, so
			// substitute a typed all-null array the key column can read.
			na := array.MakeArrayOfNull(mem, c.keys[i].Expr.DataType(), a.Len())
			a.Release()
			arrs[i] = na
		}
	}
	return arrs, nil
}

// addBatch appends the key arrays of the next batch slot (ownership moves
// to the comparator; nil arrs adds an empty slot).
func (c *rowComparator) addBatch(arrs []arrow.Array) {
	for i, kc := range c.cols {
		if arrs == nil {
			kc.add(nil)
		} else {
			kc.add(arrs[i])
		}
	}
}

// dropBatch releases slot b's key arrays.
func (c *rowComparator) dropBatch(b int) {
	for _, kc := range c.cols {
		base := kc.arrays()
		if base[b] != nil {
			base[b].Release()
			kc.set(b, nil)
		}
	}
}

// release drops every slot.
func (c *rowComparator) release() {
	for _, kc := range c.cols {
		for b, a := range kc.arrays() {
			if a != nil {
				a.Release()
				kc.set(b, nil)
			}
		}
	}
}

// reset releases every slot and forgets them.
func (c *rowComparator) reset() {
	c.release()
	for i, k := range c.keys {
		c.cols[i], _ = newKeyColumn(k.Expr.DataType())
	}
}

// compare orders rows a and b: negative when a sorts first.
func (c *rowComparator) compare(a, b kernels.RowRef) int {
	return c.compareKeys(a, b, 0, len(c.cols))
}

// compareKeys orders rows a and b by keys from..to-1 alone.
func (c *rowComparator) compareKeys(a, b kernels.RowRef, from, to int) int {
	for i := from; i < to; i++ {
		kc := c.cols[i]
		an, bn := kc.isNull(a), kc.isNull(b)
		k := c.keys[i]
		switch {
		case an && bn:
			continue
		case an:
			if k.NullsFirst {
				return -1
			}
			return 1
		case bn:
			if k.NullsFirst {
				return 1
			}
			return -1
		}
		r := kc.compare(a, b)
		if r != 0 {
			if k.Desc {
				return -r
			}
			return r
		}
	}
	return 0
}

// heapUp restores the heap order of h (less(i, j): h[i] belongs above h[j])
// after h[i] was added or decreased. Sort's top-K and the sort-preserving
// merge keep their heaps with it.
func heapUp[T any](h []T, i int, less func(i, j int) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(i, p) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// heapDown restores the heap order of h after h[i] was replaced.
func heapDown[T any](h []T, i int, less func(i, j int) bool) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(r, l) {
			m = r
		}
		if !less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
