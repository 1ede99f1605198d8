package sql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// rangeFunction binds a function call in FROM: generate_series or range, whose
// arguments may not refer to other FROM items (there is no LATERAL), or
// one of the functions reading files by path (fileFunction).
func (b *binder) rangeFunction(rf *pg.RangeFunction) (plan.Node, []scopeCol, error) {
	if len(rf.Functions) != 1 || rf.IsRowsfrom {
		return nil, nil, &Error{Kind: "bind", Msg: "ROWS FROM is not supported"}
	}
	items := rf.Functions[0].GetList().GetItems()
	var f *pg.FuncCall
	if len(items) > 0 {
		f = items[0].GetFuncCall()
	}
	if f == nil {
		return nil, nil, &Error{Kind: "bind", Msg: "unsupported function in FROM"}
	}
	parts := stringList(f.Funcname)
	name := strings.ToLower(parts[len(parts)-1])
	switch {
	case rf.Lateral:
		return nil, nil, b.errAt("bind", f.Location, "LATERAL is not supported")
	case rf.Ordinality:
		return nil, nil, b.errAt("bind", f.Location, "WITH ORDINALITY is not supported")
	case len(rf.Coldeflist) > 0:
		return nil, nil, b.errAt("bind", f.Location, "a column definition list is not supported")
	}
	if _, ok := fileFunctions[name]; ok {
		return b.fileFunction(rf, f, name)
	}
	if name == "unnest" {
		return b.unnestFrom(rf, f)
	}
	def, ok := functions[name]
	if !ok || def.kind != KindTable {
		if ok {
			return nil, nil, b.errAt("bind", f.Location, "%s is not a table function (SHOW FUNCTIONS lists the table functions)", name)
		}
		_, err := b.funcCall(f, ectx{}) // the registry's "does not exist" error
		return nil, nil, err
	}
	if f.AggStar || f.AggDistinct || f.Over != nil || f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil, nil, b.errAt("bind", f.Location, "invalid call of %s", name)
	}
	// The arguments see no columns: without LATERAL nothing is in scope.
	c := ectx{sc: &scope{}, clause: "FROM function arguments"}
	args, err := b.exprs(f.Args, c)
	if err != nil {
		return nil, nil, err
	}
	for i, a := range args {
		if hasSubquery(a) {
			return nil, nil, b.errAt("bind", nodeLoc(f.Args[i]), "subqueries are not supported in %s arguments", name)
		}
	}
	locs := make([]int32, len(f.Args))
	for i, a := range f.Args {
		locs[i] = nodeLoc(a)
	}
	fc := &fcall{b: b, name: name, args: args, argLoc: locs, loc: f.Location}
	bind := bindGenerateSeries
	if name == "range" {
		bind = bindRange
	}
	gs, err := bind(fc)
	if err != nil {
		return nil, nil, err
	}
	colName, qual := name, ""
	if rf.Alias != nil {
		qual, colName = rf.Alias.Aliasname, rf.Alias.Aliasname
		cols := stringList(rf.Alias.Colnames)
		if len(cols) > 1 {
			return nil, nil, b.errAt("bind", f.Location, "%s has 1 column available but %d columns specified", qual, len(cols))
		}
		if len(cols) == 1 {
			colName = cols[0]
		}
	}
	gs.Col = plan.Column{ID: b.ids.Next(), Name: colName, Table: qual, Type: gs.Col.Type, Nullable: false}
	return gs, relationScope(relation{node: gs, names: []string{colName}}, qual), nil
}

// bindGenerateSeries types generate_series(start, stop[, step]): integers
// (INT when every argument is INT, else BIGINT, step 1 by default), or
// dates and timestamps with an INTERVAL step (a TIMESTAMP series).
func bindGenerateSeries(c *fcall) (*plan.GenerateSeries, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	temporal := false
	for _, a := range c.args[:2] {
		temporal = temporal || plan.IsTemporal(a.Type())
	}
	if len(c.args) == 3 && c.args[2].Type().ID() == plan.Interval.ID() {
		temporal = true
	}
	if temporal {
		if len(c.args) != 3 || (c.args[2].Type().ID() != plan.Interval.ID() && c.args[2].Type().ID() != plan.Null.ID()) {
			return nil, c.b.errAt("type", c.loc, "generate_series of dates or timestamps needs an INTERVAL step")
		}
		for i := range 2 {
			a := c.args[i]
			switch id := a.Type().ID(); {
			case id == plan.Timestamp.ID(), id == plan.Date32.ID(), id == plan.Null.ID(), isStringLit(a):
				a = coerce(a, plan.Timestamp)
			default:
				return nil, c.b.errAt("type", c.at(i), "generate_series needs a DATE or TIMESTAMP here, not %s", plan.TypeName(a.Type()))
			}
			if l, ok := a.(*plan.Literal); ok && l.Typ.ID() != plan.Timestamp.ID() {
				return nil, c.b.errAt("type", c.at(i), "invalid input syntax for type TIMESTAMP: %s", l)
			}
			c.args[i] = a
		}
		c.args[2] = coerce(c.args[2], plan.Interval)
		return &plan.GenerateSeries{Start: c.args[0], Stop: c.args[1], Step: c.args[2], Col: plan.Column{Type: plan.Timestamp}}, nil
	}
	if len(c.args) == 2 {
		c.args = append(c.args, &plan.Literal{Typ: plan.Int32, Val: int32(1)})
	}
	typ := plan.Int32
	for i, a := range c.args {
		switch {
		case a.Type().ID() == plan.Null.ID():
		case plan.IsInteger(a.Type()):
			// An integer constant that fits INT does not widen the
			// series; a BIGINT column or NULL does.
			if l, ok := a.(*plan.Literal); a.Type().ID() != plan.Int32.ID() && (!ok || l.Val == nil) {
				typ = plan.Int64
			} else if _, ok := narrowIntLit(a, plan.Int32); a.Type().ID() != plan.Int32.ID() && !ok {
				typ = plan.Int64
			}
		default:
			return nil, c.b.errAt("type", c.at(i), "generate_series needs integer, DATE or TIMESTAMP arguments, not %s", plan.TypeName(a.Type()))
		}
	}
	for i := range c.args {
		c.args[i] = coerce(c.args[i], typ)
	}
	if v, ok := c.args[2].(*plan.Literal); ok && (v.Val == int32(0) || v.Val == int64(0)) {
		return nil, c.b.errAt("bind", c.at(2), "%s step size cannot equal zero", c.name)
	}
	return &plan.GenerateSeries{Start: c.args[0], Stop: c.args[1], Step: c.args[2], Col: plan.Column{Type: typ}}, nil
}

