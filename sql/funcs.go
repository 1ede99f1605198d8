package sql

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// This file is the function registry: every function the binder knows,
// with the signatures SHOW FUNCTIONS lists. The binder resolves names only
// through it, so the list and what binds cannot drift apart.

// Function kinds.
const (
	KindScalar    = "scalar"
	KindAggregate = "aggregate"
	KindTable     = "table"
	KindWindow    = "window"
)

// FunctionInfo is one signature of a function, as SHOW FUNCTIONS lists it.
type FunctionInfo struct {
	Name, Kind, Args, Returns string
}

// funcSig documents one accepted argument list.
type funcSig struct{ args, returns string }

// funcDef is one registered function.
type funcDef struct {
	kind string
	sigs []funcSig
	agg  plan.AggFunc // aggregates
	// bind types a scalar call whose arguments are bound (nil for
	// aggregates and table functions, which bind elsewhere).
	bind func(c *fcall) (plan.Expr, error)
}

// functions maps every function name (aliases included) to its definition.
var functions map[string]*funcDef

func sig(args, returns string) funcSig { return funcSig{args, returns} }

func init() {
	agg := func(f plan.AggFunc, sigs ...funcSig) *funcDef {
		return &funcDef{kind: KindAggregate, agg: f, sigs: sigs}
	}
	scalar := func(bind func(c *fcall) (plan.Expr, error), sigs ...funcSig) *funcDef {
		return &funcDef{kind: KindScalar, bind: bind, sigs: sigs}
	}
	num := "numeric"
	substring := scalar(bindSubstring, sig("VARCHAR, BIGINT", "VARCHAR"), sig("VARCHAR, BIGINT, BIGINT", "VARCHAR"),
		sig("VARCHAR, VARCHAR pattern", "VARCHAR"))
	length := scalar(textTo("length", plan.Int32, 1, 1), sig("VARCHAR", "INT"))
	extract := scalar(bindExtract, sig("VARCHAR field, DATE", "INT"), sig("VARCHAR field, TIMESTAMP", "INT"))
	now := scalar(bindNow, sig("", "TIMESTAMP"))
	trimSigs := []funcSig{sig("VARCHAR", "VARCHAR"), sig("VARCHAR, VARCHAR characters", "VARCHAR")}
	functions = map[string]*funcDef{
		"count": agg(plan.AggCount, sig("*", "BIGINT"), sig("any", "BIGINT")),
		"sum":   agg(plan.AggSum, sig(num, "numeric (BIGINT for integers, wider DECIMAL)")),
		"avg":   agg(plan.AggAvg, sig(num, "DOUBLE or DECIMAL")),
		"min":   agg(plan.AggMin, sig("any", "same as argument")),
		"max":   agg(plan.AggMax, sig("any", "same as argument")),

		"stddev":      agg(plan.AggStddevSamp, sig(num, "DOUBLE")),
		"stddev_samp": agg(plan.AggStddevSamp, sig(num, "DOUBLE")),
		"stddev_pop":  agg(plan.AggStddevPop, sig(num, "DOUBLE")),
		"variance":    agg(plan.AggVarSamp, sig(num, "DOUBLE")),
		"var_samp":    agg(plan.AggVarSamp, sig(num, "DOUBLE")),
		"var_pop":     agg(plan.AggVarPop, sig(num, "DOUBLE")),
		"corr":        agg(plan.AggCorr, sig(num+" y, "+num+" x", "DOUBLE")),
		"covar_pop":   agg(plan.AggCovarPop, sig(num+" y, "+num+" x", "DOUBLE")),
		"covar_samp":  agg(plan.AggCovarSamp, sig(num+" y, "+num+" x", "DOUBLE")),
		"string_agg":  agg(plan.AggStringAgg, sig("VARCHAR, VARCHAR delimiter [ORDER BY ...]", "VARCHAR")),
		"array_agg":   agg(plan.AggArrayAgg, sig("any [ORDER BY ...]", "array of the argument's type")),
		"bool_and":    agg(plan.AggBoolAnd, sig("BOOLEAN", "BOOLEAN")),
		"every":       agg(plan.AggBoolAnd, sig("BOOLEAN", "BOOLEAN")),
		"bool_or":     agg(plan.AggBoolOr, sig("BOOLEAN", "BOOLEAN")),
		"count_if":    agg(plan.AggCount, sig("BOOLEAN", "BIGINT")),
		"arg_max":     agg(plan.AggArgMax, sig("any, any val", "same as the first argument")),
		"max_by":      agg(plan.AggArgMax, sig("any, any val", "same as the first argument")),
		"arg_min":     agg(plan.AggArgMin, sig("any, any val", "same as the first argument")),
		"min_by":      agg(plan.AggArgMin, sig("any, any val", "same as the first argument")),
		// any_value: the group's minimum is one of its values.
		"any_value":             agg(plan.AggMin, sig("any", "same as argument")),
		"approx_count_distinct": agg(plan.AggCount, sig("any", "BIGINT")),

		"percentile_cont": agg(plan.AggPercentileCont, sig("DOUBLE fraction) WITHIN GROUP (ORDER BY "+num, "DOUBLE")),
		"percentile_disc": agg(plan.AggPercentileDisc, sig("DOUBLE fraction) WITHIN GROUP (ORDER BY any", "same as the ORDER BY value")),
		"quantile_cont":   agg(plan.AggPercentileCont, sig(num+", DOUBLE fraction", "DOUBLE")),
		"quantile_disc":   agg(plan.AggPercentileDisc, sig("any, DOUBLE fraction", "same as argument")),
		"quantile":        agg(plan.AggPercentileDisc, sig("any, DOUBLE fraction", "same as argument")),
		"median":          agg(plan.AggPercentileCont, sig(num, "DOUBLE"), sig("any", "same as argument")),
		"mode":            agg(plan.AggMode, sig("any", "same as argument"), sig(") WITHIN GROUP (ORDER BY any", "same as argument")),

		"generate_series": {kind: KindTable, sigs: []funcSig{
			sig("INT start, INT stop", "SETOF INT"),
			sig("INT start, INT stop, INT step", "SETOF INT"),
			sig("BIGINT start, BIGINT stop", "SETOF BIGINT"),
			sig("BIGINT start, BIGINT stop, BIGINT step", "SETOF BIGINT"),
			sig("DATE start, DATE stop, INTERVAL step", "SETOF TIMESTAMP"),
			sig("TIMESTAMP start, TIMESTAMP stop, INTERVAL step", "SETOF TIMESTAMP"),
		}},

		"substring":        substring,
		"substr":           substring,
		"upper":            scalar(textTo("upper", plan.Utf8, 1, 1), sig("VARCHAR", "VARCHAR")),
		"lower":            scalar(textTo("lower", plan.Utf8, 1, 1), sig("VARCHAR", "VARCHAR")),
		"length":           length,
		"char_length":      length,
		"character_length": length,
		"btrim":            scalar(bindTrim("btrim"), trimSigs...),
		"ltrim":            scalar(bindTrim("ltrim"), trimSigs...),
		"rtrim":            scalar(bindTrim("rtrim"), trimSigs...),
		"concat":           scalar(bindConcat, sig("any, ...", "VARCHAR")),
		"concat_ws":        scalar(bindConcat, sig("VARCHAR separator, any, ...", "VARCHAR")),
		"repeat":           scalar(bindRepeat, sig("VARCHAR, BIGINT", "VARCHAR")),
		"chr":              scalar(bindChr, sig("BIGINT", "VARCHAR")),
		"ascii":            scalar(textTo("ascii", plan.Int32, 1, 1), sig("VARCHAR", "INT")),
		"lpad":             scalar(bindPad, sig("VARCHAR, BIGINT", "VARCHAR"), sig("VARCHAR, BIGINT, VARCHAR fill", "VARCHAR")),
		"rpad":             scalar(bindPad, sig("VARCHAR, BIGINT", "VARCHAR"), sig("VARCHAR, BIGINT, VARCHAR fill", "VARCHAR")),
		"split_part":       scalar(bindSplitPart, sig("VARCHAR, VARCHAR delimiter, BIGINT field", "VARCHAR")),
		"starts_with":      scalar(textTo("starts_with", plan.Bool, 2, 2), sig("VARCHAR, VARCHAR prefix", "BOOLEAN")),
		"regexp_replace": scalar(bindRegexpReplace, sig("VARCHAR, VARCHAR pattern, VARCHAR replacement", "VARCHAR"),
			sig("VARCHAR, VARCHAR pattern, VARCHAR replacement, VARCHAR flags", "VARCHAR")),
		"regexp_match": scalar(bindRegexpMatch, sig("VARCHAR, VARCHAR pattern", "VARCHAR[]"),
			sig("VARCHAR, VARCHAR pattern, VARCHAR flags", "VARCHAR[]")),
		"regexp_split_to_array": scalar(bindRegexpSplit, sig("VARCHAR, VARCHAR pattern", "VARCHAR[]"),
			sig("VARCHAR, VARCHAR pattern, VARCHAR flags", "VARCHAR[]")),
		"regexp_like": scalar(bindRegexpLike, sig("VARCHAR, VARCHAR pattern", "BOOLEAN"),
			sig("VARCHAR, VARCHAR pattern, VARCHAR flags", "BOOLEAN")),
		"similar_to_escape": scalar(bindSimilarToEscape, sig("VARCHAR pattern", "VARCHAR"), sig("VARCHAR pattern, VARCHAR escape", "VARCHAR")),
		"string_to_array":   scalar(bindStringToArray, sig("VARCHAR, VARCHAR delimiter", "VARCHAR[]"), sig("VARCHAR, VARCHAR delimiter, VARCHAR null_string", "VARCHAR[]")),
		"string_split":      scalar(bindStringToArray, sig("VARCHAR, VARCHAR delimiter", "VARCHAR[]")),
		"str_split":         scalar(bindStringToArray, sig("VARCHAR, VARCHAR delimiter", "VARCHAR[]")),
		"array_length":      scalar(bindArrayLength, sig("anyarray, BIGINT dimension", "INT")),
		"cardinality":       scalar(bindCardinality, sig("anyarray", "INT")),
		"array_to_string":   scalar(bindArrayToString, sig("anyarray, VARCHAR separator", "VARCHAR"), sig("anyarray, VARCHAR separator, VARCHAR null_string", "VARCHAR")),
		"abs":               scalar(bindAbs, sig(num, "same as argument")),
		"round":             scalar(bindRound, sig(num, "same as argument"), sig(num+", BIGINT digits", "same as argument")),
		"greatest":          scalar(bindGreatestLeast, sig("any, ...", "common type of the arguments")),
		"least":             scalar(bindGreatestLeast, sig("any, ...", "common type of the arguments")),
		"coalesce":          scalar(bindCoalesce, sig("any, ...", "common type of the arguments")),
		"nullif":            scalar(bindCoalesce, sig("any, any", "type of the first argument")),
		"extract":           extract,
		"date_part":         extract,
		"date_trunc":        scalar(bindDateTrunc, sig("VARCHAR unit, TIMESTAMP", "TIMESTAMP"), sig("VARCHAR unit, DATE", "TIMESTAMP")),
		"now":               now,
		"current_timestamp": now,
		"localtimestamp":    now,
		"current_date":      scalar(bindNow, sig("", "DATE")),
	}
	addMathFunctions(functions)
	addStringFunctions(functions)
	addDateFunctions(functions)
	addMiscFunctions(functions)
	addJSONFunctions(functions)
}

