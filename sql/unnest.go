package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/plan"
)

// srfState collects the unnest calls of a select list: each becomes an
// array argument and an element column of the plan.Unnest node that the
// select list's projection reads.
type srfState struct {
	args []plan.Expr
	cols plan.Schema
}

// unnestCall binds unnest(array) in a select list: a reference to the
// element column of a new Unnest argument. Anywhere else it is an error,
// as in PostgreSQL.
func (b *binder) unnestCall(f *pg.FuncCall, c ectx) (plan.Expr, error) {
	if c.srf == nil {
		clause := c.clause
		if clause == "" {
			clause = "this context"
		}
		e := b.errAt("bind", f.Location, "set-returning functions are not allowed in %s", clause)
		e.Hint = "unnest is allowed in the select list, or as a FROM item"
		return nil, e
	}
	if f.Over != nil || f.AggStar || f.AggDistinct || f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil, b.errAt("bind", f.Location, "invalid call of unnest")
	}
	if len(f.Args) != 1 {
		return nil, b.errAt("bind", f.Location, "function unnest takes 1 argument, got %d", len(f.Args))
	}
	arg, err := b.expr(f.Args[0], ectx{sc: c.sc, agg: c.agg, win: c.win, clause: "unnest arguments"})
	if err != nil {
		return nil, err
	}
	col, err := b.unnestColumn(arg, f)
	if err != nil {
		return nil, err
	}
	c.srf.args = append(c.srf.args, arg)
	c.srf.cols = append(c.srf.cols, col)
	return &plan.ColRef{ID: col.ID, Name: col.Name, Typ: col.Type}, nil
}

// seriesCall binds generate_series(start, stop[, step]) of integers in a
// select list, as PostgreSQL runs a set-returning function there: one row
// per value (per input row), as unnest(series_array(...)) gives.
func (b *binder) seriesCall(f *pg.FuncCall, c ectx) (plan.Expr, error) {
	if f.Over != nil || f.AggStar || f.AggDistinct || f.AggFilter != nil || len(f.AggOrder) > 0 || len(f.Args) < 2 || len(f.Args) > 3 {
		return nil, b.errAt("bind", f.Location, "generate_series in a select list takes start, stop and an optional step")
	}
	args, err := b.exprs(f.Args, ectx{sc: c.sc, agg: c.agg, win: c.win, clause: "generate_series arguments"})
	if err != nil {
		return nil, err
	}
	if len(args) == 3 && (plan.IsTemporal(args[0].Type()) || plan.IsTemporal(args[1].Type())) {
		return b.timestampSeries(f, args, c)
	}
	for i, a := range args {
		if t := a.Type(); !plan.IsInteger(t) && t.ID() != plan.Null.ID() {
			e := b.errAt("type", nodeLoc(f.Args[i]), "generate_series in a select list takes integers, not %s", plan.TypeName(t))
			e.Hint = "for dates and timestamps, use it in FROM"
			return nil, e
		}
		args[i] = coerce(a, plan.Int64)
	}
	arr := &plan.Func{Name: "series_array", Args: args, Typ: plan.ArrayOf(plan.Int64)}
	col := plan.Column{ID: b.ids.Next(), Name: "generate_series", Type: plan.Int64, Nullable: true}
	c.srf.args = append(c.srf.args, arr)
	c.srf.cols = append(c.srf.cols, col)
	return &plan.ColRef{ID: col.ID, Name: col.Name, Typ: col.Type}, nil
}

// timestampSeries binds generate_series(start, stop, step) of dates or
// timestamps and an interval in a select list: the TIMESTAMP values,
// dates read as midnight, as PostgreSQL returns them.
func (b *binder) timestampSeries(f *pg.FuncCall, args []plan.Expr, c ectx) (plan.Expr, error) {
	for i := range 2 {
		t := args[i].Type()
		if lit, ok := args[i].(*plan.Literal); ok && t.ID() == plan.Utf8.ID() {
			if v, ok := adaptLiteral(lit, plan.Timestamp); ok {
				args[i], t = v, plan.Timestamp
			}
		}
		if !plan.IsTemporal(t) && t.ID() != plan.Null.ID() {
			return nil, b.errAt("type", nodeLoc(f.Args[i]), "generate_series of timestamps needs a date or timestamp, not %s", plan.TypeName(t))
		}
		args[i] = castExpr(coerce(args[i], plan.Timestamp), plan.Timestamp)
	}
	if t := args[2].Type(); t.ID() != plan.Interval.ID() && t.ID() != plan.Null.ID() {
		return nil, b.errAt("type", nodeLoc(f.Args[2]), "generate_series of timestamps takes an interval step, not %s", plan.TypeName(t))
	}
	args[2] = coerce(args[2], plan.Interval)
	arr := &plan.Func{Name: "series_ts_array", Args: args, Typ: plan.ArrayOf(plan.Timestamp)}
	col := plan.Column{ID: b.ids.Next(), Name: "generate_series", Type: plan.Timestamp, Nullable: true}
	c.srf.args = append(c.srf.args, arr)
	c.srf.cols = append(c.srf.cols, col)
	return &plan.ColRef{ID: col.ID, Name: col.Name, Typ: col.Type}, nil
}

// unnestColumn checks unnest's argument and returns its element column.
func (b *binder) unnestColumn(arg plan.Expr, f *pg.FuncCall) (plan.Column, error) {
	if hasSubquery(arg) {
		return plan.Column{}, b.errAt("bind", nodeLoc(f.Args[0]), "subqueries are not supported in unnest arguments")
	}
	t := arg.Type()
	if !plan.IsArray(t) {
		e := b.errAt("type", nodeLoc(f.Args[0]), "function unnest(%s) does not exist", plan.TypeName(t))
		e.Hint = "unnest takes an array"
		return plan.Column{}, e
	}
	elem := t.(*arrow.ListType).Elem()
	return plan.Column{ID: b.ids.Next(), Name: "unnest", Type: elem, Nullable: true}, nil
}

// unnestFrom binds unnest(array) as a FROM item: the elements of one array
// whose argument sees no columns (there is no LATERAL), as an Unnest over
// a single row without columns.
func (b *binder) unnestFrom(rf *pg.RangeFunction, f *pg.FuncCall) (plan.Node, []scopeCol, error) {
	if len(f.Args) != 1 || f.AggStar || f.AggDistinct || f.Over != nil || f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil, nil, b.errAt("bind", f.Location, "unnest in FROM takes one array")
	}
	arg, err := b.expr(f.Args[0], ectx{sc: &scope{}, clause: "FROM function arguments"})
	if err != nil {
		return nil, nil, err
	}
	col, err := b.unnestColumn(arg, f)
	if err != nil {
		return nil, nil, err
	}
	qual := ""
	if rf.Alias != nil {
		qual, col.Name = rf.Alias.Aliasname, rf.Alias.Aliasname
		cols := stringList(rf.Alias.Colnames)
		if len(cols) > 1 {
			return nil, nil, b.errAt("bind", f.Location, "%s has 1 column available but %d columns specified", qual, len(cols))
		}
		if len(cols) == 1 {
			col.Name = cols[0]
		}
	}
	col.Table = qual
	n := &plan.Unnest{Input: &plan.Values{Rows: [][]plan.Expr{{}}}, Args: []plan.Expr{arg}, Cols: plan.Schema{col}}
	return n, relationScope(relation{node: n, names: []string{col.Name}}, qual), nil
}
