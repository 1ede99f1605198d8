package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// choose builds an array of type dt where row i is row pos(i) of
// srcs[choice[i]], or NULL when choice[i] < 0. A source marked compact
// holds only the rows that chose it, in order; otherwise it is full length.
// CASE, COALESCE and NULLIF are all expressed as a choice per row.
func choose(dt arrow.DataType, choice []int32, srcs []arrow.Array, compact []bool, mem memory.Allocator) (arrow.Array, error) {
	n := len(choice)
	for _, s := range srcs {
		if s != nil && s.DataType().ID() != arrow.NULL && !arrow.TypeEqual(s.DataType(), dt) {
			return nil, fmt.Errorf("internal: branch of type %s where %s was expected", s.DataType(), dt)
		}
	}
	next := make([]int, len(srcs))
	// pos resolves the source row of row i and whether it is valid.
	vs := make([]validity, len(srcs))
	for k, s := range srcs {
		if s != nil {
			vs[k] = validityOf(s)
		}
	}
	rowOf := func(i int) (int, int, bool) {
		k := int(choice[i])
		if k < 0 || srcs[k] == nil {
			return -1, 0, false
		}
		j := i
		if compact[k] {
			j = next[k]
			next[k]++
		}
		return k, j, vs[k].valid(j)
	}
	validBuf, valid := allocBitmap(mem, n)
	nulls := 0
	finish := func(bufs ...*memory.Buffer) arrow.Array {
		if nulls == 0 {
			validBuf.Release()
			validBuf = nil
		}
		return makeArray(dt, n, validBuf, nulls, bufs...)
	}
	switch dt.ID() {
	case arrow.NULL:
		validBuf.Release()
		return array.NewNull(n), nil
	case arrow.INT32, arrow.DATE32:
		return chooseFixed[int32](dt, n, srcs, rowOf, valid, &nulls, mem, finish), nil
	case arrow.INT64, arrow.TIMESTAMP:
		return chooseFixed[int64](dt, n, srcs, rowOf, valid, &nulls, mem, finish), nil
	case arrow.FLOAT64:
		return chooseFixed[float64](dt, n, srcs, rowOf, valid, &nulls, mem, finish), nil
	case arrow.DECIMAL128:
		return chooseFixed[decimal128.Num](dt, n, srcs, rowOf, valid, &nulls, mem, finish), nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return chooseFixed[arrow.MonthDayNanoInterval](dt, n, srcs, rowOf, valid, &nulls, mem, finish), nil
	case arrow.BOOL:
		vbuf, vals := allocBitmap(mem, n)
		for i := 0; i < n; i++ {
			k, j, ok := rowOf(i)
			if !ok {
				nulls++
				continue
			}
			bitutil.SetBit(valid, i)
			bits, off := boolBits(srcs[k])
			if bitutil.BitIsSet(bits, off+j) {
				bitutil.SetBit(vals, i)
			}
		}
		return finish(vbuf), nil
	case arrow.STRING:
		validBuf.Release()
		views := make([]strs, len(srcs))
		for k, s := range srcs {
			if s != nil && s.DataType().ID() == arrow.STRING {
				views[k], _ = strsOf(operand{arr: s})
			}
		}
		b := newStringBuilder(mem, n, 0)
		for i := 0; i < n; i++ {
			k, j, ok := rowOf(i)
			if !ok {
				b.b.AppendNull()
				continue
			}
			b.b.BinaryBuilder.Append(views[k].at(j))
		}
		return b.finish(), nil
	case arrow.LIST:
		validBuf.Release()
		b := array.NewListBuilder(mem, dt.(*arrow.ListType).Elem())
		defer b.Release()
		for i := 0; i < n; i++ {
			k, j, ok := rowOf(i)
			if !ok {
				b.AppendNull()
				continue
			}
			l, isList := srcs[k].(*array.List)
			if !isList {
				return nil, fmt.Errorf("internal: cannot select %s values as %s", srcs[k].DataType(), dt)
			}
			if err := AppendListRow(b, l, j); err != nil {
				return nil, err
			}
		}
		return b.NewArray(), nil
	}
	validBuf.Release()
	return nil, fmt.Errorf("internal: cannot select values of type %s", dt)
}

func chooseFixed[T any](dt arrow.DataType, n int, srcs []arrow.Array, rowOf func(int) (int, int, bool),
	valid []byte, nulls *int, mem memory.Allocator, finish func(...*memory.Buffer) arrow.Array) arrow.Array {
	vals := make([][]T, len(srcs))
	for k, s := range srcs {
		if s != nil && s.DataType().ID() != arrow.NULL {
			vals[k] = values[T](s)
		}
	}
	buf, out := allocValues[T](mem, n)
	for i := 0; i < n; i++ {
		k, j, ok := rowOf(i)
		if !ok {
			*nulls++
			continue
		}
		bitutil.SetBit(valid, i)
		out[i] = vals[k][j]
	}
	return finish(buf)
}