// Functions lists every signature of every function, sorted by name.
func Functions() []FunctionInfo {
	var out []FunctionInfo
	for name, d := range functions {
		for _, s := range d.sigs {
			out = append(out, FunctionInfo{Name: name, Kind: d.kind, Args: s.args, Returns: s.returns})
		}
	}
	for name, sigs := range windowSigs {
		for _, s := range sigs {
			out = append(out, FunctionInfo{Name: name, Kind: KindWindow, Args: s.args, Returns: s.returns})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Args < out[j].Args
	})
	return out
}

// fcall is a scalar call being bound: its arguments are bound and get
// checked and coerced in place.
type fcall struct {
	b      *binder
	name   string
	args   []plan.Expr
	argLoc []int32
	loc    int32
}

func (c *fcall) at(i int) int32 {
	if i < len(c.argLoc) {
		return c.argLoc[i]
	}
	return c.loc
}

func (c *fcall) nargs(lo, hi int) error {
	if len(c.args) >= lo && len(c.args) <= hi {
		return nil
	}
	switch {
	case lo == hi:
		return c.b.errAt("bind", c.loc, "function %s takes %d argument(s), got %d", c.name, lo, len(c.args))
	case hi > 1000:
		return c.b.errAt("bind", c.loc, "function %s takes at least %d argument(s), got %d", c.name, lo, len(c.args))
	}
	return c.b.errAt("bind", c.loc, "function %s takes %d to %d arguments, got %d", c.name, lo, hi, len(c.args))
}

