package difftest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Query is one generated query.
type Query struct {
	SQL string
	// Ordered is true when the query ends in an ORDER BY over every output
	// column, so rows must come in the same order; otherwise the answer is
	// a multiset.
	Ordered bool
	// Shape names the template that made the query (for reports).
	Shape string
}

// Generator makes queries. The same seed gives the same queries.
type Generator struct {
	r *rand.Rand
	s *Schema
}

// New returns a generator of TPC-DS queries seeded with seed.
func New(seed uint64) *Generator { return NewFor(TPCDS, seed) }

// NewFor returns a generator of queries over schema seeded with seed.
func NewFor(schema *Schema, seed uint64) *Generator {
	return &Generator{r: rand.New(rand.NewPCG(seed, 0x5eed)), s: schema}
}

// fact returns one of the schema's fact tables.
func (g *Generator) fact() *Table {
	var facts []*Table
	for i := range g.s.Tables {
		if g.s.Tables[i].Fact {
			facts = append(facts, &g.s.Tables[i])
		}
	}
	return pickOf(g, facts)
}

// Shapes are the query templates, by name, in the order Query draws them.
var Shapes = []string{"aggregate", "grouping", "window", "setop", "subquery", "select_subquery", "lateral", "join",
	"window_over_aggregate", "top_per_group", "cte", "three_way_join", "nested_subquery", "subquery_in_aggregate"}

// Query returns the next query.
func (g *Generator) Query() Query {
	return g.Shape(Shapes[g.r.IntN(len(Shapes))])
}

// Shape returns a query of the named template.
func (g *Generator) Shape(name string) Query {
	var q Query
	switch name {
	case "aggregate":
		q = g.aggregate()
	case "grouping":
		q = g.grouping()
	case "window":
		q = g.window()
	case "setop":
		q = g.setop()
	case "subquery":
		q = g.subquery()
	case "select_subquery":
		q = g.selectSubquery()
	case "lateral":
		q = g.lateral()
	case "join":
		q = g.join()
	case "window_over_aggregate":
		q = g.windowOverAggregate()
	case "top_per_group":
		q = g.topPerGroup()
	case "cte":
		q = g.cte()
	case "three_way_join":
		q = g.threeWayJoin()
	case "nested_subquery":
		q = g.nestedSubquery()
	case "subquery_in_aggregate":
		q = g.subqueryInAggregate()
	default:
		panic("difftest: unknown shape " + name)
	}
	q.Shape = name
	return q
}

// qcol is a column of a FROM item under its alias.
type qcol struct {
	alias string
	col   Column
}

func (c qcol) String() string { return c.alias + "." + c.col.Name }

// rel is a FROM clause and what it brings into scope.
type rel struct {
	from string
	cols []qcol
	key  []string // qualified columns that make a row unique
}

func (g *Generator) pick(n int) int { return g.r.IntN(n) }

func (g *Generator) chance(p float64) bool { return g.r.Float64() < p }

func pickOf[T any](g *Generator, xs []T) T { return xs[g.r.IntN(len(xs))] }

func base(t *Table, alias string) rel {
	r := rel{from: t.Name + " " + alias}
	for _, c := range t.Cols {
		r.cols = append(r.cols, qcol{alias, c})
	}
	for _, k := range t.Key {
		r.key = append(r.key, alias+"."+k)
	}
	return r
}

// factJoin is a fact table joined to a dimension (or another fact) along
// an edge, inner or outer.
func (g *Generator) factJoin(kinds []string) rel {
	e := pickOf(g, g.s.Edges)
	a, b := base(g.s.TableNamed(e.From), "t1"), base(g.s.TableNamed(e.To), "t2")
	kind := pickOf(g, kinds)
	on := fmt.Sprintf("t1.%s = t2.%s", e.FromCol, e.ToCol)
	if kind != "JOIN" && g.chance(0.3) {
		// An extra ON condition on an outer join is not the same as a
		// WHERE condition: it keeps the unmatched rows.
		on += " AND " + g.atom(b.cols)
	}
	r := rel{from: fmt.Sprintf("%s %s %s ON %s", a.from, kind, b.from, on)}
	r.cols = append(append(r.cols, a.cols...), b.cols...)
	r.key = append(append(r.key, a.key...), b.key...)
	return r
}

func (g *Generator) anyRel() rel {
	if g.chance(0.5) {
		return base(&g.s.Tables[g.pick(len(g.s.Tables))], "t1")
	}
	return g.factJoin([]string{"JOIN", "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"})
}

func colsOf(cols []qcol, pred func(Column) bool) []qcol {
	var out []qcol
	for _, c := range cols {
		if pred(c.col) {
			out = append(out, c)
		}
	}
	return out
}

func numeric(c Column) bool   { return c.Kind == Int || c.Kind == Dec }
func groupable(c Column) bool { return c.Group }

func (g *Generator) lit(c Column) string {
	if len(c.Lits) == 0 {
		return "NULL"
	}
	return pickOf(g, c.Lits)
}

