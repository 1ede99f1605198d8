package sql

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// Frame option bits of pg.WindowDef.FrameOptions (PostgreSQL's
// FRAMEOPTION_* in nodes/parsenodes.h).
const (
	frameNonDefault              = 0x00001
	frameRange                   = 0x00002
	frameRows                    = 0x00004
	frameGroups                  = 0x00008
	frameStartUnboundedPreceding = 0x00020
	frameEndUnboundedPreceding   = 0x00040
	frameStartUnboundedFollowing = 0x00080
	frameEndUnboundedFollowing   = 0x00100
	frameStartCurrentRow         = 0x00200
	frameEndCurrentRow           = 0x00400
	frameStartOffsetPreceding    = 0x00800
	frameEndOffsetPreceding      = 0x01000
	frameStartOffsetFollowing    = 0x02000
	frameEndOffsetFollowing      = 0x04000
	frameExclusion               = 0x08000 | 0x10000 | 0x20000
)

// windowFuncs are the functions that exist only as window functions.
var windowFuncs = map[string]plan.WindowFunc{
	"row_number": plan.WinRowNumber, "rank": plan.WinRank, "dense_rank": plan.WinDenseRank,
	"percent_rank": plan.WinPercentRank, "cume_dist": plan.WinCumeDist, "ntile": plan.WinNtile,
	"lag": plan.WinLag, "lead": plan.WinLead, "first_value": plan.WinFirstValue,
	"last_value": plan.WinLastValue, "nth_value": plan.WinNthValue,
}

// windowSigs are the window functions' signatures, as SHOW FUNCTIONS
// lists them (the aggregates also run over a window).
var windowSigs = map[string][]funcSig{
	"row_number":   {sig("", "BIGINT")},
	"rank":         {sig("", "BIGINT")},
	"dense_rank":   {sig("", "BIGINT")},
	"percent_rank": {sig("", "DOUBLE")},
	"cume_dist":    {sig("", "DOUBLE")},
	"ntile":        {sig("BIGINT buckets", "BIGINT")},
	"lag":          {sig("any", "same as argument"), sig("any, BIGINT offset", "same as argument"), sig("any, BIGINT offset, any default", "same as argument")},
	"lead":         {sig("any", "same as argument"), sig("any, BIGINT offset", "same as argument"), sig("any, BIGINT offset, any default", "same as argument")},
	"first_value":  {sig("any", "same as argument")},
	"last_value":   {sig("any", "same as argument")},
	"nth_value":    {sig("any, BIGINT n", "same as argument")},
}

// winState collects the window function calls of one query level while its
// select list and ORDER BY are bound, like aggState does for aggregates:
// each distinct call gets one output column of the Window node.
type winState struct {
	defs  map[string]*pg.WindowDef // the WINDOW clause, by name
	calls []*plan.WindowCall
	cols  []plan.Column
	byKey map[string]int
}

func newWinState(clause []*pg.Node) (*winState, error) {
	w := &winState{defs: map[string]*pg.WindowDef{}, byKey: map[string]int{}}
	for _, n := range clause {
		d := n.GetWindowDef()
		if d == nil {
			return nil, &Error{Kind: "bind", Msg: "unexpected WINDOW clause entry"}
		}
		if _, dup := w.defs[d.Name]; dup {
			return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("window %q is already defined", d.Name)}
		}
		w.defs[d.Name] = d
	}
	return w, nil
}

// add registers call (deduplicated) and returns a reference to its output.
func (w *winState) add(ids *plan.IDGen, call *plan.WindowCall, name string) *plan.ColRef {
	k := exprKey(call)
	i, ok := w.byKey[k]
	if !ok {
		i = len(w.calls)
		w.byKey[k] = i
		w.calls = append(w.calls, call)
		nullable := true
		switch call.Func {
		case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank, plan.WinPercentRank, plan.WinCumeDist:
			nullable = false
		case plan.WinAggregate:
			nullable = call.Agg != plan.AggCount && call.Agg != plan.AggCountStar
		}
		w.cols = append(w.cols, plan.Column{ID: ids.Next(), Name: name, Type: call.Typ, Nullable: nullable})
	}
	return &plan.ColRef{ID: w.cols[i].ID, Name: call.String(), Typ: call.Typ}
}