func (c *fcall) str(i int) error {
	if c.args[i].Type().ID() == plan.Null.ID() {
		c.args[i] = coerce(c.args[i], plan.Utf8)
	}
	if c.args[i].Type().ID() != plan.Utf8.ID() {
		return c.b.errAt("type", c.at(i), "function %s needs VARCHAR, not %s", c.name, plan.TypeName(c.args[i].Type()))
	}
	return nil
}

func (c *fcall) integer(i int) error {
	if !plan.IsInteger(c.args[i].Type()) && c.args[i].Type().ID() != plan.Null.ID() {
		return c.b.errAt("type", c.at(i), "function %s needs an integer argument, not %s", c.name, plan.TypeName(c.args[i].Type()))
	}
	c.args[i] = coerce(c.args[i], plan.Int64)
	return nil
}

func (c *fcall) numeric(i int) error {
	if c.args[i].Type().ID() == plan.Null.ID() {
		c.args[i] = coerce(c.args[i], plan.Float64)
	}
	if !plan.IsNumeric(c.args[i].Type()) {
		return c.b.errAt("type", c.at(i), "function %s needs a number, not %s", c.name, plan.TypeName(c.args[i].Type()))
	}
	return nil
}

// kinds checks each argument in turn: 's' text, 'i' integer.
func (c *fcall) kinds(ks string) error {
	for i := range c.args {
		k := ks[min(i, len(ks)-1)]
		var err error
		if k == 's' {
			err = c.str(i)
		} else {
			err = c.integer(i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *fcall) fn(name string, typ arrowType) *plan.Func {
	return &plan.Func{Name: name, Args: c.args, Typ: typ}
}

// textTo binds a function of lo..hi text arguments.
func textTo(name string, typ arrowType, lo, hi int) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(lo, hi); err != nil {
			return nil, err
		}
		if err := c.kinds("s"); err != nil {
			return nil, err
		}
		return c.fn(name, typ), nil
	}
}

func bindSubstring(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	if len(c.args) == 2 && c.args[1].Type().ID() == plan.Utf8.ID() {
		// substring(s FROM pattern): the first match of a regular
		// expression, or of its first parenthesized group.
		if err := c.kinds("s"); err != nil {
			return nil, err
		}
		if pat, ok := stringConst(c.args[1]); ok {
			if err := checkRegex(pat, ""); err != nil {
				return nil, c.b.errAt("bind", c.at(1), "%v", err)
			}
		}
		return c.fn("substring_regex", plan.Utf8), nil
	}
	if err := c.kinds("si"); err != nil {
		return nil, err
	}
	return c.fn("substring", plan.Utf8), nil
}

func bindTrim(name string) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(1, 2); err != nil {
			return nil, err
		}
		if err := c.kinds("s"); err != nil {
			return nil, err
		}
		return c.fn(name, plan.Utf8), nil
	}
}

// bindConcat binds concat and concat_ws: every argument is turned into
// text, as PostgreSQL does for its "any" arguments.
func bindConcat(c *fcall) (plan.Expr, error) {
	lo := 1
	if c.name == "concat_ws" {
		lo = 2
	}
	if err := c.nargs(lo, 1<<16); err != nil {
		return nil, err
	}
	if c.name == "concat_ws" {
		if err := c.str(0); err != nil {
			return nil, err
		}
	}
	if err := c.textArgs(0); err != nil {
		return nil, err
	}
	return c.fn(c.name, plan.Utf8), nil
}