// atom is one simple condition on cols.
func (g *Generator) atom(cols []qcol) string {
	c := pickOf(g, cols)
	switch g.pick(9) {
	case 0:
		if g.chance(0.5) {
			return c.String() + " IS NULL"
		}
		return c.String() + " IS NOT NULL"
	case 1:
		lo, hi := g.lit(c.col), g.lit(c.col)
		not := ""
		if g.chance(0.3) {
			not = "NOT "
		}
		return fmt.Sprintf("%s %sBETWEEN %s AND %s", c, not, lo, hi)
	case 2:
		n := 1 + g.pick(3)
		var ls []string
		for range n {
			ls = append(ls, g.lit(c.col))
		}
		if g.chance(0.2) {
			ls = append(ls, "NULL")
		}
		not := ""
		if g.chance(0.4) {
			not = "NOT "
		}
		return fmt.Sprintf("%s %sIN (%s)", c, not, strings.Join(ls, ", "))
	case 3:
		if c.col.Kind == Str {
			return fmt.Sprintf("%s LIKE '%s%%'", c, pickOf(g, []string{"A", "a", "B", "s", "M", "C"}))
		}
		if c.col.Kind == Int {
			return fmt.Sprintf("%s %% %d = %d", c, 2+g.pick(5), g.pick(2))
		}
		return fmt.Sprintf("coalesce(%s, %s) %s %s", c, g.lit(c.col), g.cmp(), g.lit(c.col))
	case 4:
		same := colsOf(cols, func(o Column) bool { return o.Kind == c.col.Kind || numeric(o) && numeric(c.col) })
		o := pickOf(g, same)
		return fmt.Sprintf("%s %s %s", c, g.cmp(), o)
	default:
		return fmt.Sprintf("%s %s %s", c, g.cmp(), g.lit(c.col))
	}
}

func (g *Generator) cmp() string {
	return pickOf(g, []string{"=", "<>", "<", "<=", ">", ">="})
}

// pred is a condition of up to depth levels of AND, OR and NOT.
func (g *Generator) pred(cols []qcol, depth int) string {
	if depth <= 0 || g.chance(0.4) {
		return g.atom(cols)
	}
	switch g.pick(4) {
	case 0:
		return "NOT (" + g.pred(cols, depth-1) + ")"
	case 1:
		return "(" + g.pred(cols, depth-1) + " OR " + g.pred(cols, depth-1) + ")"
	default:
		return g.pred(cols, depth-1) + " AND " + g.pred(cols, depth-1)
	}
}

func (g *Generator) where(cols []qcol) string {
	if g.chance(0.2) {
		return ""
	}
	if g.chance(0.02) {
		// Empty input: aggregates without groups still make one row.
		return " WHERE 1 = 0"
	}
	return " WHERE " + g.pred(cols, 2)
}

// scalar is a row-level value expression over cols.
func (g *Generator) scalar(cols []qcol) string {
	c := pickOf(g, cols)
	switch {
	case c.col.Kind == Int && g.chance(0.3):
		return fmt.Sprintf("%s / %d", c, pickOf(g, []int{2, 3, 7, -4}))
	case c.col.Kind == Int && g.chance(0.2):
		return fmt.Sprintf("%s %% %d", c, pickOf(g, []int{2, 3, 7, -4}))
	case c.col.Kind == Int && g.chance(0.2):
		return fmt.Sprintf("(%s - %s) * %d", c, g.lit(c.col), 1+g.pick(3))
	case c.col.Kind == Dec && g.chance(0.3):
		return fmt.Sprintf("%s * %s", c, pickOf(g, []string{"2", "-1", "0.5", "1.25"}))
	case c.col.Kind == Dec && g.chance(0.2):
		return fmt.Sprintf("round(%s / 3, 2)", c)
	case c.col.Kind == Str && g.chance(0.4):
		switch g.pick(6) {
		case 0:
			return fmt.Sprintf("upper(substr(%s, 1, %d))", c, 1+g.pick(4))
		case 1:
			return fmt.Sprintf("length(%s)", c)
		case 2:
			return fmt.Sprintf("%s || '-' || coalesce(%s, '?')", c, c)
		case 3:
			return fmt.Sprintf("lower(trim(%s))", c)
		case 4:
			return fmt.Sprintf("concat(%s, 'x', NULL)", c)
		default:
			return fmt.Sprintf("nullif(%s, %s)", c, g.lit(c.col))
		}
	case c.col.Kind == Date && g.chance(0.6):
		switch g.pick(3) {
		case 0:
			return fmt.Sprintf("extract(%s FROM %s)", pickOf(g, []string{"year", "month", "day", "quarter", "dow"}), c)
		case 1:
			return fmt.Sprintf("%s + %d", c, g.pick(60)-30)
		default:
			return fmt.Sprintf("%s - DATE '2000-01-01'", c)
		}
	case numeric(c.col) && g.chance(0.15):
		o := pickOf(g, colsOf(cols, func(o Column) bool { return o.Kind == c.col.Kind }))
		return fmt.Sprintf("%s(%s, %s)", pickOf(g, []string{"greatest", "least"}), c, o)
	case g.chance(0.2):
		return fmt.Sprintf("coalesce(%s, %s)", c, g.lit(c.col))
	case g.chance(0.15):
		return fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.atom(cols), c, g.lit(c.col))
	}
	return c.String()
}