// windowNode puts a Window computing w's calls over input. Arguments and
// keys holding a subquery are computed by a Project below the window and
// referred to by column: the decorrelator rewrites subqueries in a Project
// (or a Filter), not inside a window.
func (b *binder) windowNode(w *winState, input plan.Node) plan.Node {
	if len(w.calls) == 0 {
		return input
	}
	var extra []plan.Expr
	var refs []*plan.ColRef
	for i, c := range w.calls {
		kids := c.Children()
		changed := false
		for j, k := range kids {
			if !containsSubquery(k) {
				continue
			}
			extra = append(extra, k)
			ref := &plan.ColRef{ID: -1, Name: k.String(), Typ: k.Type()} // ID set below
			refs = append(refs, ref)
			kids[j], changed = ref, true
		}
		if changed {
			w.calls[i] = c.WithChildren(kids).(*plan.WindowCall)
		}
	}
	if len(extra) > 0 {
		in := input.Schema()
		exprs := make([]plan.Expr, 0, len(in)+len(extra))
		names := make([]string, 0, len(in)+len(extra))
		for _, c := range in {
			exprs, names = append(exprs, c.Ref()), append(names, c.Name)
		}
		for _, e := range extra {
			exprs, names = append(exprs, e), append(names, "?column?")
		}
		p := b.project(input, exprs, names)
		for i, r := range refs {
			r.ID = p.Cols[len(in)+i].ID
		}
		input = p
	}
	return &plan.Window{Input: input, Calls: w.calls, Cols: w.cols}
}

// containsSubquery reports whether e holds a subquery.
func containsSubquery(e plan.Expr) bool {
	found := false
	plan.Walk(e, func(x plan.Expr) bool {
		if _, ok := x.(*plan.Subquery); ok {
			found = true
		}
		return !found
	})
	return found
}

// resolveWindow returns the window an OVER clause means, following
// references to named windows the way PostgreSQL does: OVER w is w itself;
// OVER (w ...) copies w's PARTITION BY and ORDER BY and may add an ORDER BY
// (when w has none) and a frame (w must have none).
func (b *binder) resolveWindow(d *pg.WindowDef, defs map[string]*pg.WindowDef, depth int) (*pg.WindowDef, error) {
	if depth > len(defs)+1 {
		return nil, b.errAt("bind", d.Location, "window definitions refer to each other in a cycle")
	}
	if d.Name != "" && defs[d.Name] != d {
		// OVER w: the grammar allows nothing else beside the name.
		ref, ok := defs[d.Name]
		if !ok {
			return nil, b.errAt("bind", d.Location, "window %q does not exist", d.Name)
		}
		return b.resolveWindow(ref, defs, depth+1)
	}
	if d.Refname == "" {
		return d, nil
	}
	ref, ok := defs[d.Refname]
	if !ok {
		return nil, b.errAt("bind", d.Location, "window %q does not exist", d.Refname)
	}
	base, err := b.resolveWindow(ref, defs, depth+1)
	if err != nil {
		return nil, err
	}
	if len(d.PartitionClause) > 0 {
		return nil, b.errAt("bind", d.Location, "cannot override PARTITION BY clause of window %q", d.Refname)
	}
	if len(d.OrderClause) > 0 && len(base.OrderClause) > 0 {
		return nil, b.errAt("bind", d.Location, "cannot override ORDER BY clause of window %q", d.Refname)
	}
	if base.FrameOptions&frameNonDefault != 0 {
		return nil, b.errAt("bind", d.Location, "cannot copy window %q because it has a frame clause", d.Refname)
	}
	out := &pg.WindowDef{PartitionClause: base.PartitionClause, OrderClause: base.OrderClause,
		FrameOptions: d.FrameOptions, StartOffset: d.StartOffset, EndOffset: d.EndOffset, Location: d.Location}
	if len(d.OrderClause) > 0 {
		out.OrderClause = d.OrderClause
	}
	return out, nil
}

