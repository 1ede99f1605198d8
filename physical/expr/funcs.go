package expr

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Func is a scalar function call: substring, extract_year, extract_month,
// extract_day, upper, lower, length, trim, abs, round. (coalesce and nullif
// compile to Coalesce and NullIf.) Any NULL argument gives NULL.
type Func struct {
	Name string
	Args []Expr
	Type arrow.DataType
}

// DataType implements Expr.
func (e *Func) DataType() arrow.DataType { return e.Type }

func (e *Func) String() string { return e.Name + "(" + joinExprs(e.Args) + ")" }

// funcArity lists the supported functions with their min and max argument
// counts.
var funcArity = map[string][2]int{
	"substring":     {2, 3},
	"extract_year":  {1, 1},
	"extract_month": {1, 1},
	"extract_day":   {1, 1},
	"upper":         {1, 1},
	"lower":         {1, 1},
	"length":        {1, 1},
	"trim":          {1, 1},
	"abs":           {1, 1},
	"round":         {1, 2},
}

// Eval implements Expr.
func (e *Func) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	ops, err := evalOperands(e.Args, batch, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(ops)
	for _, o := range ops {
		if o.allNull() {
			return nullArray(e.Type, n, mem), nil
		}
	}
	// The first argument is the column-like one; materialize it if constant.
	x, err := ops[0].materialize(n, mem)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out, err := e.eval(x, ops[1:], n, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	return out, nil
}

func (e *Func) eval(x arrow.Array, rest []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	switch e.Name {
	case "upper":
		return stringMap(x, mem, upperBytes)
	case "lower":
		return stringMap(x, mem, lowerBytes)
	case "trim":
		return stringMap(x, mem, trimBytes)
	case "length":
		s, err := strsOf(operand{arr: x})
		if err != nil {
			return nil, err
		}
		valid, nulls := andValidity(mem, n, x)
		buf, out := allocValues[int32](mem, n)
		for i := range out {
			out[i] = runeLen(s.at(i))
		}
		return castResult(makeArray(plan.Int32, n, valid, nulls, buf), e.Type, mem)
	case "substring":
		return e.substring(x, rest, n, mem)
	case "extract_year", "extract_month", "extract_day":
		return e.extract(x, n, mem)
	case "abs":
		return absArray(x, n, mem)
	case "round":
		return e.round(x, rest, n, mem)
	}
	return nil, fmt.Errorf("unknown function %s", e.Name)
}

// castResult converts a kernel's natural result type to the declared one
// (e.g. length computed as INT but declared BIGINT).
func castResult(a arrow.Array, to arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), to) {
		return a, nil
	}
	defer a.Release()
	return castArray(a, to, mem)
}

func (e *Func) substring(x arrow.Array, rest []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	s, err := strsOf(operand{arr: x})
	if err != nil {
		return nil, err
	}
	start, ss, err := i64View(rest[0])
	if err != nil {
		return nil, err
	}
	var length []int64
	ls := 0
	hasLen := len(rest) > 1
	arrs := []arrow.Array{x, rest[0].arr}
	if hasLen {
		if length, ls, err = i64View(rest[1]); err != nil {
			return nil, err
		}
		arrs = append(arrs, rest[1].arr)
	}
	valid, _ := andValidity(mem, n, arrs...)
	defer releaseBuf(valid)
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			b.b.AppendNull()
			continue
		}
		var l int64
		if hasLen {
			l = length[i*ls]
		}
		if tmp, err = substringBytes(tmp[:0], s.at(i), start[i*ss], l, hasLen); err != nil {
			b.b.Release()
			return nil, err
		}
		b.b.BinaryBuilder.Append(tmp)
	}
	return castResult(b.finish(), e.Type, mem)
}

