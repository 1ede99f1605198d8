// Package plan holds sluice's logical plan: nodes, expressions, the type
// rules shared by the binder and the physical planner, and the optimizer.
//
// Every column produced anywhere in a plan has a query-unique ColumnID.
// Expressions refer to columns by ID, never by position, so optimizer rules
// can reorder, push down and prune without renumbering. The physical planner
// maps IDs to positions once, at the end.
package plan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// The data types sluice supports. Decimal types are built with Decimal.
var (
	Bool      arrow.DataType = arrow.FixedWidthTypes.Boolean
	Int32     arrow.DataType = arrow.PrimitiveTypes.Int32
	Int64     arrow.DataType = arrow.PrimitiveTypes.Int64
	Float64   arrow.DataType = arrow.PrimitiveTypes.Float64
	Utf8      arrow.DataType = arrow.BinaryTypes.String
	Date32    arrow.DataType = arrow.FixedWidthTypes.Date32
	Timestamp arrow.DataType = &arrow.TimestampType{Unit: arrow.Microsecond}
	Interval  arrow.DataType = arrow.FixedWidthTypes.MonthDayNanoInterval
	Null      arrow.DataType = arrow.Null
	// TextArray is VARCHAR[], the result of regexp_match and
	// string_to_array; arrays of the other types are made by ArrayOf.
	// Arrays are values to look at, index and cast to text; they are not
	// compared, grouped or sorted (see IsArray).
	TextArray arrow.DataType = arrow.ListOf(arrow.BinaryTypes.String)
)

// ArrayOf is the array type with elements of type elem (TextArray for
// text): an Arrow list whose elements may be NULL.
func ArrayOf(elem arrow.DataType) arrow.DataType {
	if elem.ID() == arrow.STRING {
		return TextArray
	}
	return arrow.ListOf(elem)
}

// IsArray reports whether t is an array (list) type.
func IsArray(t arrow.DataType) bool { return t.ID() == arrow.LIST }

// MaxDecimalPrecision is the largest precision a decimal128 holds.
const MaxDecimalPrecision = 38

// Decimal returns DECIMAL(p, s), clamping p to 38.
func Decimal(p, s int32) arrow.DataType {
	if p > MaxDecimalPrecision {
		p = MaxDecimalPrecision
	}
	if s > p {
		s = p
	}
	return &arrow.Decimal128Type{Precision: p, Scale: s}
}

// IsInteger reports whether t is int32 or int64.
func IsInteger(t arrow.DataType) bool {
	return t.ID() == arrow.INT32 || t.ID() == arrow.INT64
}

// IsNumeric reports whether t is an integer, float64 or decimal.
func IsNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT32, arrow.INT64, arrow.FLOAT64, arrow.DECIMAL128:
		return true
	}
	return false
}

// IsTemporal reports whether t is date32 or timestamp.
func IsTemporal(t arrow.DataType) bool {
	return t.ID() == arrow.DATE32 || t.ID() == arrow.TIMESTAMP
}

// AsDecimal returns the decimal type an integer or decimal widens to when it
// meets a decimal: int32 → DECIMAL(10,0), int64 → DECIMAL(19,0).
func AsDecimal(t arrow.DataType) (*arrow.Decimal128Type, bool) {
	switch t.ID() {
	case arrow.DECIMAL128:
		return t.(*arrow.Decimal128Type), true
	case arrow.INT32:
		return &arrow.Decimal128Type{Precision: 10, Scale: 0}, true
	case arrow.INT64:
		return &arrow.Decimal128Type{Precision: 19, Scale: 0}, true
	}
	return nil, false
}

// CommonType returns the type two operands are coerced to for comparison,
// CASE branches, COALESCE, IN lists and UNION columns. ok is false when the
// types cannot be compared.
func CommonType(a, b arrow.DataType) (arrow.DataType, bool) {
	if arrow.TypeEqual(a, b) {
		return a, true
	}
	if a.ID() == arrow.NULL {
		return b, true
	}
	if b.ID() == arrow.NULL {
		return a, true
	}
	switch {
	case IsInteger(a) && IsInteger(b):
		return Int64, true
	case a.ID() == arrow.FLOAT64 && IsNumeric(b), b.ID() == arrow.FLOAT64 && IsNumeric(a):
		return Float64, true
	case IsNumeric(a) && IsNumeric(b):
		da, _ := AsDecimal(a)
		db, _ := AsDecimal(b)
		s := max(da.Scale, db.Scale)
		p := max(da.Precision-da.Scale, db.Precision-db.Scale) + s
		return Decimal(p, s), true
	case IsTemporal(a) && IsTemporal(b):
		return Timestamp, true
	case a.ID() == arrow.STRING && IsTemporal(b):
		return b, true
	case b.ID() == arrow.STRING && IsTemporal(a):
		return a, true
	}
	return nil, false
}

