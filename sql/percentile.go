package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// percentileNames are the spellings of the percentile aggregates:
// PostgreSQL's ordered-set aggregates percentile_cont(f) and
// percentile_disc(f) WITHIN GROUP (ORDER BY x), and DuckDB's
// quantile_cont(x, f), quantile_disc(x, f), quantile(x, f) (discrete) and
// median(x) (continuous for numbers, discrete for other types, as DuckDB).
var percentileNames = map[string]bool{
	"percentile_cont": true, "percentile_disc": true,
	"quantile_cont": true, "quantile_disc": true, "quantile": true, "median": true,
	"mode": true,
}

// percentileCall binds a percentile aggregate (percentileNames) to
// AggPercentileCont or AggPercentileDisc: Arg is x (float64 for cont),
// Arg2 the fraction as a float64 constant, OrderBy the one key x.
func (b *binder) percentileCall(f *pg.FuncCall, name string, argCtx ectx, filtered func(plan.Expr) plan.Expr) (*plan.AggCall, error) {
	if f.AggStar || f.AggDistinct {
		return nil, b.errAt("bind", f.Location, "%s does not take * or DISTINCT", name)
	}
	var key plan.SortKey
	var fracNode *pg.Node
	switch name {
	case "mode":
		// PostgreSQL's mode() WITHIN GROUP (ORDER BY x), or DuckDB's mode(x).
		switch {
		case f.AggWithinGroup && len(f.Args) == 0 && len(f.AggOrder) == 1:
			specs, err := b.sortSpecs(f.AggOrder, nil, argCtx)
			if err != nil {
				return nil, err
			}
			key = plan.SortKey{Expr: specs[0].expr, Desc: specs[0].desc, NullsFirst: specs[0].nullsFirst}
		case !f.AggWithinGroup && len(f.Args) == 1 && len(f.AggOrder) == 0:
			x, err := b.expr(f.Args[0], argCtx)
			if err != nil {
				return nil, err
			}
			key = plan.SortKey{Expr: x}
		default:
			e := b.errAt("bind", f.Location, "mode takes mode() WITHIN GROUP (ORDER BY x), or mode(x)")
			return nil, e
		}
		t := key.Expr.Type()
		x := filtered(key.Expr)
		if t.ID() == plan.Null.ID() {
			x, t = coerce(x, plan.Utf8), plan.Utf8
		}
		if !sortable(t) {
			return nil, b.errAt("type", f.Location, "mode cannot order values of type %s", plan.TypeName(t))
		}
		return &plan.AggCall{Func: plan.AggMode, Arg: x, Typ: t,
			OrderBy: []plan.SortKey{{Expr: x, Desc: key.Desc, NullsFirst: key.NullsFirst}}}, nil
	case "percentile_cont", "percentile_disc":
		if !f.AggWithinGroup {
			e := b.errAt("bind", f.Location, "%s needs WITHIN GROUP (ORDER BY ...)", name)
			e.Hint = "write " + name + "(0.5) WITHIN GROUP (ORDER BY x)"
			return nil, e
		}
		if len(f.Args) != 1 {
			return nil, b.errAt("bind", f.Location, "%s takes one fraction between 0 and 1 (arrays of fractions are not supported)", name)
		}
		if len(f.AggOrder) != 1 {
			return nil, b.errAt("bind", f.Location, "%s WITHIN GROUP takes exactly one ORDER BY expression", name)
		}
		specs, err := b.sortSpecs(f.AggOrder, nil, argCtx)
		if err != nil {
			return nil, err
		}
		key = plan.SortKey{Expr: specs[0].expr, Desc: specs[0].desc, NullsFirst: specs[0].nullsFirst}
		fracNode = f.Args[0]
	default:
		if f.AggWithinGroup || len(f.AggOrder) > 0 {
			return nil, b.errAt("bind", f.Location, "%s takes no ORDER BY or WITHIN GROUP", name)
		}
		want := 2
		if name == "median" {
			want = 1
		}
		if len(f.Args) != want {
			if want == 1 {
				return nil, b.errAt("bind", f.Location, "%s takes exactly one argument", name)
			}
			return nil, b.errAt("bind", f.Location, "%s takes exactly two arguments: the value and a fraction between 0 and 1", name)
		}
		x, err := b.expr(f.Args[0], argCtx)
		if err != nil {
			return nil, err
		}
		key = plan.SortKey{Expr: x}
		if want == 2 {
			fracNode = f.Args[1]
		}
	}
	frac := &plan.Literal{Typ: plan.Float64, Val: 0.5}
	if fracNode != nil {
		var err error
		if frac, err = b.percentileFraction(fracNode, name); err != nil {
			return nil, err
		}
	}
	t := key.Expr.Type()
	numeric := plan.IsNumeric(t) || t.ID() == plan.Null.ID()
	af := plan.AggPercentileDisc
	switch name {
	case "percentile_cont", "quantile_cont":
		af = plan.AggPercentileCont
	case "median":
		if numeric {
			af = plan.AggPercentileCont
		}
	}
	call := &plan.AggCall{Func: af, Arg2: frac}
	x := filtered(key.Expr)
	if af == plan.AggPercentileCont {
		if !numeric {
			return nil, b.errAt("type", f.Location, "%s needs a numeric value to interpolate, not %s", name, plan.TypeName(t))
		}
		call.Arg, call.Typ = coerce(x, plan.Float64), plan.Float64
	} else {
		if t.ID() == plan.Null.ID() {
			x, t = coerce(x, plan.Float64), plan.Float64
		}
		if !sortable(t) {
			return nil, b.errAt("type", f.Location, "%s cannot order values of type %s", name, plan.TypeName(t))
		}
		call.Arg, call.Typ = x, t
	}
	call.OrderBy = []plan.SortKey{{Expr: call.Arg, Desc: key.Desc, NullsFirst: key.NullsFirst}}
	return call, nil
}

// percentileFraction binds a percentile's fraction: a constant number
// from 0 to 1 (or NULL, which makes every result NULL), as float64.
func (b *binder) percentileFraction(n *pg.Node, name string) (*plan.Literal, error) {
	e, err := b.expr(n, ectx{sc: &scope{}, clause: name + " fraction"})
	if err == nil {
		e = plan.FoldExpr(e) // 1.0/4, CAST(0.5 AS DOUBLE)
	}
	lit, ok := e.(*plan.Literal)
	if err != nil {
		// A column or anything else that is not a constant.
		ok = false
	}
	var f float64
	if ok {
		switch v := lit.Val.(type) {
		case nil:
			return &plan.Literal{Typ: plan.Float64}, nil
		case int64:
			f = float64(v)
		case float64:
			f = v
		case decimal128.Num:
			dt, isDec := lit.Typ.(*arrow.Decimal128Type)
			if !isDec {
				ok = false
				break
			}
			f = v.ToFloat64(dt.Scale)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, b.errAt("bind", nodeLoc(n), "%s's fraction must be a constant number between 0 and 1", name)
	}
	if f < 0 || f > 1 || f != f {
		return nil, b.errAt("bind", nodeLoc(n), "percentile value %g is not between 0 and 1", f)
	}
	return &plan.Literal{Typ: plan.Float64, Val: f}, nil
}

// sortable reports whether the engine orders values of type t (what a
// percentile_disc may pick from).
func sortable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT32, arrow.INT64, arrow.FLOAT64, arrow.DECIMAL128, arrow.STRING, arrow.BOOL, arrow.DATE32, arrow.TIMESTAMP:
		return true
	}
	return false
}
