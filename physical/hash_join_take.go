package physical

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// joinTakeArray gathers arr[idx[i]] for every i; a negative index yields
// NULL (the padding side of an outer join).
func joinTakeArray(arr arrow.Array, idx []int32, mem memory.Allocator) (arrow.Array, error) {
	n := len(idx)
	nulls := arr.NullN() > 0
	b := array.NewBuilder(mem, arr.DataType())
	defer b.Release()
	b.Reserve(n)
	switch a := arr.(type) {
	case *array.Int64:
		bb, v := b.(*array.Int64Builder), a.Int64Values()
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(v[j])
			}
		}
	case *array.Int32:
		bb, v := b.(*array.Int32Builder), a.Int32Values()
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(v[j])
			}
		}
	case *array.Date32:
		bb, v := b.(*array.Date32Builder), a.Date32Values()
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(v[j])
			}
		}
	case *array.Timestamp:
		bb, v := b.(*array.TimestampBuilder), a.TimestampValues()
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(v[j])
			}
		}
	case *array.Float64:
		bb, v := b.(*array.Float64Builder), a.Float64Values()
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(v[j])
			}
		}
	case *array.Decimal128:
		bb, v := b.(*array.Decimal128Builder), a.Values()
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(v[j])
			}
		}
	case *array.Boolean:
		bb := b.(*array.BooleanBuilder)
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(a.Value(int(j)))
			}
		}
	case *array.String:
		bb := b.(*array.StringBuilder)
		size := 0
		for _, j := range idx {
			if j >= 0 {
				size += a.ValueLen(int(j))
			}
		}
		bb.ReserveData(size)
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.AppendNull()
			} else {
				bb.Append(a.Value(int(j)))
			}
		}
	case *array.MonthDayNanoInterval:
		bb := b.(*array.MonthDayNanoIntervalBuilder)
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.AppendNull()
			} else {
				bb.Append(a.Value(int(j)))
			}
		}
	case *array.Null:
		return array.NewNull(n), nil
	default:
		return nil, fmt.Errorf("gathering %s values is not supported", arr.DataType())
	}
	return b.NewArray(), nil
}

// joinTakeColumns gathers rows idx of every column.
func joinTakeColumns(cols []arrow.Array, idx []int32, mem memory.Allocator) ([]arrow.Array, error) {
	out := make([]arrow.Array, 0, len(cols))
	for _, c := range cols {
		t, err := joinTakeArray(c, idx, mem)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// joinNullColumns returns all-NULL columns of the given fields' types.
func joinNullColumns(fields []arrow.Field, n int, mem memory.Allocator) []arrow.Array {
	out := make([]arrow.Array, len(fields))
	for i, f := range fields {
		if f.Type.ID() == arrow.NULL {
			out[i] = array.NewNull(n)
			continue
		}
		b := array.NewBuilder(mem, f.Type)
		b.AppendNulls(n)
		out[i] = b.NewArray()
		b.Release()
	}
	return out
}
