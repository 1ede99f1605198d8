// Package expr evaluates scalar expressions over Arrow record batches,
// vectorized: one call computes a whole column.
//
// An Expr is plain data (serializable) with position-based column
// references; Compile builds one from a logical plan.Expr and the input's
// logical schema.
package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Expr is a physical scalar expression.
type Expr interface {
	// DataType is the type of the arrays Eval returns.
	DataType() arrow.DataType
	// Eval computes the expression for every row of batch. The result has
	// batch.NumRows() rows; the caller owns it and must Release it.
	// Eval is safe for concurrent use.
	Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error)
	// String renders the expression for EXPLAIN.
	String() string
}

// Column is the input column at Index.
type Column struct {
	Index int
	Name  string
	Type  arrow.DataType
}

// DataType implements Expr.
func (c *Column) DataType() arrow.DataType { return c.Type }

// Eval implements Expr.
func (c *Column) Eval(batch arrow.RecordBatch, _ memory.Allocator) (arrow.Array, error) {
	col := batch.Column(c.Index)
	col.Retain()
	return col, nil
}

func (c *Column) String() string { return fmt.Sprintf("%s@%d", c.Name, c.Index) }

// Literal is a constant; Value follows plan.Literal's conventions.
type Literal struct {
	Value plan.Literal
}

// DataType implements Expr.
func (l *Literal) DataType() arrow.DataType { return l.Value.Typ }

// Eval implements Expr.
func (l *Literal) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	return ConstArray(l.Value, int(batch.NumRows()), mem)
}

func (l *Literal) String() string { return l.Value.String() }

// ConstArray builds an array of n copies of v.
func ConstArray(v plan.Literal, n int, mem memory.Allocator) (arrow.Array, error) {
	if v.Typ.ID() == arrow.NULL {
		return array.NewNull(n), nil
	}
	b := array.NewBuilder(mem, v.Typ)
	defer b.Release()
	b.Reserve(n)
	if v.Val == nil {
		b.AppendNulls(n)
		return b.NewArray(), nil
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		x := v.Val.(bool)
		for i := 0; i < n; i++ {
			bb.UnsafeAppend(x)
		}
	case *array.Int32Builder:
		x := v.Val.(int32)
		for i := 0; i < n; i++ {
			bb.UnsafeAppend(x)
		}
	case *array.Date32Builder:
		x := arrow.Date32(v.Val.(int32))
		for i := 0; i < n; i++ {
			bb.UnsafeAppend(x)
		}
	case *array.Int64Builder:
		x := v.Val.(int64)
		for i := 0; i < n; i++ {
			bb.UnsafeAppend(x)
		}
	case *array.TimestampBuilder:
		x := arrow.Timestamp(v.Val.(int64))
		for i := 0; i < n; i++ {
			bb.UnsafeAppend(x)
		}
	case *array.Float64Builder:
		x := v.Val.(float64)
		for i := 0; i < n; i++ {
			bb.UnsafeAppend(x)
		}
	case *array.Decimal128Builder:
		x := v.Val.(decimal128.Num)
		for i := 0; i < n; i++ {
			bb.UnsafeAppend(x)
		}
	case *array.StringBuilder:
		x := v.Val.(string)
		for i := 0; i < n; i++ {
			bb.Append(x)
		}
	case *array.MonthDayNanoIntervalBuilder:
		x := v.Val.(arrow.MonthDayNanoInterval)
		for i := 0; i < n; i++ {
			bb.Append(x)
		}
	default:
		return nil, fmt.Errorf("constant of type %s is not supported", v.Typ)
	}
	return b.NewArray(), nil
}

var (
	_ Expr = (*Column)(nil)
	_ Expr = (*Literal)(nil)
)