// hasSubquery reports whether e contains a subquery.
func hasSubquery(e plan.Expr) bool {
	found := false
	plan.Transform(e, func(x plan.Expr) plan.Expr {
		if _, ok := x.(*plan.Subquery); ok {
			found = true
		}
		return x
	})
	return found
}

// bindRange binds DuckDB's range(stop), range(start, stop[, step]): the
// series of generate_series without its last value, stop itself never
// being part of it. It is a generate_series whose stop is one unit short
// of stop in the step's direction (a microsecond for timestamps), so it
// runs on the same operator. Integer series are BIGINT, as in DuckDB.
func bindRange(c *fcall) (*plan.GenerateSeries, error) {
	if err := c.nargs(1, 3); err != nil {
		return nil, err
	}
	if len(c.args) == 1 {
		c.args = []plan.Expr{&plan.Literal{Typ: plan.Int64, Val: int64(0)}, c.args[0]}
		c.argLoc = []int32{c.loc, c.at(0)}
	}
	temporal := len(c.args) == 3 && c.args[2].Type().ID() == plan.Interval.ID()
	for _, a := range c.args[:2] {
		temporal = temporal || plan.IsTemporal(a.Type())
	}
	if !temporal {
		for i, a := range c.args {
			if !plan.IsInteger(a.Type()) && a.Type().ID() != plan.Null.ID() {
				return nil, c.b.errAt("type", c.at(i), "range needs integer, DATE or TIMESTAMP arguments, not %s", plan.TypeName(a.Type()))
			}
			c.args[i] = coerce(a, plan.Int64)
		}
	}
	gs, err := bindGenerateSeries(c)
	if err != nil {
		return nil, err
	}
	if temporal {
		iv, ok := gs.Step.(*plan.Literal)
		if !ok {
			return nil, c.b.errAt("bind", c.at(2), "range of timestamps needs a constant INTERVAL step")
		}
		var us int64 = 1
		if v, ok := iv.Val.(arrow.MonthDayNanoInterval); ok && (v.Months < 0 || v.Days < 0 || v.Nanoseconds < 0) {
			if v.Months > 0 || v.Days > 0 || v.Nanoseconds > 0 {
				return nil, c.b.errAt("bind", c.at(2), "range step %s mixes signs", iv)
			}
			us = -1
		}
		// A NULL step leaves the series empty whatever the stop.
		micro := &plan.Literal{Typ: plan.Interval, Val: arrow.MonthDayNanoInterval{Nanoseconds: 1000 * us}}
		gs.Stop = &plan.Binary{Op: plan.OpSub, L: gs.Stop, R: micro, Typ: plan.Timestamp}
		return gs, nil
	}
	// generate_series narrows constants that fit to an INT series.
	gs.Start, gs.Stop, gs.Step = coerce(gs.Start, plan.Int64), coerce(gs.Stop, plan.Int64), coerce(gs.Step, plan.Int64)
	gs.Col.Type = plan.Int64
	one := &plan.Literal{Typ: plan.Int64, Val: int64(1)}
	if l, ok := gs.Step.(*plan.Literal); ok {
		if v, ok := l.Val.(int64); ok && v < 0 {
			gs.Stop = &plan.Binary{Op: plan.OpAdd, L: gs.Stop, R: one, Typ: plan.Int64}
		} else {
			gs.Stop = &plan.Binary{Op: plan.OpSub, L: gs.Stop, R: one, Typ: plan.Int64}
		}
		return gs, nil
	}
	// A step known only when the query runs picks the direction then.
	neg := &plan.Binary{Op: plan.OpLt, L: gs.Step, R: &plan.Literal{Typ: plan.Int64, Val: int64(0)}, Typ: plan.Bool}
	gs.Stop = &plan.Case{Whens: []plan.When{{Cond: neg, Then: &plan.Binary{Op: plan.OpAdd, L: gs.Stop, R: one, Typ: plan.Int64}}},
		Else: &plan.Binary{Op: plan.OpSub, L: gs.Stop, R: one, Typ: plan.Int64}, Typ: plan.Int64}
	return gs, nil
}