// textArgs turns the arguments from the first-th on into text, as
// PostgreSQL's output functions print them.
func (c *fcall) textArgs(first int) error {
	for i := first; i < len(c.args); i++ {
		t := c.args[i].Type()
		if !castAllowed(t, plan.Utf8) {
			return c.b.errAt("type", c.at(i), "function %s cannot take %s", c.name, plan.TypeName(t))
		}
		if t.ID() == plan.Bool.ID() {
			// concat prints booleans with their output function, as 't'
			// and 'f', where a cast to text gives 'true' and 'false'.
			x := c.args[i]
			c.args[i] = &plan.Case{Whens: []plan.When{
				{Cond: x, Then: &plan.Literal{Typ: plan.Utf8, Val: "t"}},
				{Cond: &plan.Not{X: x}, Then: &plan.Literal{Typ: plan.Utf8, Val: "f"}},
			}, Typ: plan.Utf8}
			continue
		}
		c.args[i] = coerce(c.args[i], plan.Utf8)
	}
	return nil
}

func bindRepeat(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	if err := c.kinds("si"); err != nil {
		return nil, err
	}
	return c.fn("repeat", plan.Utf8), nil
}

func bindChr(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1); err != nil {
		return nil, err
	}
	if err := c.kinds("i"); err != nil {
		return nil, err
	}
	return c.fn("chr", plan.Utf8), nil
}

func bindPad(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	if err := c.kinds("sis"); err != nil {
		return nil, err
	}
	return c.fn(c.name, plan.Utf8), nil
}

func bindSplitPart(c *fcall) (plan.Expr, error) {
	if err := c.nargs(3, 3); err != nil {
		return nil, err
	}
	if err := c.kinds("ssi"); err != nil {
		return nil, err
	}
	return c.fn("split_part", plan.Utf8), nil
}

func bindRegexpReplace(c *fcall) (plan.Expr, error) {
	if err := c.nargs(3, 4); err != nil {
		return nil, err
	}
	if err := c.kinds("s"); err != nil {
		return nil, err
	}
	// A constant pattern (and flags) is checked now, not on every row.
	pat, ok1 := stringConst(c.args[1])
	flags, ok2 := "", true
	if len(c.args) == 4 {
		flags, ok2 = stringConst(c.args[3])
	}
	if ok1 && ok2 {
		if err := checkRegex(pat, flags); err != nil {
			return nil, c.b.errAt("bind", c.at(1), "%v", err)
		}
	}
	return c.fn("regexp_replace", plan.Utf8), nil
}

// bindRegexpMatch binds regexp_match(s, pattern [, flags]): the first
// match's parenthesized groups as VARCHAR[] (the whole match when the
// pattern has no groups), NULL when nothing matches.
func bindRegexpMatch(c *fcall) (plan.Expr, error) {
	return bindRegexpArray(c, "use regexp_replace, or leave out the g flag for the first match")
}

// bindRegexpSplit binds regexp_split_to_array(s, pattern [, flags]).
func bindRegexpSplit(c *fcall) (plan.Expr, error) { return bindRegexpArray(c, "") }

// bindRegexpArray binds the functions of (s, pattern [, flags]) that
// return VARCHAR[] and refuse the g flag (hint says what to do instead);
// a constant pattern is checked here.
func bindRegexpArray(c *fcall, hint string) (plan.Expr, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	if err := c.kinds("s"); err != nil {
		return nil, err
	}
	pat, ok1 := stringConst(c.args[1])
	flags, ok2 := "", true
	if len(c.args) == 3 {
		flags, ok2 = stringConst(c.args[2])
		if ok2 && strings.ContainsRune(flags, 'g') {
			e := c.b.errAt("bind", c.at(2), "%s() does not support the \"global\" option", c.name)
			e.Hint = hint
			return nil, e
		}
	}
	if ok1 && ok2 {
		if err := checkRegex(pat, flags); err != nil {
			return nil, c.b.errAt("bind", c.at(1), "%v", err)
		}
	}
	return c.fn(c.name, plan.TextArray), nil
}

// array checks that argument i is an array.
func (c *fcall) array(i int) error {
	if c.args[i].Type().ID() == plan.Null.ID() {
		c.args[i] = coerce(c.args[i], plan.TextArray)
	}
	if !plan.IsArray(c.args[i].Type()) {
		return c.b.errAt("type", c.at(i), "function %s needs an array, not %s", c.name, plan.TypeName(c.args[i].Type()))
	}
	return nil
}

// bindArrayLength binds array_length(a, dim). Arrays have one dimension:
// dimension 1 is the element count, NULL for an empty array (as in
// PostgreSQL); any other dimension is NULL.
func bindArrayLength(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	if err := c.array(0); err != nil {
		return nil, err
	}
	if err := c.integer(1); err != nil {
		return nil, err
	}
	return c.fn("array_length", plan.Int32), nil
}

// bindCardinality binds cardinality(a): the element count, 0 for an empty
// array.
func bindCardinality(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1); err != nil {
		return nil, err
	}
	if err := c.array(0); err != nil {
		return nil, err
	}
	return c.fn("cardinality", plan.Int32), nil
}

// bindArrayToString binds array_to_string(a, sep [, null_string]): NULL
// elements are skipped unless null_string is given.
func bindArrayToString(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	if err := c.array(0); err != nil {
		return nil, err
	}
	for i := 1; i < len(c.args); i++ {
		if err := c.str(i); err != nil {
			return nil, err
		}
	}
	return c.fn("array_to_string", plan.Utf8), nil
}

func checkRegex(pat, flags string) error {
	_, _, err := plan.CompileRegex(pat, flags)
	return err
}

