package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Operand views: each returns the operand's values as a slice of the kernel's
// physical type plus a stride (1 for an array, 0 for a scalar, whose slice
// has one element). Kernels index v[i*stride], so one loop serves
// array⊕array, array⊕scalar and scalar⊕array. Converting views (int32 read
// as int64, say) copy into a scratch slice.

// i64View reads int32/int64/date32/timestamp operands as int64.
func i64View(o operand) ([]int64, int, error) {
	if o.isScalar() {
		switch v := o.lit.Val.(type) {
		case int64:
			return []int64{v}, 0, nil
		case int32:
			return []int64{int64(v)}, 0, nil
		}
		return nil, 0, fmt.Errorf("internal: %T constant where an integer was expected", o.lit.Val)
	}
	switch o.arr.DataType().ID() {
	case arrow.INT64, arrow.TIMESTAMP:
		return values[int64](o.arr), 1, nil
	case arrow.INT32, arrow.DATE32:
		src := values[int32](o.arr)
		out := make([]int64, len(src))
		for i, x := range src {
			out[i] = int64(x)
		}
		return out, 1, nil
	}
	return nil, 0, fmt.Errorf("internal: %s operand where an integer was expected", o.arr.DataType())
}

// i32View reads int32/date32 operands as int32.
func i32View(o operand) ([]int32, int, error) {
	if o.isScalar() {
		if v, ok := o.lit.Val.(int32); ok {
			return []int32{v}, 0, nil
		}
		return nil, 0, fmt.Errorf("internal: %T constant where an INT was expected", o.lit.Val)
	}
	switch o.arr.DataType().ID() {
	case arrow.INT32, arrow.DATE32:
		return values[int32](o.arr), 1, nil
	}
	return nil, 0, fmt.Errorf("internal: %s operand where an INT was expected", o.arr.DataType())
}

// f64View reads any numeric operand as float64.
func f64View(o operand) ([]float64, int, error) {
	if o.isScalar() {
		switch v := o.lit.Val.(type) {
		case float64:
			return []float64{v}, 0, nil
		case int32:
			return []float64{float64(v)}, 0, nil
		case int64:
			return []float64{float64(v)}, 0, nil
		case decimal128.Num:
			return []float64{v.ToFloat64(o.lit.Typ.(*arrow.Decimal128Type).Scale)}, 0, nil
		}
		return nil, 0, fmt.Errorf("internal: %T constant where a number was expected", o.lit.Val)
	}
	switch o.arr.DataType().ID() {
	case arrow.FLOAT64:
		return values[float64](o.arr), 1, nil
	case arrow.INT32:
		src := values[int32](o.arr)
		out := make([]float64, len(src))
		for i, x := range src {
			out[i] = float64(x)
		}
		return out, 1, nil
	case arrow.INT64:
		src := values[int64](o.arr)
		out := make([]float64, len(src))
		for i, x := range src {
			out[i] = float64(x)
		}
		return out, 1, nil
	case arrow.DECIMAL128:
		s := o.arr.DataType().(*arrow.Decimal128Type).Scale
		src := values[decimal128.Num](o.arr)
		out := make([]float64, len(src))
		for i, x := range src {
			out[i] = x.ToFloat64(s)
		}
		return out, 1, nil
	}
	return nil, 0, fmt.Errorf("internal: %s operand where a number was expected", o.arr.DataType())
}

// decView reads decimal or integer operands as decimal128 plus their scale.
func decView(o operand) ([]decimal128.Num, int, int32, error) {
	if o.isScalar() {
		switch v := o.lit.Val.(type) {
		case decimal128.Num:
			return []decimal128.Num{v}, 0, o.lit.Typ.(*arrow.Decimal128Type).Scale, nil
		case int32:
			return []decimal128.Num{decimal128.FromI64(int64(v))}, 0, 0, nil
		case int64:
			return []decimal128.Num{decimal128.FromI64(v)}, 0, 0, nil
		}
		return nil, 0, 0, fmt.Errorf("internal: %T constant where a decimal was expected", o.lit.Val)
	}
	switch o.arr.DataType().ID() {
	case arrow.DECIMAL128:
		return values[decimal128.Num](o.arr), 1, o.arr.DataType().(*arrow.Decimal128Type).Scale, nil
	case arrow.INT32:
		src := values[int32](o.arr)
		out := make([]decimal128.Num, len(src))
		for i, x := range src {
			out[i] = decimal128.FromI64(int64(x))
		}
		return out, 1, 0, nil
	case arrow.INT64:
		src := values[int64](o.arr)
		out := make([]decimal128.Num, len(src))
		for i, x := range src {
			out[i] = decimal128.FromI64(x)
		}
		return out, 1, 0, nil
	}
	return nil, 0, 0, fmt.Errorf("internal: %s operand where a decimal was expected", o.arr.DataType())
}

// operandType is the data type of an operand.
func operandType(o operand) arrow.DataType {
	if o.isScalar() {
		return o.lit.Typ
	}
	return o.arr.DataType()
}
