package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"sluice/catalog"
)

// fakeTable is a catalog.Table with a schema and a row count, enough for
// building and estimating plans without data.
type fakeTable struct {
	schema *arrow.Schema
	rows   int64
}

func (t *fakeTable) Schema() *arrow.Schema { return t.schema }
func (t *fakeTable) Statistics() catalog.Statistics {
	return catalog.Statistics{NumRows: t.rows, TotalBytes: -1}
}

var money = Decimal(15, 2)

// tpchTables holds the TPC-H columns the tests use, with SF1 row counts.
var tpchTables = map[string]*fakeTable{
	"region": tbl(5, "r_regionkey", Int64, "r_name", Utf8),
	"nation": tbl(25, "n_nationkey", Int64, "n_name", Utf8, "n_regionkey", Int64),
	"supplier": tbl(10000, "s_suppkey", Int64, "s_name", Utf8, "s_address", Utf8, "s_nationkey", Int64,
		"s_phone", Utf8, "s_acctbal", money, "s_comment", Utf8),
	"customer": tbl(150000, "c_custkey", Int64, "c_name", Utf8, "c_nationkey", Int64, "c_phone", Utf8,
		"c_acctbal", money, "c_mktsegment", Utf8),
	"orders": tbl(1500000, "o_orderkey", Int64, "o_custkey", Int64, "o_orderstatus", Utf8,
		"o_totalprice", money, "o_orderdate", Date32, "o_orderpriority", Utf8),
	"lineitem": tbl(6000000, "l_orderkey", Int64, "l_partkey", Int64, "l_suppkey", Int64,
		"l_quantity", money, "l_extendedprice", money, "l_discount", money, "l_shipdate", Date32,
		"l_commitdate", Date32, "l_receiptdate", Date32),
	"part": tbl(200000, "p_partkey", Int64, "p_name", Utf8, "p_mfgr", Utf8, "p_brand", Utf8,
		"p_type", Utf8, "p_size", Int32, "p_container", Utf8),
	"partsupp": tbl(800000, "ps_partkey", Int64, "ps_suppkey", Int64, "ps_availqty", Int32,
		"ps_supplycost", money),
	"t": tbl(-1, "a", Int64, "b", Int64, "c", Utf8),
	"u": tbl(-1, "x", Int64, "y", Int64, "z", Utf8),
}

func tbl(rows int64, nameTypes ...any) *fakeTable {
	var fields []arrow.Field
	for i := 0; i < len(nameTypes); i += 2 {
		fields = append(fields, arrow.Field{Name: nameTypes[i].(string), Type: nameTypes[i+1].(arrow.DataType), Nullable: true})
	}
	return &fakeTable{schema: arrow.NewSchema(fields, nil), rows: rows}
}

// tb builds test plans the way the binder would: fresh column IDs for every
// scan and computed column.
type tb struct{ ids *IDGen }

func newTB() *tb { return &tb{ids: &IDGen{}} }

// scan reads every column of a TPC-H table; alias qualifies the names.
func (b *tb) scan(table, alias string) *Scan {
	t := tpchTables[table]
	if alias == "" {
		alias = table
	}
	s := &Scan{TableName: table, Table: t}
	for i, f := range t.schema.Fields() {
		s.Projection = append(s.Projection, i)
		s.Cols = append(s.Cols, Column{ID: b.ids.Next(), Name: f.Name, Table: alias, Type: f.Type, Nullable: true})
	}
	return s
}