// ArithmeticType returns the result type of l op r for + - * / %.
// Decimal rules follow SQL Server and DataFusion: exact results, precision
// capped at 38.
func ArithmeticType(op BinaryOp, l, r arrow.DataType) (arrow.DataType, error) {
	if l.ID() == arrow.NULL {
		l = r
	}
	if r.ID() == arrow.NULL {
		r = l
	}
	// Date arithmetic.
	if l.ID() == arrow.DATE32 && r.ID() == arrow.INTERVAL_MONTH_DAY_NANO && (op == OpAdd || op == OpSub) {
		return Date32, nil
	}
	if l.ID() == arrow.INTERVAL_MONTH_DAY_NANO && r.ID() == arrow.DATE32 && op == OpAdd {
		return Date32, nil
	}
	if l.ID() == arrow.TIMESTAMP && r.ID() == arrow.INTERVAL_MONTH_DAY_NANO && (op == OpAdd || op == OpSub) {
		return Timestamp, nil
	}
	if l.ID() == arrow.DATE32 && IsInteger(r) && (op == OpAdd || op == OpSub) {
		return Date32, nil
	}
	if l.ID() == arrow.DATE32 && r.ID() == arrow.DATE32 && op == OpSub {
		return Int32, nil
	}
	if l.ID() == arrow.TIMESTAMP && r.ID() == arrow.TIMESTAMP && op == OpSub {
		return Interval, nil
	}
	// Interval arithmetic, as in PostgreSQL.
	li, ri := l.ID() == arrow.INTERVAL_MONTH_DAY_NANO, r.ID() == arrow.INTERVAL_MONTH_DAY_NANO
	switch {
	case li && ri && (op == OpAdd || op == OpSub),
		li && IsNumeric(r) && (op == OpMul || op == OpDiv),
		IsNumeric(l) && ri && op == OpMul:
		return Interval, nil
	}
	if !IsNumeric(l) || !IsNumeric(r) {
		return nil, fmt.Errorf("cannot apply %s to %s and %s", op, TypeName(l), TypeName(r))
	}
	if IsInteger(l) && IsInteger(r) {
		if l.ID() == arrow.INT32 && r.ID() == arrow.INT32 {
			return Int32, nil
		}
		return Int64, nil
	}
	if l.ID() == arrow.FLOAT64 || r.ID() == arrow.FLOAT64 {
		return Float64, nil
	}
	dl, _ := AsDecimal(l)
	dr, _ := AsDecimal(r)
	p1, s1, p2, s2 := dl.Precision, dl.Scale, dr.Precision, dr.Scale
	switch op {
	case OpAdd, OpSub:
		s := max(s1, s2)
		return Decimal(max(p1-s1, p2-s2)+s+1, s), nil
	case OpMul:
		return Decimal(p1+p2+1, s1+s2), nil
	case OpDiv:
		s := max(6, s1+p2+1)
		p := p1 - s1 + s2 + s
		if p > MaxDecimalPrecision {
			// Keep at least 6 fractional digits, as SQL Server does.
			s = max(6, s-(p-MaxDecimalPrecision))
			p = MaxDecimalPrecision
		}
		return Decimal(p, s), nil
	case OpMod:
		s := max(s1, s2)
		return Decimal(min(p1-s1, p2-s2)+s, s), nil
	}
	return nil, fmt.Errorf("cannot apply %s to %s and %s", op, TypeName(l), TypeName(r))
}

// SumType is the result type of SUM over t.
func SumType(t arrow.DataType) arrow.DataType {
	switch t.ID() {
	case arrow.INT32, arrow.INT64:
		return Int64
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		return Decimal(MaxDecimalPrecision, d.Scale)
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return Interval
	}
	return Float64
}

// AvgType is the result type of AVG over t: decimals keep exactness with
// four more fractional digits (as DataFusion does); everything else is float64.
func AvgType(t arrow.DataType) arrow.DataType {
	if d, ok := t.(*arrow.Decimal128Type); ok {
		return Decimal(MaxDecimalPrecision, min(d.Scale+4, MaxDecimalPrecision))
	}
	if t.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return Interval
	}
	return Float64
}

// TypeName is the SQL spelling of a type, for errors and DESCRIBE.
func TypeName(t arrow.DataType) string {
	switch t.ID() {
	case arrow.BOOL:
		return "BOOLEAN"
	case arrow.INT32:
		return "INT"
	case arrow.INT64:
		return "BIGINT"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.STRING:
		return "VARCHAR"
	case arrow.DATE32:
		return "DATE"
	case arrow.TIMESTAMP:
		return "TIMESTAMP"
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		return fmt.Sprintf("DECIMAL(%d,%d)", d.Precision, d.Scale)
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return "INTERVAL"
	case arrow.NULL:
		return "NULL"
	case arrow.LIST:
		return TypeName(t.(*arrow.ListType).Elem()) + "[]"
	}
	return t.String()
}