// stringConst returns the value of a non-NULL text literal.
func stringConst(e plan.Expr) (string, bool) {
	if l, ok := e.(*plan.Literal); ok {
		s, ok := l.Val.(string)
		return s, ok
	}
	return "", false
}

func bindAbs(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1); err != nil {
		return nil, err
	}
	if err := c.numeric(0); err != nil {
		return nil, err
	}
	return c.fn("abs", c.args[0].Type()), nil
}

func bindRound(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 2); err != nil {
		return nil, err
	}
	if err := c.numeric(0); err != nil {
		return nil, err
	}
	if len(c.args) == 2 {
		if err := c.integer(1); err != nil {
			return nil, err
		}
	}
	t := c.args[0].Type()
	if dt, ok := t.(*arrow.Decimal128Type); ok && dt.Precision < 38 {
		// One more integer digit for the carry: round(0.5) is 1, which
		// DECIMAL(1,1) cannot hold.
		t = plan.Decimal(dt.Precision+1, dt.Scale)
		c.args[0] = coerce(c.args[0], t)
	}
	call := c.fn("round", t)
	// As PostgreSQL's round(numeric, d): the result has d fractional
	// digits (0 without d), so round(1.2345, 2) is 1.23, not 1.2300, and
	// round(1.5, 3) is 1.500. The rounded value fits the new scale exactly,
	// so the cast only relabels or pads it. A d that is not a constant
	// keeps the argument's scale.
	dt, ok := t.(*arrow.Decimal128Type)
	if !ok {
		return call, nil
	}
	d := int64(0)
	if len(c.args) == 2 {
		l, isLit := c.args[1].(*plan.Literal)
		if !isLit {
			return call, nil
		}
		switch v := l.Val.(type) {
		case int64:
			d = v
		case int32:
			d = int64(v)
		default:
			return call, nil
		}
	}
	prec := int64(dt.Precision) - int64(dt.Scale) + d
	if d < 0 || d == int64(dt.Scale) || prec > 38 {
		return call, nil
	}
	return &plan.Cast{X: call, To: plan.Decimal(int32(prec), int32(d))}, nil
}

// bindGreatestLeast binds greatest and least (also reached from the
// GREATEST/LEAST syntax): the arguments meet in their common type.
func bindGreatestLeast(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1<<16); err != nil {
		return nil, err
	}
	t, err := c.b.commonTypeAt(c.args, strings.ToUpper(c.name), c.loc)
	if err != nil {
		return nil, err
	}
	if t.ID() == plan.Interval.ID() || t.ID() == plan.Null.ID() || plan.IsArray(t) {
		return nil, c.b.errAt("type", c.loc, "function %s cannot compare %s", c.name, plan.TypeName(t))
	}
	for i := range c.args {
		c.args[i] = coerce(c.args[i], t)
	}
	return c.fn(c.name, t), nil
}

// bindCoalesce binds a quoted "coalesce" or "nullif" call (the grammar
// turns the unquoted forms into their own nodes, bound the same way).
func bindCoalesce(c *fcall) (plan.Expr, error) {
	if c.name == "nullif" {
		if err := c.nargs(2, 2); err != nil {
			return nil, err
		}
	} else if err := c.nargs(1, 1<<16); err != nil {
		return nil, err
	}
	t, err := c.b.commonTypeAt(c.args, strings.ToUpper(c.name), c.loc)
	if err != nil {
		return nil, err
	}
	for i := range c.args {
		c.args[i] = coerce(c.args[i], t)
	}
	return c.fn(c.name, t), nil
}

// extractFields are the fields EXTRACT and date_part support (DuckDB's
// names for some of them are in extractAliases).
var extractFields = []string{"year", "quarter", "month", "week", "day", "dow", "isodow", "doy", "hour", "minute",
	"second", "millisecond", "microsecond", "epoch", "isoyear", "decade", "century", "millennium"}

// bindExtract binds EXTRACT(field FROM x) (which arrives as
// extract('field', x)) and date_part('field', x). Fields with a fraction
// are DECIMAL from EXTRACT and DOUBLE from date_part, as in PostgreSQL:
// second (with microseconds), millisecond and epoch (seconds since
// 1970-01-01; whole seconds for a DATE). The others are INT.
func bindExtract(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	field, _ := stringConst(c.args[0])
	field = strings.ToLower(field)
	if a, ok := extractAliases[field]; ok {
		field = a
	}
	found := false
	for _, f := range extractFields {
		found = found || f == field
	}
	if !found {
		return nil, c.b.errAt("bind", c.at(0), "EXTRACT field %q is not supported (use one of %s)", field, strings.Join(extractFields, ", "))
	}
	x := c.args[1]
	if isStringLit(x) {
		x = coerce(x, plan.Timestamp)
	}
	switch x.Type().ID() {
	case plan.Date32.ID(), plan.Timestamp.ID():
	case plan.Null.ID():
		x = coerce(x, plan.Timestamp)
	case plan.Interval.ID():
		// The seconds an interval spans, a month counted as 30 days
		// (PostgreSQL's rule): extract(epoch from t2 - t1).
		if field != "epoch" {
			return nil, c.b.errAt("type", c.at(1), "EXTRACT from an INTERVAL takes epoch only, not %s", field)
		}
		typ := plan.Decimal(38, 6)
		if c.name == "date_part" {
			typ = plan.Float64
		}
		return &plan.Func{Name: "extract_epoch", Args: []plan.Expr{x}, Typ: typ}, nil
	default:
		return nil, c.b.errAt("type", c.at(1), "EXTRACT needs a DATE, TIMESTAMP or INTERVAL, not %s", plan.TypeName(x.Type()))
	}
	typ := plan.Int32
	switch field {
	case "second":
		typ = plan.Decimal(8, 6)
	case "millisecond":
		typ = plan.Decimal(8, 3)
	case "epoch":
		typ = plan.Decimal(20, 6)
		if x.Type().ID() == plan.Date32.ID() {
			typ = plan.Decimal(20, 0)
		}
	}
	if _, dec := typ.(*arrow.Decimal128Type); dec && c.name == "date_part" {
		typ = plan.Float64
	}
	return &plan.Func{Name: "extract_" + field, Args: []plan.Expr{x}, Typ: typ}, nil
}