// windowCall binds f OVER (...). Its arguments, PARTITION BY and ORDER BY
// are bound where aggregates are allowed (a window over a grouped query
// sees the groups) but further window functions are not.
func (b *binder) windowCall(f *pg.FuncCall, name string, c ectx) (plan.Expr, error) {
	if c.win == nil {
		if c.clause == "window function arguments" {
			return nil, b.errAt("bind", f.Location, "window function calls cannot be nested")
		}
		return nil, b.errAt("bind", f.Location, "window functions are not allowed in %s", c.clause)
	}
	def, err := b.resolveWindow(f.Over, c.win.defs, 0)
	if err != nil {
		return nil, err
	}
	if f.AggDistinct {
		return nil, b.errAt("bind", f.Location, "DISTINCT is not implemented for window functions")
	}
	if f.AggFilter != nil || len(f.AggOrder) > 0 || f.AggWithinGroup {
		return nil, b.errAt("bind", f.Location, "FILTER and ORDER BY in window function calls are not supported")
	}
	argCtx := ectx{sc: c.sc, agg: c.agg, clause: "window function arguments"}
	call := &plan.WindowCall{Frame: plan.DefaultFrame}
	for _, p := range def.PartitionClause {
		e, err := b.expr(p, ectx{sc: c.sc, agg: c.agg, clause: "window function arguments"})
		if err != nil {
			return nil, err
		}
		call.PartitionBy = append(call.PartitionBy, e)
	}
	for _, o := range def.OrderClause {
		sb := o.GetSortBy()
		if sb == nil {
			return nil, b.errAt("bind", def.Location, "unexpected window ORDER BY entry")
		}
		dir, err := b.sortDir(sb)
		if err != nil {
			return nil, err
		}
		k := plan.SortKey{Desc: dir.desc, NullsFirst: dir.nullsFirst}
		if k.Expr, err = b.expr(sb.Node, argCtx); err != nil {
			return nil, err
		}
		call.OrderBy = append(call.OrderBy, k)
	}

	if def, ok := functions[name]; ok && def.kind == KindAggregate {
		af := def.agg
		if af > plan.AggMax {
			// The window operator keeps running state for these only.
			return nil, b.errAt("bind", f.Location, "%s over a window is not supported (count, sum, avg, min and max are)", name)
		}
		if f.AggDistinct || len(f.AggOrder) > 0 {
			return nil, b.errAt("bind", f.Location, "DISTINCT and ORDER BY inside an aggregate over a window are not supported")
		}
		a, err := b.typedAggCall(f, af, name, argCtx)
		if err != nil {
			return nil, err
		}
		call.Func, call.Agg, call.Typ = plan.WinAggregate, a.Func, a.Typ
		if a.Arg != nil {
			call.Args = []plan.Expr{a.Arg}
		}
	} else if wf, ok := windowFuncs[name]; ok {
		if f.AggStar {
			return nil, b.errAt("bind", f.Location, "%s(*) is not valid", name)
		}
		args, err := b.exprs(f.Args, argCtx)
		if err != nil {
			return nil, err
		}
		if err := b.typeWindowFunc(f, name, wf, args, call); err != nil {
			return nil, err
		}
	} else {
		return nil, b.errAt("bind", f.Location, "function %s is not a window function nor an aggregate", name)
	}
	if call.Func.UsesFrame() {
		if call.Frame, err = b.windowFrame(def, call.OrderBy); err != nil {
			return nil, err
		}
	} else if def.FrameOptions&(frameGroups|frameExclusion) != 0 {
		// The frame does not matter to this function, but PostgreSQL
		// still rejects what it cannot run; so do we.
		if _, err := b.windowFrame(def, call.OrderBy); err != nil {
			return nil, err
		}
	}
	return c.win.add(b.ids, call, name), nil
}

