package physical

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
)

// joinTakeArray gathers arr[idx[i]] for every i; a negative index yields
// NULL (the padding side of an outer join).
func joinTakeArray(arr arrow.Array, idx []int32, mem memory.Allocator) (arrow.Array, error) {
	n := len(idx)
	nulls := arr.NullN() > 0
	switch a := arr.(type) {
	case *array.Int64:
		return joinTakeFixed(a.Int64Values(), arr, idx, mem), nil
	case *array.Int32:
		return joinTakeFixed(a.Int32Values(), arr, idx, mem), nil
	case *array.Date32:
		return joinTakeFixed(a.Date32Values(), arr, idx, mem), nil
	case *array.Timestamp:
		return joinTakeFixed(a.TimestampValues(), arr, idx, mem), nil
	case *array.Float64:
		return joinTakeFixed(a.Float64Values(), arr, idx, mem), nil
	case *array.Decimal128:
		return joinTakeFixed(a.Values(), arr, idx, mem), nil
	case *array.String:
		return kernels.TakeString(mem, a, idx), nil
	case *array.Null:
		return array.NewNull(n), nil
	case *array.List:
		return expr.TakeList(mem, a, idx)
	}
	b := array.NewBuilder(mem, arr.DataType())
	defer b.Release()
	b.Reserve(n)
	switch a := arr.(type) {
	case *array.Boolean:
		bb := b.(*array.BooleanBuilder)
		for _, j := range idx {
			if j < 0 || (nulls && a.IsNull(int(j))) {
				bb.UnsafeAppendBoolToBitmap(false)
			} else {
				bb.UnsafeAppend(a.Value(int(j)))
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
	default:
		return nil, fmt.Errorf("gathering %s values is not supported", arr.DataType())
	}
	return b.NewArray(), nil
}

// joinTakeFixed gathers fixed-width values straight into new buffers (the
// builder's per-value bookkeeping doubles the cost of this hot loop).
func joinTakeFixed[T any](src []T, arr arrow.Array, idx []int32, mem memory.Allocator) arrow.Array {
	n := len(idx)
	var zero T
	width := int(unsafe.Sizeof(zero))
	vals := mempool.NewOutputBuffer(mem, n*width)
	defer vals.Release()
	var out []T
	if n > 0 {
		out = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(vals.Bytes()))), n)
	}
	padded := false
	for i, j := range idx {
		if j < 0 {
			out[i] = zero
			padded = true
			continue
		}
		out[i] = src[j]
	}
	var valid *memory.Buffer
	nullCount := 0
	if padded || arr.NullN() > 0 {
		valid = memory.NewResizableBuffer(mem)
		defer valid.Release()
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		bm := valid.Bytes()
		clear(bm)
		for i, j := range idx {
			if j >= 0 && arr.IsValid(int(j)) {
				bitutil.SetBit(bm, i)
			} else {
				nullCount++
			}
		}
	}
	data := array.NewData(arr.DataType(), n, []*memory.Buffer{valid, vals}, nil, nullCount, 0)
	defer data.Release()
	return array.MakeFromData(data)
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