// bindDateTrunc binds date_trunc(unit, x); the unit must be a constant and
// the result is a TIMESTAMP for dates too, as in PostgreSQL.
func bindDateTrunc(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	unit, ok := stringConst(c.args[0])
	if !ok {
		return nil, c.b.errAt("bind", c.at(0), "date_trunc needs a constant unit such as 'month'")
	}
	unit = strings.ToLower(unit)
	if err := plan.CheckTruncUnit(unit); err != nil {
		return nil, c.b.errAt("bind", c.at(0), "%v", err)
	}
	x := c.args[1]
	switch {
	case isStringLit(x), x.Type().ID() == plan.Null.ID(), x.Type().ID() == plan.Date32.ID():
		x = coerce(x, plan.Timestamp)
	case x.Type().ID() == plan.Timestamp.ID():
	default:
		return nil, c.b.errAt("type", c.at(1), "date_trunc needs a DATE or TIMESTAMP, not %s", plan.TypeName(x.Type()))
	}
	if l, ok := x.(*plan.Literal); ok && l.Typ.ID() != plan.Timestamp.ID() {
		return nil, c.b.errAt("type", c.at(1), "invalid input syntax for type TIMESTAMP: %s", l)
	}
	return &plan.Func{Name: "date_trunc", Args: []plan.Expr{&plan.Literal{Typ: plan.Utf8, Val: unit}, x}, Typ: plan.Timestamp}, nil
}

// bindNow binds now(), current_timestamp, localtimestamp and current_date:
// the statement's start time in UTC, the same value however often the
// statement mentions it (PostgreSQL's transaction time; each statement is
// its own transaction here).
func bindNow(c *fcall) (plan.Expr, error) {
	if err := c.nargs(0, 0); err != nil {
		return nil, err
	}
	us := c.b.statementTime()
	if c.name == "current_date" {
		return &plan.Literal{Typ: plan.Date32, Val: int32(floorDivInt(us, plan.MicrosPerDay))}, nil
	}
	return &plan.Literal{Typ: plan.Timestamp, Val: us}, nil
}

func floorDivInt(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// twoArgAggs are the aggregates taking two arguments.
var twoArgAggs = map[plan.AggFunc]bool{plan.AggCorr: true, plan.AggCovarPop: true, plan.AggCovarSamp: true, plan.AggStringAgg: true,
	plan.AggArgMax: true, plan.AggArgMin: true}

// funcCall binds a function call through the registry.
func (b *binder) funcCall(f *pg.FuncCall, c ectx) (plan.Expr, error) {
	parts := stringList(f.Funcname)
	name := strings.ToLower(parts[len(parts)-1])
	if f.Over != nil {
		return b.windowCall(f, name, c)
	}
	if name == "unnest" {
		return b.unnestCall(f, c)
	}
	def, ok := functions[name]
	if _, win := windowFuncs[name]; !ok && win {
		return nil, b.errAt("bind", f.Location, "window function %s requires an OVER clause", name)
	}
	if !ok {
		e := b.errAt("bind", f.Location, "function %s does not exist", strings.Join(parts, "."))
		e.Near = strings.Join(parts, ".")
		known := make([]string, 0, len(functions))
		for n := range functions {
			known = append(known, n)
		}
		sort.Strings(known)
		if m := closest(name, known); m != "" {
			e.Hint = fmt.Sprintf("did you mean %s?", m)
		}
		return nil, e
	}
	switch def.kind {
	case KindAggregate:
		return b.aggCall(f, def.agg, name, c)
	case KindTable:
		if name == "generate_series" && c.srf != nil {
			return b.seriesCall(f, c)
		}
		return nil, b.errAt("bind", f.Location, "%s is a table function: use it in FROM", name)
	}
	if _, ok := windowFuncs[name]; ok {
		return nil, b.errAt("bind", f.Location, "window function %s requires an OVER clause", name)
	}
	if f.AggStar || f.AggDistinct || f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil, b.errAt("bind", f.Location, "%s is not an aggregate function", name)
	}
	if name == "make_interval" {
		return b.makeInterval(f, c)
	}
	args, err := b.exprs(f.Args, c)
	if err != nil {
		return nil, err
	}
	locs := make([]int32, len(f.Args))
	for i, a := range f.Args {
		locs[i] = nodeLoc(a)
	}
	return def.bind(&fcall{b: b, name: name, args: args, argLoc: locs, loc: f.Location})
}

// builtinCall binds syntax that names a registered function (GREATEST,
// CURRENT_DATE, ...) with already bound arguments.
func (b *binder) builtinCall(name string, args []plan.Expr, argLoc []int32, loc int32) (plan.Expr, error) {
	def, ok := functions[name]
	if !ok || def.bind == nil {
		return nil, b.errAt("bind", loc, "internal: %s is not a registered scalar function", name)
	}
	return def.bind(&fcall{b: b, name: name, args: args, argLoc: argLoc, loc: loc})
}

