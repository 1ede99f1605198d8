package sql

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

var aggFuncs = map[string]plan.AggFunc{
	"count": plan.AggCount, "sum": plan.AggSum, "avg": plan.AggAvg, "min": plan.AggMin, "max": plan.AggMax,
}

// funcCall binds aggregates and the scalar functions plan.Func supports.
func (b *binder) funcCall(f *pg.FuncCall, c ectx) (plan.Expr, error) {
	parts := stringList(f.Funcname)
	name := strings.ToLower(parts[len(parts)-1])
	if f.Over != nil {
		return b.windowCall(f, name, c)
	}
	if af, ok := aggFuncs[name]; ok {
		return b.aggCall(f, af, name, c)
	}
	if _, ok := windowFuncs[name]; ok {
		return nil, b.errAt("bind", f.Location, "window function %s requires an OVER clause", name)
	}
	if f.AggStar || f.AggDistinct || f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil, b.errAt("bind", f.Location, "%s is not an aggregate function", name)
	}
	// EXTRACT(field FROM x) arrives as extract('field', x).
	if name == "extract" || name == "date_part" {
		if len(f.Args) != 2 {
			return nil, b.errAt("bind", f.Location, "EXTRACT takes a field and a value")
		}
		field := ""
		if s := f.Args[0].GetAConst().GetSval(); s != nil {
			field = strings.ToLower(s.Sval)
		}
		switch field {
		case "year", "month", "day":
		default:
			return nil, b.errAt("bind", nodeLoc(f.Args[0]), "EXTRACT field %q is not supported (use YEAR, MONTH or DAY)", field)
		}
		x, err := b.expr(f.Args[1], c)
		if err != nil {
			return nil, err
		}
		if isStringLit(x) {
			x = coerce(x, plan.Date32)
		}
		switch x.Type().ID() {
		case plan.Date32.ID():
		case plan.Timestamp.ID():
			x = castExpr(x, plan.Date32)
		default:
			return nil, b.errAt("type", nodeLoc(f.Args[1]), "EXTRACT needs a DATE or TIMESTAMP, not %s", plan.TypeName(x.Type()))
		}
		return &plan.Func{Name: "extract_" + field, Args: []plan.Expr{x}, Typ: plan.Int32}, nil
	}
	args, err := b.exprs(f.Args, c)
	if err != nil {
		return nil, err
	}
	nargs := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			if lo == hi {
				return b.errAt("bind", f.Location, "function %s takes %d argument(s), got %d", name, lo, len(args))
			}
			return b.errAt("bind", f.Location, "function %s takes %d to %d arguments, got %d", name, lo, hi, len(args))
		}
		return nil
	}
	str := func(i int) error {
		if args[i].Type().ID() == plan.Null.ID() {
			args[i] = coerce(args[i], plan.Utf8)
		}
		if args[i].Type().ID() != plan.Utf8.ID() {
			return b.errAt("type", nodeLoc(f.Args[i]), "function %s needs VARCHAR, not %s", name, plan.TypeName(args[i].Type()))
		}
		return nil
	}
	integer := func(i int) error {
		if !plan.IsInteger(args[i].Type()) && args[i].Type().ID() != plan.Null.ID() {
			return b.errAt("type", nodeLoc(f.Args[i]), "function %s needs an integer argument, not %s", name, plan.TypeName(args[i].Type()))
		}
		args[i] = coerce(args[i], plan.Int64)
		return nil
	}
	numeric := func(i int) error {
		if args[i].Type().ID() == plan.Null.ID() {
			args[i] = coerce(args[i], plan.Float64)
		}
		if !plan.IsNumeric(args[i].Type()) {
			return b.errAt("type", nodeLoc(f.Args[i]), "function %s needs a number, not %s", name, plan.TypeName(args[i].Type()))
		}
		return nil
	}
	switch name {
	case "substring", "substr":
		if err := nargs(2, 3); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			if err := integer(i); err != nil {
				return nil, err
			}
		}
		return &plan.Func{Name: "substring", Args: args, Typ: plan.Utf8}, nil
	case "upper", "lower", "btrim", "trim":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		if name == "btrim" {
			name = "trim"
		}
		return &plan.Func{Name: name, Args: args, Typ: plan.Utf8}, nil
	case "length", "char_length", "character_length":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		if err := str(0); err != nil {
			return nil, err
		}
		return &plan.Func{Name: "length", Args: args, Typ: plan.Int32}, nil
	case "abs":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		if err := numeric(0); err != nil {
			return nil, err
		}
		return &plan.Func{Name: "abs", Args: args, Typ: args[0].Type()}, nil
	case "round":
		if err := nargs(1, 2); err != nil {
			return nil, err
		}
		if err := numeric(0); err != nil {
			return nil, err
		}
		if len(args) == 2 {
			if err := integer(1); err != nil {
				return nil, err
			}
		}
		return &plan.Func{Name: "round", Args: args, Typ: args[0].Type()}, nil
	case "coalesce", "nullif":
		// The grammar turns these into CoalesceExpr / NULLIF; reaching here
		// means a quoted name, which we treat the same way.
		t, err := b.commonTypeAt(args, strings.ToUpper(name), f.Location)
		if err != nil {
			return nil, err
		}
		if name == "nullif" {
			if err := nargs(2, 2); err != nil {
				return nil, err
			}
		}
		for i := range args {
			args[i] = coerce(args[i], t)
		}
		return &plan.Func{Name: name, Args: args, Typ: t}, nil
	}
	e := b.errAt("bind", f.Location, "function %s does not exist", strings.Join(parts, "."))
	e.Near = strings.Join(parts, ".")
	known := []string{"count", "sum", "avg", "min", "max", "extract", "substring", "upper", "lower", "trim", "length", "abs", "round", "coalesce", "nullif"}
	if m := closest(name, known); m != "" {
		e.Hint = fmt.Sprintf("did you mean %s?", m)
	}
	return nil, e
}

