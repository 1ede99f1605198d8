package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// The types below mirror plan's type values (plan.Int32, plan.Decimal…).
// catalog cannot import plan (plan imports catalog), so the few
// constructors it needs are duplicated here with arrow directly.
var (
	typeBool      arrow.DataType = arrow.FixedWidthTypes.Boolean
	typeInt32     arrow.DataType = arrow.PrimitiveTypes.Int32
	typeInt64     arrow.DataType = arrow.PrimitiveTypes.Int64
	typeFloat64   arrow.DataType = arrow.PrimitiveTypes.Float64
	typeUtf8      arrow.DataType = arrow.BinaryTypes.String
	typeDate32    arrow.DataType = arrow.FixedWidthTypes.Date32
	typeTimestamp arrow.DataType = &arrow.TimestampType{Unit: arrow.Microsecond}
)

// maxDecimalPrecision is the largest precision a decimal128 holds.
const maxDecimalPrecision = 38

// ParseType maps a SQL column type, as written in CREATE EXTERNAL TABLE, to
// the Arrow type sluice uses for it. Matching is case-insensitive.
func ParseType(sqlType string) (arrow.DataType, error) {
	s := strings.ToUpper(strings.Join(strings.Fields(sqlType), " "))
	name, args := s, ""
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return nil, fmt.Errorf("malformed type %q", sqlType)
		}
		name, args = strings.TrimSpace(s[:i]), s[i+1:len(s)-1]
	}
	nums, err := parseTypeArgs(args)
	if err != nil {
		return nil, fmt.Errorf("type %q: %w", sqlType, err)
	}
	noArgs := func(t arrow.DataType) (arrow.DataType, error) {
		if len(nums) != 0 {
			return nil, fmt.Errorf("type %q takes no arguments", sqlType)
		}
		return t, nil
	}
	switch name {
	case "INT", "INTEGER", "INT4", "SMALLINT", "INT2", "TINYINT":
		return noArgs(typeInt32)
	case "BIGINT", "INT8":
		return noArgs(typeInt64)
	case "HUGEINT", "INT128":
		// DuckDB's 128-bit integer: a decimal of 38 digits holds it
		// exactly, up to 10^38.
		return noArgs(&arrow.Decimal128Type{Precision: 38, Scale: 0})
	case "DOUBLE", "DOUBLE PRECISION", "FLOAT", "FLOAT8", "REAL", "FLOAT4":
		return noArgs(typeFloat64)
	case "VARCHAR", "CHAR", "CHARACTER", "CHARACTER VARYING", "TEXT", "STRING":
		if len(nums) > 1 {
			return nil, fmt.Errorf("type %q takes at most one argument", sqlType)
		}
		return typeUtf8, nil
	case "DATE":
		return noArgs(typeDate32)
	case "TIMESTAMP", "TIMESTAMP WITHOUT TIME ZONE", "DATETIME":
		return noArgs(typeTimestamp)
	case "BOOLEAN", "BOOL":
		return noArgs(typeBool)
	case "DECIMAL", "NUMERIC", "DEC":
		p, sc := int32(38), int32(10)
		switch len(nums) {
		case 0:
		case 1:
			p, sc = nums[0], 0
		case 2:
			p, sc = nums[0], nums[1]
		default:
			return nil, fmt.Errorf("type %q takes at most two arguments", sqlType)
		}
		if p < 1 || p > maxDecimalPrecision {
			return nil, fmt.Errorf("type %q: precision must be between 1 and %d", sqlType, maxDecimalPrecision)
		}
		if sc < 0 || sc > p {
			return nil, fmt.Errorf("type %q: scale must be between 0 and the precision", sqlType)
		}
		return &arrow.Decimal128Type{Precision: p, Scale: sc}, nil
	}
	return nil, fmt.Errorf("unknown column type %q", sqlType)
}

// parseTypeArgs parses the comma-separated integers inside a type's
// parentheses.
func parseTypeArgs(args string) ([]int32, error) {
	if strings.TrimSpace(args) == "" {
		return nil, nil
	}
	parts := strings.Split(args, ",")
	out := make([]int32, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("bad type argument %q: %w", strings.TrimSpace(p), err)
		}
		out[i] = int32(n)
	}
	return out, nil
}
