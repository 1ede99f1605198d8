package expr

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Func is a scalar function call; funcArity lists the names. (coalesce and
// nullif compile to Coalesce and NullIf.) Any NULL argument gives NULL,
// except for concat, concat_ws, format, greatest and least, which skip
// NULLs (format only its arguments, not its format).
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

	"extract_quarter":       {1, 1},
	"extract_week":          {1, 1},
	"extract_dow":           {1, 1},
	"extract_isodow":        {1, 1},
	"extract_doy":           {1, 1},
	"extract_hour":          {1, 1},
	"extract_minute":        {1, 1},
	"concat":                {1, 1 << 16},
	"concat_ws":             {2, 1 << 16},
	"greatest":              {1, 1 << 16},
	"least":                 {1, 1 << 16},
	"btrim":                 {1, 2},
	"ltrim":                 {1, 2},
	"rtrim":                 {1, 2},
	"repeat":                {2, 2},
	"chr":                   {1, 1},
	"ascii":                 {1, 1},
	"lpad":                  {2, 3},
	"rpad":                  {2, 3},
	"split_part":            {3, 3},
	"starts_with":           {2, 2},
	"regexp_replace":        {3, 4},
	"regexp_match":          {2, 3},
	"regexp_split_to_array": {2, 3},
	"array_element":         {2, 2},
	"cardinality":           {1, 1},
	"array_length":          {2, 2},
	"array_to_string":       {2, 3},
	"substring_regex":       {2, 2},
	"date_trunc":            {2, 2},

	"similar_to_escape": {1, 2},
	"regexp_like":       {2, 3},
}

// rowKernel is a function computed by the row-wise kernels of
// funcs_text.go; each handles NULL arguments itself.
type rowKernel func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error)

// trimKernel and padKernel bind a kernel's variant.
func trimKernel(name string) rowKernel {
	return func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
		return trimArgs(name, args, n, mem)
	}
}

func padKernel(left bool) rowKernel {
	return func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
		return padArgs(left, args, n, mem)
	}
}

// rowFuncs maps function names to their row-wise kernels.
var rowFuncs = map[string]rowKernel{
	"concat":                concatArgs,
	"concat_ws":             concatWS,
	"btrim":                 trimKernel("btrim"),
	"ltrim":                 trimKernel("ltrim"),
	"rtrim":                 trimKernel("rtrim"),
	"repeat":                repeatArgs,
	"chr":                   chrArgs,
	"ascii":                 asciiArgs,
	"lpad":                  padKernel(true),
	"rpad":                  padKernel(false),
	"split_part":            splitPart,
	"starts_with":           startsWith,
	"regexp_replace":        regexpReplace,
	"regexp_match":          regexpMatch,
	"regexp_split_to_array": regexpSplit,
	"substring_regex":       substringRegex,

	"similar_to_escape": similarToEscape,
	"regexp_like":       regexpLike,
}

// nonStrict functions give a value even when some arguments are NULL.
var nonStrict = map[string]bool{"concat": true, "concat_ws": true, "greatest": true, "least": true, "array_to_string": true}

// Eval implements Expr.
func (e *Func) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	ops, err := evalOperands(e.Args, batch, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(ops)
	for _, o := range ops {
		if o.allNull() && !nonStrict[e.Name] {
			return nullArray(e.Type, n, mem), nil
		}
	}
	if out, ok, err := e.evalOps(ops, n, mem); ok {
		if err != nil {
			return nil, inExpr(e, err)
		}
		return castResult(out, e.Type, mem)
	}
	// The first argument is the column-like one; materialize it if constant.
	x, err := ops[0].materialize(n, mem)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out, err := e.eval(x, ops[1:], n, mem)
	if err != nil {
		return nil, inExpr(e, err)
	}
	return out, nil
}

// evalOps computes the functions that take their operands whole; ok is
// false for the others.
func (e *Func) evalOps(ops []operand, n int, mem memory.Allocator) (arrow.Array, bool, error) {
	switch e.Name {
	case "greatest", "least":
		out, err := e.greatestLeast(ops, n, mem)
		return out, true, err
	case "date_trunc":
		out, err := e.dateTrunc(ops, n, mem)
		return out, true, err
	case "array_element", "cardinality", "array_length", "array_to_string":
		out, err := e.evalArrayFunc(ops, n, mem)
		return out, true, err
	}
	if k, ok := opFuncs[e.Name]; ok {
		out, err := k(e, ops, n, mem)
		return out, true, err
	}
	f, ok := rowFuncs[e.Name]
	if !ok {
		return nil, false, nil
	}
	args, err := rowArgsOf(ops, n)
	if err != nil {
		return nil, true, err
	}
	out, err := f(args, n, mem)
	return out, true, err
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
	case "extract_year", "extract_month", "extract_day", "extract_quarter", "extract_week",
		"extract_dow", "extract_isodow", "extract_doy", "extract_hour", "extract_minute":
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
	var days, tods []int64
	switch x.DataType().ID() {
	case arrow.DATE32:
		days, _, _ = i64View(operand{arr: x})
	case arrow.TIMESTAMP:
		ts := values[int64](x)
		days = make([]int64, len(ts))
		tods = make([]int64, len(ts))
		for i, t := range ts {
			days[i] = floorDiv(t, microsPerDay)
			tods[i] = t - days[i]*microsPerDay
		}
	default:
		return nil, fmt.Errorf("cannot extract from %s", plan.TypeName(x.DataType()))
	}
	valid, nulls := andValidity(mem, n, x)
	buf, out := allocValues[int32](mem, n)
	for i, d := range days {
		var tod int64
		if tods != nil {
			tod = tods[i]
		}
		y, m, day := civilFromDays(d)
		var v int64
		switch e.Name {
		case "extract_year":
			v = y
		case "extract_quarter":
			v = int64((m-1)/3 + 1)
		case "extract_month":
			v = int64(m)
		case "extract_week":
			v = isoWeek(d)
		case "extract_dow":
			v = isoWeekday(d) % 7
		case "extract_isodow":
			v = isoWeekday(d)
		case "extract_doy":
			v = d - daysFromCivil(y, 1, 1) + 1
		case "extract_hour":
			v = tod / 3600e6
		case "extract_minute":
			v = tod / 60e6 % 60
		default:
			v = int64(day)
		}
		out[i] = int32(v)
	}
	return castResult(makeArray(plan.Int32, n, valid, nulls, buf), e.Type, mem)
}

// errIntRange is PostgreSQL's error for an integer result that does not
// fit its type.
var errIntRange = NewDataError("integer out of range")

func absArray(x arrow.Array, n int, mem memory.Allocator) (arrow.Array, error) {
	dt := x.DataType()
	valid, nulls := andValidity(mem, n, x)
	switch dt.ID() {
	case arrow.INT32:
		buf, out := allocValues[int32](mem, n)
		xv := validityOf(x)
		for i, v := range values[int32](x) {
			if v == math.MinInt32 && xv.valid(i) {
				buf.Release()
				releaseBuf(valid)
				return nil, errIntRange
			}
			if v < 0 {
				v = -v
			}
			out[i] = v
		}
		return makeArray(dt, n, valid, nulls, buf), nil
	case arrow.INT64:
		buf, out := allocValues[int64](mem, n)
		xv := validityOf(x)
		for i, v := range values[int64](x) {
			if v == math.MinInt64 && xv.valid(i) {
				buf.Release()
				releaseBuf(valid)
				return nil, errIntRange
			}
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
			if d == 0 {
				// round(double precision) is rint in PostgreSQL:
				// half to even.
				out[i] = math.RoundToEven(v)
				continue
			}
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