// aggCall binds an aggregate; its arguments are bound in the input scope
// where further aggregates are not allowed.
func (b *binder) aggCall(f *pg.FuncCall, af plan.AggFunc, name string, c ectx) (plan.Expr, error) {
	if c.agg == nil {
		if c.clause == "aggregate arguments" {
			return nil, b.errAt("bind", f.Location, "aggregate function calls cannot be nested")
		}
		return nil, b.errAt("bind", f.Location, "aggregate functions are not allowed in %s", c.clause)
	}
	if af == plan.AggStringAgg && f.AggDistinct && len(f.Args) == 2 {
		return b.distinctStringAgg(f, c)
	}
	call, err := b.typedAggCall(f, af, name, ectx{sc: c.sc, clause: "aggregate arguments"})
	if err != nil {
		return nil, err
	}
	return c.agg.add(b.ids, call, name), nil
}

// distinctStringAgg binds string_agg(DISTINCT x, sep [ORDER BY x]) as
// array_to_string(array_agg(DISTINCT x ORDER BY x) FILTER (WHERE x IS
// NOT NULL), sep): the distinct values in order, NULL for a group without
// any. The separator must be a constant.
func (b *binder) distinctStringAgg(f *pg.FuncCall, c ectx) (plan.Expr, error) {
	sep, err := b.expr(f.Args[1], ectx{sc: c.sc, clause: "aggregate arguments"})
	if err != nil {
		return nil, err
	}
	lit, ok := sep.(*plan.Literal)
	if !ok || lit.Val == nil || (lit.Typ.ID() != plan.Utf8.ID() && lit.Typ.ID() != plan.Null.ID()) {
		return nil, b.errAt("bind", nodeLoc(f.Args[1]), "string_agg(DISTINCT ...) needs a constant text separator")
	}
	x := f.Args[0]
	notNull := &pg.Node{Node: &pg.Node_NullTest{NullTest: &pg.NullTest{Arg: x, Nulltesttype: pg.NullTestType_IS_NOT_NULL, Location: -1}}}
	filter := notNull
	if f.AggFilter != nil {
		filter = pg.MakeBoolExprNode(pg.BoolExprType_AND_EXPR, []*pg.Node{f.AggFilter, notNull}, -1)
	}
	arr := &pg.FuncCall{Funcname: []*pg.Node{pg.MakeStrNode("array_agg")}, Args: []*pg.Node{x}, AggOrder: f.AggOrder,
		AggFilter: filter, AggDistinct: true, Location: f.Location}
	call, err := b.typedAggCall(arr, plan.AggArrayAgg, "array_agg", ectx{sc: c.sc, clause: "aggregate arguments"})
	if err != nil {
		return nil, err
	}
	if t := call.Arg.Type(); t.ID() != plan.Utf8.ID() {
		return nil, b.errAt("type", nodeLoc(x), "string_agg needs text arguments, not %s", plan.TypeName(t))
	}
	return &plan.Func{Name: "array_to_string", Args: []plan.Expr{c.agg.add(b.ids, call, "string_agg"), lit}, Typ: plan.Utf8}, nil
}