func (e *Func) extract(x arrow.Array, n int, mem memory.Allocator) (arrow.Array, error) {
	var days []int64
	switch x.DataType().ID() {
	case arrow.DATE32:
		days, _, _ = i64View(operand{arr: x})
	case arrow.TIMESTAMP:
		ts := values[int64](x)
		days = make([]int64, len(ts))
		for i, t := range ts {
			days[i] = floorDiv(t, microsPerDay)
		}
	default:
		return nil, fmt.Errorf("cannot extract from %s", plan.TypeName(x.DataType()))
	}
	valid, nulls := andValidity(mem, n, x)
	buf, out := allocValues[int32](mem, n)
	for i, d := range days {
		y, m, day := civilFromDays(d)
		switch e.Name {
		case "extract_year":
			out[i] = int32(y)
		case "extract_month":
			out[i] = int32(m)
		default:
			out[i] = int32(day)
		}
	}
	return castResult(makeArray(plan.Int32, n, valid, nulls, buf), e.Type, mem)
}

func absArray(x arrow.Array, n int, mem memory.Allocator) (arrow.Array, error) {
	dt := x.DataType()
	valid, nulls := andValidity(mem, n, x)
	switch dt.ID() {
	case arrow.INT32:
		buf, out := allocValues[int32](mem, n)
		for i, v := range values[int32](x) {
			if v < 0 {
				v = -v
			}
			out[i] = v
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	case arrow.INT64:
		buf, out := allocValues[int64](mem, n)
		for i, v := range values[int64](x) {
			out[i] = absI64(v)
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	case arrow.FLOAT64:
		buf, out := allocValues[float64](mem, n)
		for i, v := range values[float64](x) {
			out[i] = math.Abs(v)
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	case arrow.DECIMAL128:
		buf, out := allocValues[decimal128.Num](mem, n)
		for i, v := range values[decimal128.Num](x) {
			out[i] = v.Abs()
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	}
	releaseBuf(valid)
	return nil, fmt.Errorf("cannot take abs of %s", plan.TypeName(dt))
}

// round rounds half away from zero to `digits` fractional digits (0 when
// omitted). For decimals the result type's scale decides the storage scale.
func (e *Func) round(x arrow.Array, rest []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	var digits []int64
	ds := 0
	arrs := []arrow.Array{x}
	if len(rest) > 0 {
		var err error
		if digits, ds, err = i64View(rest[0]); err != nil {
			return nil, err
		}
		arrs = append(arrs, rest[0].arr)
	} else {
		digits = []int64{0}
	}
	valid, nulls := andValidity(mem, n, arrs...)
	switch x.DataType().ID() {
	case arrow.FLOAT64:
		if e.Type.ID() != arrow.FLOAT64 {
			releaseBuf(valid)
			return nil, fmt.Errorf("internal: round of DOUBLE declared as %s", plan.TypeName(e.Type))
		}
		buf, out := allocValues[float64](mem, n)
		for i, v := range values[float64](x) {
			d := digits[i*ds]
			p := math.Pow(10, float64(d))
			out[i] = math.Round(v*p) / p
		}
		return makeArray(e.Type, n, valid, nulls, buf), nil
	case arrow.DECIMAL128:
		rt, ok := e.Type.(*arrow.Decimal128Type)
		if !ok {
			releaseBuf(valid)
			return nil, fmt.Errorf("internal: round of DECIMAL declared as %s", plan.TypeName(e.Type))
		}
		s := x.DataType().(*arrow.Decimal128Type).Scale
		v := validity{}
		if valid != nil {
			v.bits = valid.Bytes()
		}
		buf, out := allocValues[decimal128.Num](mem, n)
		for i, val := range values[decimal128.Num](x) {
			d := int32(max(min(digits[i*ds], 38), -38))
			r := val
			if d < s {
				// Drop the digits below d, then come back to scale s.
				k := s - d
				if k > 38 {
					r = decimal128.Num{}
				} else {
					r, _ = mulChecked(divRound(val, pow10[k]), pow10[k])
				}
			}
			r, ok := rescale(r, s, rt.Scale)
			if (!ok || !fitsPrecision(r, rt.Precision)) && v.valid(i) {
				buf.Release()
				releaseBuf(valid)
				return nil, errDecimalOverflow
			}
			out[i] = r
		}
		return makeArray(e.Type, n, valid, nulls, buf), nil
	case arrow.INT32, arrow.INT64:
		releaseBuf(valid)
		a, err := castArray(x, e.Type, mem)
		return a, err
	}
	releaseBuf(valid)
	return nil, fmt.Errorf("cannot round %s", plan.TypeName(x.DataType()))
}
