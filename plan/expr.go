package plan

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Expr is a logical scalar expression. Expressions are immutable values:
// rewrites build new trees with WithChildren.
type Expr interface {
	// Type is the expression's result type.
	Type() arrow.DataType
	// Children are the direct sub-expressions, in a fixed order.
	Children() []Expr
	// WithChildren returns a copy with the children replaced (same count).
	WithChildren(children []Expr) Expr
	// String renders the expression for EXPLAIN and error messages.
	String() string
}

// ColRef refers to a column produced by some node below, by its ID.
type ColRef struct {
	ID   ColumnID
	Name string // display name, e.g. "l_orderkey" or "lineitem.l_orderkey"
	Typ  arrow.DataType
}

// Literal is a constant. Val holds, by type: nil (NULL of any type), bool,
// int32 (INT, and DATE as days since the epoch), int64 (BIGINT, and TIMESTAMP
// as microseconds since the epoch), float64, decimal128.Num (unscaled, with the
// scale of Typ), string, arrow.MonthDayNanoInterval (INTERVAL).
type Literal struct {
	Typ arrow.DataType
	Val any
}

// BinaryOp is an operator with two operands.
type BinaryOp int

// Binary operators.
const (
	OpAdd BinaryOp = iota
	OpSub
	OpMul
	OpDiv
	OpMod
	OpEq
	OpNotEq
	OpLt
	OpLtEq
	OpGt
	OpGtEq
	OpAnd
	OpOr
	OpConcat
)