// aggCall binds an aggregate; its argument is bound in the input scope
// where further aggregates are not allowed.
func (b *binder) aggCall(f *pg.FuncCall, af plan.AggFunc, name string, c ectx) (plan.Expr, error) {
	if c.agg == nil {
		if c.clause == "aggregate arguments" {
			return nil, b.errAt("bind", f.Location, "aggregate function calls cannot be nested")
		}
		return nil, b.errAt("bind", f.Location, "aggregate functions are not allowed in %s", c.clause)
	}
	call, err := b.typedAggCall(f, af, name, ectx{sc: c.sc, clause: "aggregate arguments"})
	if err != nil {
		return nil, err
	}
	return c.agg.add(b.ids, call, name), nil
}

// typedAggCall binds an aggregate's argument in argCtx and types the call;
// GROUP BY aggregates and aggregates over a window share it.
func (b *binder) typedAggCall(f *pg.FuncCall, af plan.AggFunc, name string, argCtx ectx) (*plan.AggCall, error) {
	if f.AggFilter != nil || len(f.AggOrder) > 0 || f.AggWithinGroup {
		return nil, b.errAt("bind", f.Location, "FILTER and ORDER BY in aggregates are not supported")
	}
	call := &plan.AggCall{Func: af, Distinct: f.AggDistinct}
	if f.AggStar {
		if af != plan.AggCount {
			return nil, b.errAt("bind", f.Location, "%s(*) is not valid", name)
		}
		call.Func, call.Typ = plan.AggCountStar, plan.Int64
		return call, nil
	}
	if len(f.Args) != 1 {
		return nil, b.errAt("bind", f.Location, "%s takes exactly one argument", name)
	}
	arg, err := b.expr(f.Args[0], argCtx)
	if err != nil {
		return nil, err
	}
	t := arg.Type()
	switch af {
	case plan.AggCount:
		call.Typ = plan.Int64
	case plan.AggSum, plan.AggAvg:
		if t.ID() == plan.Null.ID() {
			arg, t = coerce(arg, plan.Float64), plan.Float64
		}
		if !plan.IsNumeric(t) {
			return nil, b.errAt("type", f.Location, "%s needs a numeric argument, not %s", name, plan.TypeName(t))
		}
		if af == plan.AggSum {
			call.Typ = plan.SumType(t)
		} else {
			call.Typ = plan.AvgType(t)
		}
	default:
		call.Typ = t
	}
	call.Arg = arg
	return call, nil
}