// typedAggCall binds an aggregate's arguments in argCtx and types the
// call; GROUP BY aggregates and aggregates over a window share it. FILTER
// (WHERE p) becomes a CASE on the arguments: every aggregate skips NULL
// arguments, so agg(x) FILTER (WHERE p) is agg(CASE WHEN p THEN x END),
// and count(*) FILTER (WHERE p) counts CASE WHEN p THEN 1 END.
func (b *binder) typedAggCall(f *pg.FuncCall, af plan.AggFunc, name string, argCtx ectx) (*plan.AggCall, error) {
	var filter plan.Expr
	if f.AggFilter != nil {
		var err error
		if filter, err = b.boolExpr(f.AggFilter, ectx{sc: argCtx.sc, clause: "FILTER"}); err != nil {
			return nil, err
		}
	}
	filtered := func(e plan.Expr) plan.Expr {
		if filter == nil {
			return e
		}
		return &plan.Case{Whens: []plan.When{{Cond: filter, Then: e}}, Typ: e.Type()}
	}
	if percentileNames[name] {
		return b.percentileCall(f, name, argCtx, filtered)
	}
	if name == "count_if" {
		// DuckDB's count_if(p): count(CASE WHEN p THEN 1 END).
		if len(f.Args) != 1 || f.AggStar || f.AggDistinct || len(f.AggOrder) > 0 || f.AggWithinGroup {
			return nil, b.errAt("bind", f.Location, "count_if takes one boolean argument")
		}
		args, err := b.exprs(f.Args, argCtx)
		if err != nil {
			return nil, err
		}
		cond, err := b.asBool(args[0], f.Args[0], name)
		if err != nil {
			return nil, err
		}
		one := &plan.Case{Whens: []plan.When{{Cond: cond, Then: &plan.Literal{Typ: plan.Int64, Val: int64(1)}}}, Typ: plan.Int64}
		return &plan.AggCall{Func: plan.AggCount, Arg: filtered(one), Typ: plan.Int64}, nil
	}
	if f.AggWithinGroup {
		e := b.errAt("bind", f.Location, "WITHIN GROUP is not supported for %s", name)
		e.Hint = "WITHIN GROUP (ORDER BY ...) is for percentile_cont and percentile_disc"
		return nil, e
	}
	// approx_count_distinct is counted exactly: an exact answer is a
	// correct approximation, and DISTINCT aggregates spill.
	call := &plan.AggCall{Func: af, Distinct: f.AggDistinct || name == "approx_count_distinct"}
	if f.AggStar {
		if af != plan.AggCount {
			return nil, b.errAt("bind", f.Location, "%s(*) is not valid", name)
		}
		call.Func, call.Typ = plan.AggCountStar, plan.Int64
		if filter != nil {
			call.Func, call.Arg = plan.AggCount, filtered(&plan.Literal{Typ: plan.Int64, Val: int64(1)})
		}
		return call, nil
	}
	want := 1
	if twoArgAggs[af] {
		want = 2
	}
	if len(f.Args) != want {
		if want == 2 {
			return nil, b.errAt("bind", f.Location, "%s takes exactly two arguments", name)
		}
		return nil, b.errAt("bind", f.Location, "%s takes exactly one argument", name)
	}
	if f.AggDistinct && want == 2 {
		return nil, b.errAt("bind", f.Location, "DISTINCT is not supported for %s", name)
	}
	args, err := b.exprs(f.Args, argCtx)
	if err != nil {
		return nil, err
	}
	// ORDER BY matters only to string_agg and array_agg; the others give the
	// same result in any order, so their ORDER BY is not kept.
	if len(f.AggOrder) > 0 && (af == plan.AggStringAgg || af == plan.AggArrayAgg) {
		specs, err := b.sortSpecs(f.AggOrder, nil, argCtx)
		if err != nil {
			return nil, err
		}
		for _, sp := range specs {
			call.OrderBy = append(call.OrderBy, plan.SortKey{Expr: sp.expr, Desc: sp.desc, NullsFirst: sp.nullsFirst})
		}
	}
	arg := args[0]
	t := arg.Type()
	switch af {
	case plan.AggCount:
		call.Typ = plan.Int64
	case plan.AggSum, plan.AggAvg:
		if t.ID() == plan.Null.ID() {
			arg, t = coerce(arg, plan.Float64), plan.Float64
		}
		if !plan.IsNumeric(t) && t.ID() != plan.Interval.ID() {
			return nil, b.errAt("type", f.Location, "%s needs a numeric argument, not %s", name, plan.TypeName(t))
		}
		if af == plan.AggSum {
			call.Typ = plan.SumType(t)
		} else {
			call.Typ = plan.AvgType(t)
		}
	case plan.AggStddevSamp, plan.AggStddevPop, plan.AggVarSamp, plan.AggVarPop,
		plan.AggCorr, plan.AggCovarPop, plan.AggCovarSamp:
		// Computed in double precision, as PostgreSQL does for float
		// arguments (it keeps numeric for numeric ones; the digits past
		// float64's are not meaningful for a deviation).
		for i, a := range args {
			at := a.Type()
			if at.ID() != plan.Null.ID() && !plan.IsNumeric(at) {
				return nil, b.errAt("type", nodeLoc(f.Args[i]), "%s needs numeric arguments, not %s", name, plan.TypeName(at))
			}
			args[i] = coerce(a, plan.Float64)
		}
		arg, call.Typ = args[0], plan.Float64
		if want == 2 {
			call.Arg2 = filtered(args[1])
		}
	case plan.AggStringAgg:
		for i, a := range args {
			if at := a.Type(); at.ID() != plan.Null.ID() && at.ID() != plan.Utf8.ID() {
				return nil, b.errAt("type", nodeLoc(f.Args[i]), "string_agg needs text arguments, not %s", plan.TypeName(at))
			}
			args[i] = coerce(a, plan.Utf8)
		}
		arg, call.Typ = args[0], plan.Utf8
		// The delimiter is not filtered: a filtered-out row has a NULL
		// value and is skipped whatever its delimiter.
		call.Arg2 = args[1]
	case plan.AggArrayAgg:
		// NULLs are elements like any other value, so FILTER cannot be a
		// CASE on the argument: it is kept as Arg2 and skips rows.
		if plan.IsArray(t) {
			e := b.errAt("type", nodeLoc(f.Args[0]), "array_agg of arrays is not supported")
			e.Hint = "aggregate the elements, or the arrays' text (a::text)"
			return nil, e
		}
		if t.ID() == plan.Null.ID() {
			arg, t = coerce(arg, plan.Utf8), plan.Utf8
		}
		if f.AggDistinct {
			// The distinct values are kept sorted by themselves (as
			// PostgreSQL's output is), equal ones next to each other.
			for _, k := range call.OrderBy {
				if k.Expr.String() != arg.String() {
					return nil, b.errAt("bind", f.Location, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
				}
			}
			if len(call.OrderBy) == 0 {
				call.OrderBy = []plan.SortKey{{Expr: arg}}
			}
		}
		call.Arg, call.Arg2, call.Typ = arg, filter, plan.ArrayOf(t)
		return call, nil
	case plan.AggArgMax, plan.AggArgMin:
		// The value returned, of its own type; NULL rows of the value
		// ordered by are skipped, and a NULL returned value is kept.
		call.Typ = t
		if t.ID() == plan.Null.ID() {
			arg, call.Typ = coerce(arg, plan.Utf8), plan.Utf8
		}
		v := args[1]
		if v.Type().ID() == plan.Null.ID() {
			v = coerce(v, plan.Utf8)
		}
		call.Arg2 = filtered(v)
	case plan.AggBoolAnd, plan.AggBoolOr:
		if arg, err = b.asBool(arg, f.Args[0], name); err != nil {
			return nil, err
		}
		call.Typ = plan.Bool
	default:
		call.Typ = t
	}
	call.Arg = filtered(arg)
	return call, nil
}