// agg is an aggregate call over cols; every one is deterministic
// (string_agg orders by the aggregated value last).
func (g *Generator) agg(cols []qcol) string {
	nums := colsOf(cols, numeric)
	strs := colsOf(cols, func(c Column) bool { return c.Kind == Str })
	var s string
	switch g.pick(14) {
	case 0:
		s = "count(*)"
	case 1:
		s = fmt.Sprintf("count(%s)", pickOf(g, cols))
	case 2:
		s = fmt.Sprintf("count(DISTINCT %s)", pickOf(g, cols))
	case 3, 4:
		s = fmt.Sprintf("sum(%s)", g.scalar(nums))
	case 5:
		s = fmt.Sprintf("avg(%s)", pickOf(g, nums))
	case 6:
		s = fmt.Sprintf("%s(%s)", pickOf(g, []string{"min", "max"}), pickOf(g, cols))
	case 7, 8:
		s = fmt.Sprintf("%s(%s)", pickOf(g, []string{"stddev_samp", "stddev_pop", "var_samp", "var_pop", "variance", "stddev"}), pickOf(g, nums))
	case 9:
		s = fmt.Sprintf("%s(%s, %s)", pickOf(g, []string{"corr", "covar_pop", "covar_samp"}), pickOf(g, nums), pickOf(g, nums))
	case 10, 11:
		if len(strs) == 0 {
			s = "count(*)"
			break
		}
		v := pickOf(g, strs)
		order := v.String()
		if g.chance(0.4) {
			order = pickOf(g, cols).String() + pickOf(g, []string{"", " DESC", " NULLS FIRST"}) + ", " + order
		} else if g.chance(0.3) {
			order += " DESC"
		}
		s = fmt.Sprintf("string_agg(%s, '%s' ORDER BY %s)", v, pickOf(g, []string{",", "|", ""}), order)
	case 12:
		s = fmt.Sprintf("%s(%s)", pickOf(g, []string{"bool_and", "bool_or"}), g.atom(cols))
	default:
		s = fmt.Sprintf("sum(%s)", pickOf(g, nums))
	}
	if g.chance(0.2) {
		s += " FILTER (WHERE " + g.pred(cols, 1) + ")"
	}
	return s
}

func aliased(exprs []string) string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = fmt.Sprintf("%s AS c%d", e, i)
	}
	return strings.Join(out, ", ")
}

func positions(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprint(i + 1)
	}
	return strings.Join(ps, ", ")
}

// groupCols picks 1 to max distinct low-cardinality columns (any column
// when the relation has none).
func (g *Generator) groupCols(cols []qcol, max int) []qcol {
	cands := colsOf(cols, groupable)
	if len(cands) == 0 {
		cands = cols
	}
	n := 1 + g.pick(max)
	seen := map[string]bool{}
	var out []qcol
	for range n {
		c := pickOf(g, cands)
		if !seen[c.String()] {
			seen[c.String()] = true
			out = append(out, c)
		}
	}
	return out
}

// orderLimit optionally ends a query of n output columns with a total
// ORDER BY and a LIMIT.
func (g *Generator) orderLimit(q *Query, n int) {
	if g.chance(0.3) {
		dirs := make([]string, n)
		for i := range dirs {
			dirs[i] = fmt.Sprint(i + 1)
			if g.chance(0.3) {
				dirs[i] += " DESC"
			}
		}
		q.SQL += " ORDER BY " + strings.Join(dirs, ", ")
		q.Ordered = true
		if g.chance(0.5) {
			q.SQL += fmt.Sprintf(" LIMIT %d", 1+g.pick(20))
			if g.chance(0.3) {
				q.SQL += fmt.Sprintf(" OFFSET %d", g.pick(5))
			}
		}
	}
}