// typeWindowFunc checks and coerces the arguments of a ranking or value
// window function and sets call's function, arguments and result type.
func (b *binder) typeWindowFunc(f *pg.FuncCall, name string, wf plan.WindowFunc, args []plan.Expr, call *plan.WindowCall) error {
	nargs := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			if lo == hi {
				return b.errAt("bind", f.Location, "function %s takes %d argument(s), got %d", name, lo, len(args))
			}
			return b.errAt("bind", f.Location, "function %s takes %d to %d arguments, got %d", name, lo, hi, len(args))
		}
		return nil
	}
	integer := func(i int) error {
		if !plan.IsInteger(args[i].Type()) && args[i].Type().ID() != plan.Null.ID() {
			return b.errAt("type", nodeLoc(f.Args[i]), "argument %d of %s must be an integer, not %s", i+1, name, plan.TypeName(args[i].Type()))
		}
		args[i] = coerce(args[i], plan.Int64)
		return nil
	}
	call.Func = wf
	switch wf {
	case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank:
		if err := nargs(0, 0); err != nil {
			return err
		}
		call.Typ = plan.Int64
	case plan.WinPercentRank, plan.WinCumeDist:
		if err := nargs(0, 0); err != nil {
			return err
		}
		call.Typ = plan.Float64
	case plan.WinNtile:
		if err := nargs(1, 1); err != nil {
			return err
		}
		if err := integer(0); err != nil {
			return err
		}
		call.Typ = plan.Int64
	case plan.WinLag, plan.WinLead:
		if err := nargs(1, 3); err != nil {
			return err
		}
		if len(args) >= 2 {
			if err := integer(1); err != nil {
				return err
			}
		} else {
			args = append(args, &plan.Literal{Typ: plan.Int64, Val: int64(1)})
		}
		t := args[0].Type()
		if len(args) == 3 {
			var err error
			if t, err = b.commonTypeAt([]plan.Expr{args[0], args[2]}, name, f.Location); err != nil {
				return err
			}
		}
		if t.ID() == plan.Null.ID() {
			t = plan.Utf8 // PostgreSQL resolves an unknown-typed argument as text
		}
		args[0] = coerce(args[0], t)
		if len(args) < 3 {
			args = append(args, &plan.Literal{Typ: t})
		}
		args[2] = coerce(args[2], t)
		call.Typ = t
	case plan.WinFirstValue, plan.WinLastValue, plan.WinNthValue:
		lo := 1
		if wf == plan.WinNthValue {
			lo = 2
		}
		if err := nargs(lo, lo); err != nil {
			return err
		}
		if wf == plan.WinNthValue {
			if err := integer(1); err != nil {
				return err
			}
		}
		if args[0].Type().ID() == plan.Null.ID() {
			args[0] = coerce(args[0], plan.Utf8)
		}
		call.Typ = args[0].Type()
	}
	call.Args = args
	return nil
}

// windowFrame translates a window definition's frame clause.
func (b *binder) windowFrame(def *pg.WindowDef, order []plan.SortKey) (plan.WindowFrame, error) {
	opts := def.FrameOptions
	if opts&frameNonDefault == 0 {
		return plan.DefaultFrame, nil
	}
	if opts&frameGroups != 0 {
		return plan.WindowFrame{}, b.errAt("bind", def.Location, "GROUPS frames are not supported")
	}
	if opts&frameExclusion != 0 {
		return plan.WindowFrame{}, b.errAt("bind", def.Location, "frame EXCLUDE clauses are not supported")
	}
	if opts&(frameStartUnboundedFollowing|frameEndUnboundedPreceding) != 0 {
		// The grammar already rejects these; kept for safety.
		return plan.WindowFrame{}, b.errAt("bind", def.Location, "invalid window frame")
	}
	fr := plan.WindowFrame{Rows: opts&frameRows != 0}
	var err error
	bound := func(what string, unbPre, cur, offPre, offFol, unbFol int32, offset *pg.Node) (plan.FrameBound, error) {
		switch {
		case opts&unbPre != 0:
			return plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, nil
		case opts&cur != 0:
			return plan.FrameBound{Kind: plan.BoundCurrentRow}, nil
		case opts&unbFol != 0:
			return plan.FrameBound{Kind: plan.BoundUnboundedFollowing}, nil
		case opts&offPre != 0, opts&offFol != 0:
			kind := plan.BoundPreceding
			if opts&offFol != 0 {
				kind = plan.BoundFollowing
			}
			lit, err := b.frameOffset(what, offset, fr.Rows, order, def.Location)
			if err != nil {
				return plan.FrameBound{}, err
			}
			return plan.FrameBound{Kind: kind, Offset: lit}, nil
		}
		return plan.FrameBound{}, b.errAt("bind", def.Location, "invalid window frame")
	}
	if fr.Start, err = bound("starting", frameStartUnboundedPreceding, frameStartCurrentRow, frameStartOffsetPreceding,
		frameStartOffsetFollowing, frameStartUnboundedFollowing, def.StartOffset); err != nil {
		return fr, err
	}
	if fr.End, err = bound("ending", frameEndUnboundedPreceding, frameEndCurrentRow, frameEndOffsetPreceding,
		frameEndOffsetFollowing, frameEndUnboundedFollowing, def.EndOffset); err != nil {
		return fr, err
	}
	return fr, nil
}