// col finds a column of n by "name" or "qualifier.name"; it panics when the
// name is missing or ambiguous (a test bug).
func col(n Node, name string) *ColRef {
	var found []Column
	for _, c := range n.Schema() {
		if c.Name == name || c.Table+"."+c.Name == name {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		panic(fmt.Sprintf("column %q: %d matches in %v", name, len(found), n.Schema()))
	}
	return found[0].Ref()
}

func bin(op BinaryOp, l, r Expr) Expr {
	t := Bool
	if !op.IsComparison() && op != OpAnd && op != OpOr {
		var err error
		t, err = ArithmeticType(op, l.Type(), r.Type())
		if err != nil {
			panic(err)
		}
	}
	return &Binary{Op: op, L: l, R: r, Typ: t}
}

func eq(l, r Expr) Expr { return bin(OpEq, l, r) }
func ne(l, r Expr) Expr { return bin(OpNotEq, l, r) }
func lt(l, r Expr) Expr { return bin(OpLt, l, r) }
func gt(l, r Expr) Expr { return bin(OpGt, l, r) }
func ge(l, r Expr) Expr { return bin(OpGtEq, l, r) }
func and(es ...Expr) Expr {
	return Conjunction(es)
}
func or(l, r Expr) Expr { return bin(OpOr, l, r) }

func i64(v int64) Expr   { return &Literal{Typ: Int64, Val: v} }
func i32(v int32) Expr   { return &Literal{Typ: Int32, Val: v} }
func str(s string) Expr  { return &Literal{Typ: Utf8, Val: s} }
func boolean(v any) Expr { return &Literal{Typ: Bool, Val: v} }
func date(s string) Expr {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return &Literal{Typ: Date32, Val: int32(t.Unix() / 86400)}
}
func months(n int32) Expr {
	return &Literal{Typ: Interval, Val: arrow.MonthDayNanoInterval{Months: n}}
}
func dec(s string, p, sc int32) Expr {
	n, err := decimal128.FromString(s, p, sc)
	if err != nil {
		panic(err)
	}
	return &Literal{Typ: Decimal(p, sc), Val: n}
}
func cast(e Expr, t arrow.DataType) Expr { return &Cast{X: e, To: t} }
func like(x Expr, pat string) Expr       { return &Like{X: x, Pattern: str(pat)} }
func notLike(x Expr, pat string) Expr {
	return &Like{X: x, Pattern: str(pat), Negated: true}
}
func substr2(x Expr) Expr {
	return &Func{Name: "substring", Args: []Expr{x, i64(1), i64(2)}, Typ: Utf8}
}
func inList(x Expr, items ...Expr) Expr { return &InList{X: x, List: items} }

// cross joins inputs left-deep with no condition, as comma-FROM does.
func cross(ns ...Node) Node {
	out := ns[0]
	for _, n := range ns[1:] {
		out = &Join{Kind: JoinInner, Left: out, Right: n}
	}
	return out
}

func filter(n Node, preds ...Expr) Node { return &Filter{Input: n, Pred: Conjunction(preds)} }

// project computes exprs; a ColRef keeps its ID, other expressions get a
// fresh column named by the matching entry of names (or their text).
func (b *tb) project(n Node, names []string, exprs ...Expr) *Project {
	p := &Project{Input: n, Exprs: exprs}
	in := n.Schema()
	for i, e := range exprs {
		if c, ok := e.(*ColRef); ok && (names == nil || names[i] == "") {
			p.Cols = append(p.Cols, in[in.IndexOf(c.ID)])
			continue
		}
		name := e.String()
		if names != nil && names[i] != "" {
			name = names[i]
		}
		p.Cols = append(p.Cols, Column{ID: b.ids.Next(), Name: name, Type: e.Type(), Nullable: true})
	}
	return p
}

// star projects every column of n, as SELECT * does.
func (b *tb) star(n Node) *Project {
	var es []Expr
	for _, c := range n.Schema() {
		es = append(es, c.Ref())
	}
	return b.project(n, nil, es...)
}

func (b *tb) agg(n Node, groupBy []Expr, aggs ...*AggCall) *Aggregate {
	a := &Aggregate{Input: n, GroupBy: groupBy, Aggs: aggs}
	for _, g := range groupBy {
		name := g.String()
		if c, ok := g.(*ColRef); ok {
			name = c.Name[strings.LastIndex(c.Name, ".")+1:]
		}
		a.Cols = append(a.Cols, Column{ID: b.ids.Next(), Name: name, Type: g.Type(), Nullable: true})
	}
	for _, x := range aggs {
		a.Cols = append(a.Cols, Column{ID: b.ids.Next(), Name: x.String(), Type: x.Typ, Nullable: true})
	}
	return a
}

func countStar() *AggCall { return &AggCall{Func: AggCountStar, Typ: Int64} }
func sum(x Expr) *AggCall { return &AggCall{Func: AggSum, Arg: x, Typ: SumType(x.Type())} }
func avg(x Expr) *AggCall { return &AggCall{Func: AggAvg, Arg: x, Typ: AvgType(x.Type())} }
func minOf(x Expr) *AggCall {
	return &AggCall{Func: AggMin, Arg: x, Typ: x.Type()}
}
func countDistinct(x Expr) *AggCall {
	return &AggCall{Func: AggCount, Arg: x, Distinct: true, Typ: Int64}
}

func exists(q Node) Expr { return &Subquery{Kind: SubqueryExists, Plan: q, Typ: Bool} }
func notExists(q Node) Expr {
	return &Subquery{Kind: SubqueryExists, Plan: q, Negated: true, Typ: Bool}
}
func in(x Expr, q Node) Expr {
	return &Subquery{Kind: SubqueryIn, Plan: q, X: x, Typ: Bool}
}
func notIn(x Expr, q Node) Expr {
	return &Subquery{Kind: SubqueryIn, Plan: q, X: x, Negated: true, Typ: Bool}
}
func scalar(q Node) Expr {
	return &Subquery{Kind: SubqueryScalar, Plan: q, Typ: q.Schema()[0].Type}
}

func sortBy(n Node, keys ...Expr) Node {
	s := &Sort{Input: n}
	for _, k := range keys {
		s.Keys = append(s.Keys, SortKey{Expr: k})
	}
	return s
}

// checkPlan verifies that every node only refers to columns its inputs
// produce and that scans are self-consistent. Subquery plans are skipped
// (they may be correlated).
func checkPlan(n Node) error {
	avail := ColumnSet{}
	for _, c := range n.Children() {
		if err := checkPlan(c); err != nil {
			return err
		}
		addAll(avail, c.Schema().IDs())
	}
	if s, ok := n.(*Scan); ok {
		avail = s.Cols.IDs()
		if len(s.Projection) != len(s.Cols) {
			return fmt.Errorf("%s: %d projections for %d columns", s, len(s.Projection), len(s.Cols))
		}
		for i, p := range s.Projection {
			if s.Table.Schema().Field(p).Name != s.Cols[i].Name {
				return fmt.Errorf("%s: column %d is %s, table field is %s", s, i, s.Cols[i].Name, s.Table.Schema().Field(p).Name)
			}
		}
	}
	for _, e := range Exprs(n) {
		for id := range ColumnsOf(e) {
			if !avail.Has(id) {
				return fmt.Errorf("%s refers to column #%d which its inputs do not produce", n, id)
			}
		}
	}
	seen := ColumnSet{}
	for _, c := range n.Schema() {
		if seen.Has(c.ID) {
			return fmt.Errorf("%s outputs column #%d twice", n, c.ID)
		}
		seen[c.ID] = struct{}{}
	}
	return nil
}

// rollup builds what the binder builds for GROUP BY ROLLUP(keys): an Expand
// with the sets (k1..kn), (k1..kn-1), ..., () under an Aggregate grouping
// by its key columns and the grouping id, with the empty set's grand total.
func (b *tb) rollup(n Node, keys []Expr, aggs ...*AggCall) *Aggregate {
	e := &Expand{Input: n, Keys: keys}
	for k := len(keys); k >= 0; k-- {
		set := []int{}
		for i := 0; i < k; i++ {
			set = append(set, i)
		}
		e.Sets = append(e.Sets, set)
	}
	for _, k := range keys {
		name := k.String()
		if c, ok := k.(*ColRef); ok {
			name = c.Name[strings.LastIndex(c.Name, ".")+1:]
		}
		e.Cols = append(e.Cols, Column{ID: b.ids.Next(), Name: name, Type: k.Type(), Nullable: true})
	}
	e.Cols = append(e.Cols, Column{ID: b.ids.Next(), Name: "grouping_id", Type: Int64})
	a := &Aggregate{Input: e, Aggs: aggs, GrandTotals: []int64{int64(len(keys))}}
	for _, c := range e.Cols {
		a.GroupBy = append(a.GroupBy, c.Ref())
		a.Cols = append(a.Cols, c)
	}
	for _, x := range aggs {
		a.Cols = append(a.Cols, Column{ID: b.ids.Next(), Name: x.String(), Type: x.Typ, Nullable: true})
	}
	return a
}