// aggregate: GROUP BY (or none) with aggregates, FILTER, HAVING.
func (g *Generator) aggregate() Query {
	r := g.anyRel()
	var exprs []string
	var groups []qcol
	if g.chance(0.8) {
		groups = g.groupCols(r.cols, 2)
		for _, c := range groups {
			exprs = append(exprs, c.String())
		}
	}
	for range 1 + g.pick(4) {
		exprs = append(exprs, g.agg(r.cols))
	}
	distinct := ""
	if len(groups) > 0 && g.chance(0.1) {
		distinct = "DISTINCT "
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s%s FROM %s%s", distinct, aliased(exprs), r.from, g.where(r.cols))}
	if len(groups) > 0 {
		q.SQL += " GROUP BY " + positions(len(groups))
		if g.chance(0.3) {
			q.SQL += fmt.Sprintf(" HAVING count(*) > %d", g.pick(5))
			if g.chance(0.4) {
				q.SQL += " OR " + g.agg(r.cols) + " IS NULL"
			}
		}
	}
	g.orderLimit(&q, len(exprs))
	return q
}

// grouping: ROLLUP, CUBE, GROUPING SETS and grouping().
func (g *Generator) grouping() Query {
	r := g.anyRel()
	cands := colsOf(r.cols, groupable)
	if len(cands) < 2 {
		cands = r.cols
	}
	a := pickOf(g, cands)
	b := pickOf(g, cands)
	for tries := 0; b.String() == a.String() && tries < 10; tries++ {
		b = pickOf(g, r.cols)
	}
	if b.String() == a.String() {
		b = qcol{a.alias, a.col}
		for _, c := range r.cols {
			if c.String() != a.String() {
				b = c
				break
			}
		}
	}
	exprs := []string{a.String(), b.String()}
	switch g.pick(3) {
	case 0:
		exprs = append(exprs, fmt.Sprintf("grouping(%s)", a))
	case 1:
		exprs = append(exprs, fmt.Sprintf("grouping(%s, %s)", a, b))
	}
	for range 1 + g.pick(3) {
		exprs = append(exprs, g.agg(r.cols))
	}
	var by string
	switch g.pick(6) {
	case 0:
		by = fmt.Sprintf("ROLLUP (%s, %s)", a, b)
	case 1:
		by = fmt.Sprintf("CUBE (%s, %s)", a, b)
	case 2:
		by = fmt.Sprintf("GROUPING SETS ((%s, %s), (%s), ())", a, b, b)
	case 3:
		by = fmt.Sprintf("%s, ROLLUP (%s)", a, b)
	case 4:
		by = fmt.Sprintf("GROUPING SETS ((%s), (%s))", a, b)
	default:
		by = fmt.Sprintf("ROLLUP (%s), CUBE (%s)", a, b)
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s GROUP BY %s", aliased(exprs), r.from, g.where(r.cols), by)}
	if g.chance(0.25) {
		q.SQL += fmt.Sprintf(" HAVING count(*) > %d", g.pick(4))
	}
	g.orderLimit(&q, len(exprs))
	return q
}

// window: every window function and frame kind sluice has, over a fact
// table alone or joined to a dimension.
func (g *Generator) window() Query {
	var r rel
	if g.chance(0.5) {
		r = base(g.fact(), "t1")
	} else {
		r = g.factJoin([]string{"JOIN", "LEFT JOIN"})
	}
	exprs := append([]string{}, r.key...)
	for range 1 + g.pick(3) {
		exprs = append(exprs, g.windowCall(r))
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s", aliased(exprs), r.from, g.where(r.cols))}
	g.orderLimit(&q, len(exprs))
	return q
}

func (g *Generator) windowCall(r rel) string {
	part := ""
	if g.chance(0.7) {
		var ps []string
		for _, c := range g.groupCols(r.cols, 2) {
			ps = append(ps, c.String())
		}
		part = "PARTITION BY " + strings.Join(ps, ", ")
	}
	sortCol := pickOf(g, r.cols)
	dir := pickOf(g, []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST", " ASC"})
	peers := "ORDER BY " + sortCol.String() + dir
	unique := peers + ", " + strings.Join(r.key, ", ")
	spec := func(order string, frame string) string {
		parts := []string{}
		if part != "" {
			parts = append(parts, part)
		}
		if order != "" {
			parts = append(parts, order)
		}
		if frame != "" {
			parts = append(parts, frame)
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	nums := colsOf(r.cols, numeric)
	val := pickOf(g, r.cols)
	switch g.pick(10) {
	case 0:
		return "row_number() OVER " + spec(unique, "")
	case 1:
		// Ranks are the same whichever way ties are broken.
		return pickOf(g, []string{"rank", "dense_rank", "percent_rank", "cume_dist"}) + "() OVER " + spec(peers, "")
	case 2:
		return fmt.Sprintf("ntile(%d) OVER %s", 1+g.pick(5), spec(unique, ""))
	case 3:
		def := ""
		switch g.pick(3) {
		case 0:
			def = fmt.Sprintf(", %d", 1+g.pick(3))
		case 1:
			def = fmt.Sprintf(", %d, %s", 1+g.pick(3), val)
		}
		return fmt.Sprintf("%s(%s%s) OVER %s", pickOf(g, []string{"lag", "lead"}), val, def, spec(unique, ""))
	case 4:
		f := pickOf(g, []string{"first_value(%s)", "last_value(%s)", "nth_value(%s, 2)"})
		return fmt.Sprintf(f, val) + " OVER " + spec(unique, g.rowsFrame())
	case 5, 6:
		// ROWS frames need a unique order.
		return g.winAgg(r, nums) + " OVER " + spec(unique, g.rowsFrame())
	case 7:
		// RANGE frames without offsets and the default frame: peers
		// share a value, so the order need not be unique.
		frame := pickOf(g, []string{"", "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"})
		return g.winAgg(r, nums) + " OVER " + spec(peers, frame)
	case 8:
		// RANGE with offsets: one numeric ORDER BY key.
		k := pickOf(g, nums)
		off := func() string {
			if k.col.Kind == Dec {
				return pickOf(g, []string{"0", "1.5", "10", "100.25"})
			}
			return fmt.Sprint(g.pick(20))
		}
		lo := pickOf(g, []string{"UNBOUNDED PRECEDING", off() + " PRECEDING", "CURRENT ROW"})
		hi := pickOf(g, []string{off() + " FOLLOWING", "CURRENT ROW", "UNBOUNDED FOLLOWING"})
		if lo == "CURRENT ROW" && strings.HasSuffix(hi, "PRECEDING") {
			hi = "CURRENT ROW"
		}
		d := pickOf(g, []string{"", " DESC", " NULLS FIRST"})
		return g.winAgg(r, nums) + " OVER " + spec("ORDER BY "+k.String()+d, fmt.Sprintf("RANGE BETWEEN %s AND %s", lo, hi))
	default:
		// No ORDER BY: the whole partition.
		return g.winAgg(r, nums) + " OVER " + spec("", "")
	}
}

func (g *Generator) winAgg(r rel, nums []qcol) string {
	switch g.pick(6) {
	case 0:
		return "count(*)"
	case 1:
		return fmt.Sprintf("count(%s)", pickOf(g, r.cols))
	case 2:
		return fmt.Sprintf("avg(%s)", pickOf(g, nums))
	case 3:
		return fmt.Sprintf("%s(%s)", pickOf(g, []string{"min", "max"}), pickOf(g, r.cols))
	default:
		return fmt.Sprintf("sum(%s)", pickOf(g, nums))
	}
}

func (g *Generator) rowsFrame() string {
	// Bounds by rank: UNBOUNDED PRECEDING, n PRECEDING, CURRENT ROW, n
	// FOLLOWING, UNBOUNDED FOLLOWING. The start may not rank after the end
	// (PostgreSQL's rule); n PRECEDING to a smaller n PRECEDING is a legal
	// empty frame.
	bound := func(rank int) string {
		switch rank {
		case 0:
			return "UNBOUNDED PRECEDING"
		case 1:
			return fmt.Sprintf("%d PRECEDING", g.pick(4))
		case 2:
			return "CURRENT ROW"
		case 3:
			return fmt.Sprintf("%d FOLLOWING", g.pick(4))
		default:
			return "UNBOUNDED FOLLOWING"
		}
	}
	switch g.pick(4) {
	case 0:
		return ""
	case 1:
		return "ROWS UNBOUNDED PRECEDING"
	}
	lo, hi := g.pick(4), 1+g.pick(4)
	if lo > hi {
		lo, hi = hi, lo
	}
	return fmt.Sprintf("ROWS BETWEEN %s AND %s", bound(lo), bound(hi))
}

func (g *Generator) setArm(spec string, n int) string {
	name, list, _ := strings.Cut(spec, ":")
	cols := strings.Split(list, ",")
	r := base(g.s.TableNamed(name), "t1")
	var sel []string
	for i, c := range cols {
		if i < n {
			sel = append(sel, "t1."+c)
		}
	}
	return fmt.Sprintf("SELECT %s FROM %s%s", strings.Join(sel, ", "), r.from, g.where(r.cols))
}

// setop: UNION, INTERSECT and EXCEPT, with and without ALL, nested.
func (g *Generator) setop() Query {
	specs := pickOf(g, g.s.SetPairs)
	n := len(strings.Split(strings.SplitN(specs[0], ":", 2)[1], ","))
	if n > 1 && g.chance(0.3) {
		n = 1
	}
	op := func() string {
		return pickOf(g, []string{"UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"})
	}
	body := g.setArm(pickOf(g, specs), n) + " " + op() + " " + g.setArm(pickOf(g, specs), n)
	if g.chance(0.3) {
		body = "(" + body + ") " + op() + " " + g.setArm(pickOf(g, specs), n)
	}
	var q Query
	if g.chance(0.3) {
		q.SQL = fmt.Sprintf("SELECT c0, count(*) AS n FROM (%s) s(%s) GROUP BY c0", body, colNames(n))
		g.orderLimit(&q, 2)
		return q
	}
	q.SQL = body
	g.orderLimit(&q, n)
	return q
}

func colNames(n int) string {
	ns := make([]string, n)
	for i := range ns {
		ns[i] = fmt.Sprintf("c%d", i)
	}
	return strings.Join(ns, ", ")
}

// corr is a correlated pair: an outer relation (alias t1) and an inner
// table (alias t2) with the condition joining them.
type corr struct {
	outer, inner rel
	on           string
	innerTab     *Table
}

func (g *Generator) correlation() corr {
	e := pickOf(g, g.s.Edges)
	from, to := g.s.TableNamed(e.From), g.s.TableNamed(e.To)
	oc, ic := e.ToCol, e.FromCol
	if from.Fact && to.Fact && g.chance(0.5) || !from.Fact && g.chance(0.5) {
		from, to = to, from
		oc, ic = ic, oc
	}
	// Outer is the dimension side (to) usually; inner the referencing side.
	c := corr{outer: base(to, "t1"), inner: base(from, "t2"), innerTab: from}
	c.on = fmt.Sprintf("t2.%s = t1.%s", ic, oc)
	return c
}

func (g *Generator) innerWhere(c corr, correlated bool) string {
	return g.innerWhereExtra(c, correlated, true)
}

// innerWhereExtra is innerWhere; beyond says whether a correlation other
// than the equality may be added (sluice decorrelates one ANDed to the
// equality, except below a GROUP BY in LATERAL, and none ORed to it).
func (g *Generator) innerWhereExtra(c corr, correlated, beyond bool) string {
	var conds []string
	if correlated {
		conds = append(conds, c.on)
		// Not <>: DuckDB 1.5 answers NOT EXISTS (... AND inner <> outer)
		// wrongly when the outer value is NULL (false where no inner row
		// can match, so PostgreSQL and sluice say true).
		if beyond && g.chance(0.25) {
			o := pickOf(g, colsOf(c.outer.cols, numeric))
			i := pickOf(g, colsOf(c.inner.cols, numeric))
			conds = append(conds, fmt.Sprintf("%s %s %s", i, pickOf(g, []string{"<", ">", ">="}), o))
		}
	}
	if g.chance(0.6) {
		conds = append(conds, g.pred(c.inner.cols, 1))
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// subPred is a subquery condition: EXISTS, IN, NOT IN or a comparison with
// a scalar subquery, correlated or not.
func (g *Generator) subPred(c corr) string {
	correlated := g.chance(0.7)
	inner := c.inner.from + g.innerWhere(c, correlated)
	switch g.pick(4) {
	case 0:
		return fmt.Sprintf("EXISTS (SELECT 1 FROM %s)", inner)
	case 1:
		return fmt.Sprintf("NOT EXISTS (SELECT 1 FROM %s)", inner)
	case 2:
		// IN and NOT IN over a column that may hold NULLs.
		oc := pickOf(g, c.outer.cols)
		same := colsOf(c.inner.cols, func(o Column) bool { return o.Kind == oc.col.Kind || numeric(o) && numeric(oc.col) })
		if len(same) == 0 {
			return fmt.Sprintf("EXISTS (SELECT 1 FROM %s)", inner)
		}
		not := pickOf(g, []string{"", "NOT "})
		return fmt.Sprintf("%s %sIN (SELECT %s FROM %s)", oc, not, pickOf(g, same), inner)
	default:
		nums := colsOf(c.outer.cols, numeric)
		inums := colsOf(c.inner.cols, numeric)
		return fmt.Sprintf("%s %s (SELECT %s(%s) FROM %s)", pickOf(g, nums), g.cmp(), pickOf(g, []string{"max", "min", "avg", "sum", "count"}), pickOf(g, inums), inner)
	}
}

// subquery: subquery conditions in WHERE under AND, OR, NOT and CASE.
func (g *Generator) subquery() Query {
	c := g.correlation()
	var cond string
	switch g.pick(5) {
	case 0:
		cond = g.subPred(c)
	case 1:
		cond = "(" + g.subPred(c) + " OR " + g.pred(c.outer.cols, 1) + ")"
	case 2:
		cond = "NOT (" + g.subPred(c) + " AND " + g.pred(c.outer.cols, 1) + ")"
	case 3:
		cond = fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.pred(c.outer.cols, 1), g.subPred(c), g.subPred(c))
	default:
		cond = g.subPred(c) + " AND " + g.pred(c.outer.cols, 1)
	}
	exprs := append([]string{}, c.outer.key...)
	for range 1 + g.pick(2) {
		exprs = append(exprs, g.scalar(c.outer.cols))
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s WHERE %s", aliased(exprs), c.outer.from, cond)}
	if g.chance(0.3) {
		q.SQL = fmt.Sprintf("SELECT count(*) AS n, count(DISTINCT %s) AS d FROM %s WHERE %s", c.outer.key[0], c.outer.from, cond)
		return q
	}
	g.orderLimit(&q, len(exprs))
	return q
}

// selectSubquery: subqueries in the select list: scalar (aggregate or a
// key lookup), EXISTS, IN and CASE over them.
func (g *Generator) selectSubquery() Query {
	c := g.correlation()
	exprs := append([]string{}, c.outer.key...)
	for range 1 + g.pick(3) {
		switch g.pick(4) {
		case 0:
			inums := colsOf(c.inner.cols, numeric)
			exprs = append(exprs, fmt.Sprintf("(SELECT %s(%s) FROM %s%s)", pickOf(g, []string{"max", "min", "sum", "count", "avg"}), pickOf(g, inums), c.inner.from, g.innerWhere(c, g.chance(0.8))))
		case 1:
			exprs = append(exprs, fmt.Sprintf("(SELECT count(*) FROM %s%s)", c.inner.from, g.innerWhere(c, true)))
		case 2:
			exprs = append(exprs, g.subPred(c))
		default:
			exprs = append(exprs, fmt.Sprintf("CASE WHEN %s THEN 'a' WHEN %s THEN 'b' ELSE 'c' END", g.subPred(c), g.pred(c.outer.cols, 1)))
		}
	}
	// A key lookup: at most one row by the dimension's key.
	for _, e := range g.s.Edges {
		if g.chance(0.5) && e.From == c.outer.from[:strings.IndexByte(c.outer.from, ' ')] && len(g.s.TableNamed(e.To).Key) == 1 && g.s.TableNamed(e.To).Key[0] == e.ToCol {
			d := g.s.TableNamed(e.To)
			v := pickOf(g, d.Cols)
			exprs = append(exprs, fmt.Sprintf("(SELECT d.%s FROM %s d WHERE d.%s = t1.%s)", v.Name, d.Name, e.ToCol, e.FromCol))
			break
		}
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s", aliased(exprs), c.outer.from, g.where(c.outer.cols))}
	g.orderLimit(&q, len(exprs))
	return q
}

// lateral: a derived table that reads the outer row.
func (g *Generator) lateral() Query {
	c := g.correlation()
	inums := colsOf(c.inner.cols, numeric)
	var body, cols string
	switch g.pick(2) {
	case 0:
		body = fmt.Sprintf("SELECT count(*) AS lc, sum(%s) AS ls, max(%s) AS lm FROM %s%s", pickOf(g, inums), pickOf(g, c.inner.cols), c.inner.from, g.innerWhere(c, true))
		cols = "l.lc, l.ls, l.lm"
	default:
		gc := g.groupCols(c.inner.cols, 1)[0]
		body = fmt.Sprintf("SELECT %s AS lg, count(*) AS lc, %s AS la FROM %s%s GROUP BY %s", gc, g.agg(c.inner.cols), c.inner.from, g.innerWhereExtra(c, true, false), gc)
		cols = "l.lg, l.lc, l.la"
	}
	exprs := append(append([]string{}, c.outer.key...), cols)
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s, LATERAL (%s) l%s", strings.Join(exprs, ", "), c.outer.from, body, g.where(c.outer.cols))}
	return q
}

// join: inner and outer joins with ON conditions and NULL keys, grouped or
// as rows.
func (g *Generator) join() Query {
	r := g.factJoin([]string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"})
	if g.chance(0.5) {
		return g.aggregateOver(r)
	}
	exprs := append([]string{}, r.key...)
	for range 1 + g.pick(3) {
		exprs = append(exprs, g.scalar(r.cols))
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s", aliased(exprs), r.from, g.where(r.cols))}
	g.orderLimit(&q, len(exprs))
	return q
}

func (g *Generator) aggregateOver(r rel) Query {
	groups := g.groupCols(r.cols, 2)
	var exprs []string
	for _, c := range groups {
		exprs = append(exprs, c.String())
	}
	for range 1 + g.pick(3) {
		exprs = append(exprs, g.agg(r.cols))
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s GROUP BY %s", aliased(exprs), r.from, g.where(r.cols), positions(len(groups)))}
	g.orderLimit(&q, len(exprs))
	return q
}

// windowOverAggregate: window functions over a GROUP BY's result, ordered
// by an aggregate and the group keys (unique per group).
func (g *Generator) windowOverAggregate() Query {
	r := g.anyRel()
	groups := g.groupCols(r.cols, 2)
	var keys []string
	for _, c := range groups {
		keys = append(keys, c.String())
	}
	a := g.simpleAgg(r.cols)
	exprs := append(append([]string{}, keys...), a)
	order := a + pickOf(g, []string{"", " DESC"}) + ", " + strings.Join(keys, ", ")
	part := ""
	if len(keys) > 1 {
		part = "PARTITION BY " + keys[0] + " "
	}
	switch g.pick(4) {
	case 0:
		exprs = append(exprs, fmt.Sprintf("rank() OVER (%sORDER BY %s)", part, a))
	case 1:
		exprs = append(exprs, fmt.Sprintf("row_number() OVER (%sORDER BY %s)", part, order))
	case 2:
		exprs = append(exprs, fmt.Sprintf("sum(%s) OVER (%sORDER BY %s ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)", a, part, order))
	default:
		exprs = append(exprs, fmt.Sprintf("lag(%s) OVER (%sORDER BY %s)", a, part, order))
	}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s GROUP BY %s", aliased(exprs), r.from, g.where(r.cols), positions(len(keys)))}
	g.orderLimit(&q, len(exprs))
	return q
}

// simpleAgg is an aggregate whose value is exact (no doubles), fit to
// order by.
func (g *Generator) simpleAgg(cols []qcol) string {
	nums := colsOf(cols, numeric)
	switch g.pick(4) {
	case 0:
		return "count(*)"
	case 1:
		return fmt.Sprintf("count(%s)", pickOf(g, cols))
	case 2:
		return fmt.Sprintf("max(%s)", pickOf(g, nums))
	default:
		return fmt.Sprintf("sum(%s)", pickOf(g, nums))
	}
}

// topPerGroup: filter on a window function's result in a derived table.
func (g *Generator) topPerGroup() Query {
	t := g.fact()
	r := base(t, "t1")
	p := g.groupCols(r.cols, 1)[0]
	o := pickOf(g, colsOf(r.cols, numeric))
	fn := pickOf(g, []string{"row_number()", "rank()", "dense_rank()"})
	order := o.String() + pickOf(g, []string{"", " DESC", " DESC NULLS LAST"})
	if fn == "row_number()" {
		order += ", " + strings.Join(r.key, ", ")
	}
	inner := fmt.Sprintf("SELECT %s, %s AS p, %s AS o, %s OVER (PARTITION BY %s ORDER BY %s) AS rn FROM %s%s",
		strings.Join(r.key, ", "), p, o, fn, p, order, r.from, g.where(r.cols))
	q := Query{SQL: fmt.Sprintf("SELECT * FROM (%s) s WHERE rn <= %d", inner, 1+g.pick(3))}
	if g.chance(0.4) {
		q.SQL = fmt.Sprintf("SELECT p, count(*) AS n, sum(o) AS so FROM (%s) s WHERE rn %s %d GROUP BY p", inner, pickOf(g, []string{"<=", "=", ">"}), 1+g.pick(3))
	}
	return q
}

// cte: a WITH query referenced twice (a shared subplan), self-joined or
// compared with its own aggregate.
func (g *Generator) cte() Query {
	r := g.anyRel()
	groups := g.groupCols(r.cols, 1)
	k := groups[0].String()
	a := g.simpleAgg(r.cols)
	with := fmt.Sprintf("WITH w AS (SELECT %s AS k, %s AS v FROM %s%s GROUP BY 1)", k, a, r.from, g.where(r.cols))
	var q Query
	switch g.pick(3) {
	case 0:
		q.SQL = with + " SELECT a.k, a.v, b.v AS v2 FROM w a LEFT JOIN w b ON a.k = b.k AND a.v >= b.v"
	case 1:
		q.SQL = with + " SELECT k, v FROM w WHERE v > (SELECT avg(v) FROM w)"
	default:
		q.SQL = with + " SELECT k, v FROM w WHERE k IN (SELECT k FROM w WHERE v " + g.cmp() + " " + fmt.Sprint(g.pick(50)) + ") OR v IS NULL"
	}
	return q
}

// threeWayJoin: a fact table with two of its dimensions, inner and outer.
func (g *Generator) threeWayJoin() Query {
	f := g.fact()
	var es []Edge
	for _, e := range g.s.Edges {
		if e.From == f.Name && !g.s.TableNamed(e.To).Fact {
			es = append(es, e)
		}
	}
	e1 := pickOf(g, es)
	e2 := pickOf(g, es)
	for e2 == e1 && len(es) > 1 {
		e2 = pickOf(g, es)
	}
	a, b, c := base(f, "t1"), base(g.s.TableNamed(e1.To), "t2"), base(g.s.TableNamed(e2.To), "t3")
	j := func() string { return pickOf(g, []string{"JOIN", "LEFT JOIN", "LEFT JOIN", "FULL JOIN"}) }
	r := rel{from: fmt.Sprintf("%s %s %s ON t1.%s = t2.%s %s %s ON t1.%s = t3.%s", a.from, j(), b.from, e1.FromCol, e1.ToCol, j(), c.from, e2.FromCol, e2.ToCol)}
	r.cols = append(append(append(r.cols, a.cols...), b.cols...), c.cols...)
	r.key = append(append(append(r.key, a.key...), b.key...), c.key...)
	if g.chance(0.7) {
		return g.aggregateOver(r)
	}
	exprs := append([]string{}, r.key...)
	exprs = append(exprs, g.scalar(r.cols), g.scalar(r.cols))
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s", aliased(exprs), r.from, g.where(r.cols))}
	g.orderLimit(&q, len(exprs))
	return q
}

// nestedSubquery: a subquery inside a subquery, each correlated with the
// query around it.
func (g *Generator) nestedSubquery() Query {
	c := g.correlation()
	// The innermost reads the lookup dimension (alias t3: TPC-DS's item,
	// TPC-H's part), joined on the middle table's column referencing it
	// when it has one.
	look := g.s.Lookup
	lookupKey := func(r rel) (string, bool) {
		for _, q := range r.cols {
			if strings.HasSuffix(q.col.Name, look.RefSuffix) {
				return q.String(), true
			}
		}
		return "", false
	}
	// Sluice decorrelates one level at a time: the innermost refers to
	// the middle query only.
	var ref string
	if k, ok := lookupKey(c.inner); ok {
		ref = k
	} else {
		ref = pickOf(g, colsOf(c.inner.cols, numeric)).String()
	}
	innermost := fmt.Sprintf("SELECT 1 FROM %s t3 WHERE t3.%s = %s AND %s", look.Table, look.Key, ref, g.atom(base(g.s.TableNamed(look.Table), "t3").cols))
	mid := fmt.Sprintf("SELECT 1 FROM %s WHERE %s AND %sEXISTS (%s)", c.inner.from, c.on, pickOf(g, []string{"", "NOT "}), innermost)
	cond := pickOf(g, []string{"EXISTS (@)", "NOT EXISTS (@)", "(EXISTS (@) OR " + g.atom(c.outer.cols) + ")"})
	exprs := append([]string{}, c.outer.key...)
	exprs = append(exprs, g.scalar(c.outer.cols))
	return Query{SQL: fmt.Sprintf("SELECT %s FROM %s WHERE %s", aliased(exprs), c.outer.from, strings.Replace(cond, "@", mid, 1))}
}

// subqueryInAggregate: subqueries inside aggregate arguments, CASE and
// HAVING.
func (g *Generator) subqueryInAggregate() Query {
	c := g.correlation()
	k := g.groupCols(c.outer.cols, 1)[0]
	exprs := []string{k.String(),
		fmt.Sprintf("sum(CASE WHEN %s THEN 1 ELSE 0 END)", g.subPred(c)),
		"count(*)"}
	q := Query{SQL: fmt.Sprintf("SELECT %s FROM %s%s GROUP BY 1", aliased(exprs), c.outer.from, g.where(c.outer.cols))}
	if g.chance(0.4) {
		inums := colsOf(c.inner.cols, numeric)
		q.SQL += fmt.Sprintf(" HAVING count(*) > (SELECT count(*) FROM %s WHERE %s) / 1000", c.inner.from, g.atom(c.inner.cols))
		_ = inums
	}
	g.orderLimit(&q, len(exprs))
	return q
}