// frameOffset binds an N PRECEDING / N FOLLOWING offset: a constant, not
// NULL and not negative; for ROWS a BIGINT, for RANGE a value that can be
// added to the single ORDER BY key (days, for a DATE key).
func (b *binder) frameOffset(what string, n *pg.Node, rows bool, order []plan.SortKey, loc int32) (*plan.Literal, error) {
	e, err := b.expr(n, ectx{sc: &scope{}, clause: "window frame offsets"})
	if err != nil {
		return nil, err
	}
	want := plan.Int64
	if !rows {
		if len(order) != 1 {
			return nil, b.errAt("bind", loc, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
		}
		kt := order[0].Expr.Type()
		switch kt.ID() {
		case arrow.INT32, arrow.INT64:
			want = plan.Int64
			if !plan.IsInteger(e.Type()) && e.Type().ID() != plan.Null.ID() {
				return nil, b.errAt("type", nodeLoc(n), "RANGE offset for an integer ORDER BY key must be an integer, not %s", plan.TypeName(e.Type()))
			}
		case arrow.FLOAT64:
			want = plan.Float64
		case arrow.DECIMAL128:
			want = kt
			if d, ok := e.Type().(*arrow.Decimal128Type); ok && d.Scale > kt.(*arrow.Decimal128Type).Scale {
				return nil, b.errAt("type", nodeLoc(n), "RANGE offset %s has more fractional digits than the ORDER BY key %s", e, plan.TypeName(kt))
			}
		case arrow.DATE32:
			want = plan.Int32
			if l, ok := plan.FoldExpr(e).(*plan.Literal); ok {
				if iv, ok := l.Val.(arrow.MonthDayNanoInterval); ok {
					if iv.Months != 0 || iv.Nanoseconds != 0 {
						return nil, b.errAt("bind", nodeLoc(n), "RANGE offsets on DATE keys must be whole days")
					}
					e = &plan.Literal{Typ: plan.Int32, Val: iv.Days}
				}
			}
		default:
			return nil, b.errAt("type", loc, "RANGE with offset PRECEDING/FOLLOWING is not supported for ORDER BY type %s", plan.TypeName(kt))
		}
		if !plan.IsNumeric(e.Type()) && e.Type().ID() != plan.Null.ID() {
			return nil, b.errAt("type", nodeLoc(n), "RANGE offset must be a number, not %s", plan.TypeName(e.Type()))
		}
	} else if !plan.IsInteger(e.Type()) && e.Type().ID() != plan.Null.ID() {
		return nil, b.errAt("type", nodeLoc(n), "ROWS offset must be an integer, not %s", plan.TypeName(e.Type()))
	}
	lit, ok := plan.FoldExpr(castExpr(e, want)).(*plan.Literal)
	if !ok {
		return nil, b.errAt("bind", nodeLoc(n), "frame %s offset must be a constant", what)
	}
	if lit.Val == nil {
		return nil, b.errAt("bind", nodeLoc(n), "frame %s offset must not be null", what)
	}
	neg := false
	switch v := lit.Val.(type) {
	case int64:
		neg = v < 0
	case int32:
		neg = v < 0
	case float64:
		neg = v < 0
	case decimal128.Num:
		neg = v.Sign() < 0
	}
	if neg {
		return nil, b.errAt("bind", nodeLoc(n), "frame %s offset must not be negative", what)
	}
	return lit, nil
}