var binaryOpNames = [...]string{"+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "AND", "OR", "||"}

func (o BinaryOp) String() string { return binaryOpNames[o] }

// IsComparison reports whether o is = <> < <= > >=.
func (o BinaryOp) IsComparison() bool { return o >= OpEq && o <= OpGtEq }

// Flip returns the comparison with operands swapped (a < b ⇔ b > a).
func (o BinaryOp) Flip() BinaryOp {
	switch o {
	case OpLt:
		return OpGt
	case OpLtEq:
		return OpGtEq
	case OpGt:
		return OpLt
	case OpGtEq:
		return OpLtEq
	}
	return o
}

// Binary applies Op to L and R. Operands of comparisons and arithmetic have
// already been cast by the binder to the types the operator expects (for
// comparisons: the same type; for arithmetic: see ArithmeticType); Typ is the
// result type.
type Binary struct {
	Op   BinaryOp
	L, R Expr
	Typ  arrow.DataType
}

// Not is boolean negation (three-valued).
type Not struct{ X Expr }

// Negate is arithmetic negation.
type Negate struct{ X Expr }

// IsNull is X IS NULL, or X IS NOT NULL when Negated.
type IsNull struct {
	X       Expr
	Negated bool
}

// Cast converts X to To. Try (DuckDB's try_cast) makes a value that does
// not convert (bad text, out of range) NULL instead of an error.
type Cast struct {
	X   Expr
	To  arrow.DataType
	Try bool
}

// When is one WHEN cond THEN result arm of a CASE.
type When struct{ Cond, Then Expr }

// Case is a searched CASE (a simple CASE x WHEN v is bound as x = v). Else
// is nil for no ELSE (NULL). All Then and Else have type Typ.
type Case struct {
	Whens []When
	Else  Expr
	Typ   arrow.DataType
}

// Like is X [NOT] LIKE Pattern ('%' and '_' wildcards, '\' escapes).
type Like struct {
	X, Pattern Expr
	Negated    bool
}

// InList is X [NOT] IN (List...). All list items have X's type.
type InList struct {
	X       Expr
	List    []Expr
	Negated bool
}

// Func is a scalar function call. Name is lower case; the set is what the
// physical expression package implements (physical/expr funcArity), which
// the binder's registry (sql/funcs.go) binds to: substring(str, start[, len])
// (1-based), extract_<field>(date or timestamp), coalesce(args...), upper,
// lower, length, abs, round(x[, n]), trim, btrim/ltrim/rtrim(s[, chars]),
// nullif(a, b), concat, concat_ws, greatest, least, repeat, chr, ascii,
// lpad, rpad, split_part, starts_with, regexp_replace,
// substring_regex(s, pattern) and date_trunc(unit, timestamp).
type Func struct {
	Name string
	Args []Expr
	Typ  arrow.DataType
}

// AggFunc names an aggregate function.
type AggFunc int

// Aggregate functions.
const (
	AggCountStar AggFunc = iota
	AggCount
	AggSum
	AggAvg
	AggMin
	AggMax
	// The statistical aggregates take float64 arguments (the binder casts)
	// and return float64; the sample variants are NULL below two rows.
	AggStddevSamp
	AggStddevPop
	AggVarSamp
	AggVarPop
	// The two-argument ones take Y then X (Arg, then Arg2), as PostgreSQL.
	AggCorr
	AggCovarPop
	AggCovarSamp
	// AggStringAgg concatenates utf8 values, each but the first preceded by
	// its row's delimiter (Arg2).
	AggStringAgg
	AggBoolAnd
	AggBoolOr
	// AggSingleValue is a scalar subquery's value: the value of the
	// group's one row, NULL when there is none, and an error when there
	// is more than one (only the decorrelator introduces it).
	AggSingleValue
	// AggAvgMerge is AVG put together again from partial sums (Arg) and
	// counts (Arg2) of the same values, where an aggregate was split in
	// two (only the optimizer introduces it: eager aggregation, grouping
	// sets). Its result is the AVG's, type and rounding included.
	AggAvgMerge
	// AggPercentileCont and AggPercentileDisc are PostgreSQL's ordered-set
	// aggregates percentile_cont(f) and percentile_disc(f) WITHIN GROUP
	// (ORDER BY x): Arg is x (cast to float64 for cont), Arg2 the constant
	// fraction f, and OrderBy the one key x with its direction. They hold
	// every value of a group, so they run in single-stage aggregation.
	AggPercentileCont
	AggPercentileDisc
	// AggArgMax and AggArgMin are DuckDB's arg_max(arg, val) and
	// arg_min(arg, val): Arg is the value returned, Arg2 the one ordered by.
	AggArgMax
	AggArgMin
	// AggArrayAgg is array_agg(x [ORDER BY ...]): the group's values,
	// NULLs included, as an array. Arg2, when set, is the call's FILTER
	// condition (a NULL argument cannot stand for a filtered-out row).
	AggArrayAgg
	// AggMode is mode() WITHIN GROUP (ORDER BY x) (DuckDB: mode(x)): the
	// most frequent non-NULL x, the first in OrderBy's order among
	// equally frequent ones. Like the percentiles it holds every value.
	AggMode
)

var aggNames = [...]string{"count(*)", "count", "sum", "avg", "min", "max",
	"stddev_samp", "stddev_pop", "var_samp", "var_pop", "corr", "covar_pop", "covar_samp",
	"string_agg", "bool_and", "bool_or", "single_value", "avg_merge", "percentile_cont", "percentile_disc", "arg_max", "arg_min", "array_agg",
	"mode"}

// NumAggFuncs is the number of aggregate functions (AggFunc values are 0 to
// NumAggFuncs-1).
const NumAggFuncs = len(aggNames)

func (a AggFunc) String() string { return aggNames[a] }

// OrderedAgg reports whether f's result depends on the order of its values,
// given by the call's OrderBy (string_agg, array_agg, percentile_cont,
// percentile_disc).
func OrderedAgg(f AggFunc) bool {
	return f == AggStringAgg || f == AggPercentileCont || f == AggPercentileDisc || f == AggArrayAgg || f == AggMode
}

// AggCall is an aggregate; it appears only in Aggregate.Aggs. Arg is nil for
// count(*). Arg2 is the second argument of the two-argument aggregates
// (corr, covar_*: X; string_agg: the delimiter; percentile_*: the
// fraction), nil for the others. OrderBy orders the values an
// order-sensitive aggregate (string_agg, percentile_*) combines; it is
// empty for the others.
type AggCall struct {
	Func     AggFunc
	Arg      Expr
	Arg2     Expr
	Distinct bool
	OrderBy  []SortKey
	Typ      arrow.DataType
}

// SubqueryKind distinguishes the shapes a subquery takes in an expression.
type SubqueryKind int

// Subquery kinds.
const (
	SubqueryScalar SubqueryKind = iota // (SELECT x ...): one column, at most one row
	SubqueryExists                     // EXISTS (SELECT ...)
	SubqueryIn                         // X IN (SELECT y ...)
)

// Subquery is a nested query inside an expression. Plan may refer to columns
// of enclosing queries (correlation): those are ColRefs whose IDs the plan does
// not produce itself. The optimizer's decorrelation rule removes every
// Subquery before physical planning.
type Subquery struct {
	Kind    SubqueryKind
	Plan    Node
	X       Expr // the left operand of IN; nil otherwise
	Negated bool // NOT EXISTS, NOT IN
	Typ     arrow.DataType
}

func (e *ColRef) Type() arrow.DataType   { return e.Typ }
func (e *Literal) Type() arrow.DataType  { return e.Typ }
func (e *Binary) Type() arrow.DataType   { return e.Typ }
func (e *Not) Type() arrow.DataType      { return Bool }
func (e *Negate) Type() arrow.DataType   { return e.X.Type() }
func (e *IsNull) Type() arrow.DataType   { return Bool }
func (e *Cast) Type() arrow.DataType     { return e.To }
func (e *Case) Type() arrow.DataType     { return e.Typ }
func (e *Like) Type() arrow.DataType     { return Bool }
func (e *InList) Type() arrow.DataType   { return Bool }
func (e *Func) Type() arrow.DataType     { return e.Typ }
func (e *AggCall) Type() arrow.DataType  { return e.Typ }
func (e *Subquery) Type() arrow.DataType { return e.Typ }

func (e *ColRef) Children() []Expr  { return nil }
func (e *Literal) Children() []Expr { return nil }
func (e *Binary) Children() []Expr  { return []Expr{e.L, e.R} }
func (e *Not) Children() []Expr     { return []Expr{e.X} }
func (e *Negate) Children() []Expr  { return []Expr{e.X} }
func (e *IsNull) Children() []Expr  { return []Expr{e.X} }
func (e *Cast) Children() []Expr    { return []Expr{e.X} }
func (e *Like) Children() []Expr    { return []Expr{e.X, e.Pattern} }
func (e *Func) Children() []Expr    { return e.Args }

// Children of a Case are Cond0, Then0, Cond1, Then1, ..., then Else if set.
func (e *Case) Children() []Expr {
	out := make([]Expr, 0, 2*len(e.Whens)+1)
	for _, w := range e.Whens {
		out = append(out, w.Cond, w.Then)
	}
	if e.Else != nil {
		out = append(out, e.Else)
	}
	return out
}

// Children of an InList are X then the list.
func (e *InList) Children() []Expr { return append([]Expr{e.X}, e.List...) }

// Children of an AggCall are its arguments, if any, then its ORDER BY
// expressions.
func (e *AggCall) Children() []Expr {
	if e.Arg == nil {
		return nil
	}
	out := []Expr{e.Arg}
	if e.Arg2 != nil {
		out = append(out, e.Arg2)
	}
	for _, k := range e.OrderBy {
		out = append(out, k.Expr)
	}
	return out
}

// Children of a Subquery are X, if any; the plan is not an expression child.
func (e *Subquery) Children() []Expr {
	if e.X == nil {
		return nil
	}
	return []Expr{e.X}
}

func (e *ColRef) WithChildren([]Expr) Expr  { return e }
func (e *Literal) WithChildren([]Expr) Expr { return e }
func (e *Binary) WithChildren(c []Expr) Expr {
	return &Binary{Op: e.Op, L: c[0], R: c[1], Typ: e.Typ}
}
func (e *Not) WithChildren(c []Expr) Expr    { return &Not{X: c[0]} }
func (e *Negate) WithChildren(c []Expr) Expr { return &Negate{X: c[0]} }
func (e *IsNull) WithChildren(c []Expr) Expr { return &IsNull{X: c[0], Negated: e.Negated} }
func (e *Cast) WithChildren(c []Expr) Expr   { return &Cast{X: c[0], To: e.To, Try: e.Try} }
func (e *Like) WithChildren(c []Expr) Expr {
	return &Like{X: c[0], Pattern: c[1], Negated: e.Negated}
}
func (e *Func) WithChildren(c []Expr) Expr {
	return &Func{Name: e.Name, Args: append([]Expr(nil), c...), Typ: e.Typ}
}
func (e *Case) WithChildren(c []Expr) Expr {
	out := &Case{Typ: e.Typ, Whens: make([]When, len(e.Whens))}
	for i := range e.Whens {
		out.Whens[i] = When{Cond: c[2*i], Then: c[2*i+1]}
	}
	if e.Else != nil {
		out.Else = c[2*len(e.Whens)]
	}
	return out
}
func (e *InList) WithChildren(c []Expr) Expr {
	return &InList{X: c[0], List: append([]Expr(nil), c[1:]...), Negated: e.Negated}
}
func (e *AggCall) WithChildren(c []Expr) Expr {
	out := *e
	if len(c) > 0 {
		out.Arg = c[0]
		c = c[1:]
	}
	if e.Arg2 != nil {
		out.Arg2 = c[0]
		c = c[1:]
	}
	if len(e.OrderBy) > 0 {
		out.OrderBy = make([]SortKey, len(e.OrderBy))
		for i, k := range e.OrderBy {
			out.OrderBy[i] = SortKey{Expr: c[i], Desc: k.Desc, NullsFirst: k.NullsFirst}
		}
	}
	return &out
}
func (e *Subquery) WithChildren(c []Expr) Expr {
	out := *e
	if len(c) > 0 {
		out.X = c[0]
	}
	return &out
}

func (e *ColRef) String() string { return e.Name }
func (e *Literal) String() string {
	if e.Val == nil {
		return "NULL"
	}
	switch v := e.Val.(type) {
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case decimal128.Num:
		return v.ToString(e.Typ.(*arrow.Decimal128Type).Scale)
	case int32:
		if e.Typ.ID() == arrow.DATE32 {
			return "DATE '" + arrow.Date32(v).FormattedString() + "'"
		}
	case arrow.MonthDayNanoInterval:
		// Exact: plans are told apart by their text (SubtreeKeys).
		return "INTERVAL '" + string(AppendIntervalText(nil, v)) + "'"
	}
	return fmt.Sprint(e.Val)
}
func (e *Binary) String() string {
	return "(" + e.L.String() + " " + e.Op.String() + " " + e.R.String() + ")"
}
func (e *Not) String() string    { return "NOT " + e.X.String() }
func (e *Negate) String() string { return "-" + e.X.String() }
func (e *IsNull) String() string {
	if e.Negated {
		return e.X.String() + " IS NOT NULL"
	}
	return e.X.String() + " IS NULL"
}
func (e *Cast) String() string {
	if e.Try {
		return "TRY_CAST(" + e.X.String() + " AS " + TypeName(e.To) + ")"
	}
	return "CAST(" + e.X.String() + " AS " + TypeName(e.To) + ")"
}
func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, w := range e.Whens {
		b.WriteString(" WHEN " + w.Cond.String() + " THEN " + w.Then.String())
	}
	if e.Else != nil {
		b.WriteString(" ELSE " + e.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}
func (e *Like) String() string {
	if e.Negated {
		return e.X.String() + " NOT LIKE " + e.Pattern.String()
	}
	return e.X.String() + " LIKE " + e.Pattern.String()
}
func (e *InList) String() string {
	parts := make([]string, len(e.List))
	for i, x := range e.List {
		parts[i] = x.String()
	}
	not := ""
	if e.Negated {
		not = "NOT "
	}
	return e.X.String() + " " + not + "IN (" + strings.Join(parts, ", ") + ")"
}
func (e *Func) String() string {
	parts := make([]string, len(e.Args))
	for i, x := range e.Args {
		parts[i] = x.String()
	}
	return e.Name + "(" + strings.Join(parts, ", ") + ")"
}
func (e *AggCall) String() string {
	if e.Func == AggCountStar {
		return "count(*)"
	}
	if e.Func == AggPercentileCont || e.Func == AggPercentileDisc {
		return e.Func.String() + "(" + e.Arg2.String() + ") WITHIN GROUP (ORDER BY " + sortKeyList(e.OrderBy) + ")"
	}
	if e.Func == AggMode {
		return "mode() WITHIN GROUP (ORDER BY " + sortKeyList(e.OrderBy) + ")"
	}
	d := ""
	if e.Distinct {
		d = "DISTINCT "
	}
	args := d + e.Arg.String()
	if e.Arg2 != nil {
		args += ", " + e.Arg2.String()
	}
	if len(e.OrderBy) > 0 {
		args += " ORDER BY " + sortKeyList(e.OrderBy)
	}
	return e.Func.String() + "(" + args + ")"
}

// sortKeyList renders sort keys as ORDER BY lists them.
func sortKeyList(keys []SortKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.Expr.String()
		if k.Desc {
			parts[i] += " DESC"
		}
		if k.NullsFirst != k.Desc {
			if k.NullsFirst {
				parts[i] += " NULLS FIRST"
			} else {
				parts[i] += " NULLS LAST"
			}
		}
	}
	return strings.Join(parts, ", ")
}

func (e *Subquery) String() string {
	not := ""
	if e.Negated {
		not = "NOT "
	}
	switch e.Kind {
	case SubqueryExists:
		return not + "EXISTS (<subquery>)"
	case SubqueryIn:
		return e.X.String() + " " + not + "IN (<subquery>)"
	}
	return "(<scalar subquery>)"
}

// Transform rewrites e bottom-up: children first, then f on the node.
func Transform(e Expr, f func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	kids := e.Children()
	if len(kids) > 0 {
		nk := make([]Expr, len(kids))
		changed := false
		for i, k := range kids {
			nk[i] = Transform(k, f)
			changed = changed || nk[i] != k
		}
		if changed {
			e = e.WithChildren(nk)
		}
	}
	return f(e)
}

// Walk visits e and its descendants pre-order; returning false skips a subtree.
// It does not descend into subquery plans.
func Walk(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	for _, c := range e.Children() {
		Walk(c, f)
	}
}

// ColumnsOf returns the set of column IDs e refers to, not counting columns
// referenced only inside subquery plans.
func ColumnsOf(e Expr) ColumnSet {
	s := ColumnSet{}
	Walk(e, func(x Expr) bool {
		if c, ok := x.(*ColRef); ok {
			s[c.ID] = struct{}{}
		}
		return true
	})
	return s
}

// SplitConjunction flattens nested ANDs into a list.
func SplitConjunction(e Expr) []Expr {
	if b, ok := e.(*Binary); ok && b.Op == OpAnd {
		return append(SplitConjunction(b.L), SplitConjunction(b.R)...)
	}
	if e == nil {
		return nil
	}
	return []Expr{e}
}

// Conjunction ANDs the list together; nil for an empty list.
func Conjunction(es []Expr) Expr {
	var out Expr
	for _, e := range es {
		if out == nil {
			out = e
		} else {
			out = &Binary{Op: OpAnd, L: out, R: e, Typ: Bool}
		}
	}
	return out
}
