package plan

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"sluice/catalog"
)

// ndvTable is a fakeTable that also knows its columns' distinct counts
// (-1: unknown), which EagerAggregate needs to estimate groups.
type ndvTable struct {
	*fakeTable
	ndv []int64
}

func (t *ndvTable) DistinctCount(col int) int64 { return t.ndv[col] }

// IntRange: a column of known distinct count holds 1 to that count.
func (t *ndvTable) IntRange(col int) (int64, int64, bool) {
	return 1, t.ndv[col], t.ndv[col] > 0
}

var _ catalog.ColumnStatistics = (*ndvTable)(nil)

// eagerTables: a fact table of a million rows over a thousand keys and
// ten categories, a dimension table keyed like it, and a fact table whose
// keys are all distinct.
var eagerTables = map[string]*ndvTable{
	"fact":   {tbl(1000000, "f_key", Int64, "f_cat", Int64, "f_amount", money, "f_qty", Int64), []int64{1000, 10, -1, 50}},
	"dim":    {tbl(1000, "d_key", Int64, "d_name", Utf8, "d_region", Int64), []int64{1000, -1, 5}},
	"unique": {tbl(1000000, "u_key", Int64, "u_amount", money), []int64{1000000, -1}},
}

// scanStats scans every column of one of eagerTables.
func (b *tb) scanStats(table string) *Scan {
	t := eagerTables[table]
	s := &Scan{TableName: table, Table: t}
	for i, f := range t.schema.Fields() {
		s.Projection = append(s.Projection, i)
		s.Cols = append(s.Cols, Column{ID: b.ids.Next(), Name: f.Name, Table: table, Type: f.Type, Nullable: true})
	}
	return s
}

func maxOf(x Expr) *AggCall { return &AggCall{Func: AggMax, Arg: x, Typ: x.Type()} }
func countOf(x Expr) *AggCall {
	return &AggCall{Func: AggCount, Arg: x, Typ: Int64}
}

func TestEagerAggregateGolden(t *testing.T) {
	// factDim joins fact and dim on their keys, as comma joins leave it
	// after pushdown.
	factDim := func(b *tb) (Node, *Scan, *Scan) {
		f, d := b.scanStats("fact"), b.scanStats("dim")
		return &Join{Kind: JoinInner, Left: f, Right: d, Cond: eq(col(f, "f_key"), col(d, "d_key"))}, f, d
	}
	runGolden(t, "eager.txt", []goldenCase{
		{name: "every_function_by_dimension_columns", apply: EagerAggregate, build: func(b *tb) Node {
			j, f, d := factDim(b)
			return b.agg(j, []Expr{col(d, "d_name"), col(d, "d_region")},
				sum(col(f, "f_amount")), countOf(col(f, "f_amount")), countStar(), minOf(col(f, "f_qty")), maxOf(col(f, "f_qty")))
		}},
		{name: "not_over_grouping_sets", apply: EagerAggregate, build: func(b *tb) Node {
			// ROLLUP keys are the Expand's columns: nothing to push below.
			j, f, d := factDim(b)
			return b.rollup(j, []Expr{col(d, "d_name")}, sum(col(f, "f_amount")))
		}},
		{name: "fact_column_in_the_group_keys", apply: EagerAggregate, build: func(b *tb) Node {
			// f_cat joins the S group keys beside f_key.
			j, f, d := factDim(b)
			return b.agg(j, []Expr{col(d, "d_name"), col(f, "f_cat")}, sum(bin(OpMul, col(f, "f_amount"), col(f, "f_qty"))))
		}},
		{name: "filtered_facts_and_two_dimensions", apply: EagerAggregate, build: func(b *tb) Node {
			// The q10 shape: S is the filtered fact scan, C two whole tables.
			f, d, u := b.scanStats("fact"), b.scanStats("dim"), b.scanStats("unique")
			f.Filters = []Expr{gt(col(f, "f_qty"), i64(10))}
			j := &Join{Kind: JoinInner, Left: &Join{Kind: JoinInner, Left: f, Right: d}, Right: u,
				Cond: and(eq(col(f, "f_key"), col(d, "d_key")), eq(col(d, "d_region"), col(u, "u_key")))}
			return b.agg(j, []Expr{col(d, "d_name"), col(u, "u_amount")}, sum(col(f, "f_amount")))
		}},
		{name: "outer_join_in_s_keeps_its_condition", apply: EagerAggregate, build: func(b *tb) Node {
			// S is a LEFT JOIN, one leaf of the inner join with dim: its
			// ON condition must stay (it was replaced by S's empty list
			// of conditions, making it a cross join; found by the
			// differential test).
			f, d, u := b.scanStats("fact"), b.scanStats("dim"), b.scanStats("unique")
			s := &Join{Kind: JoinLeft, Left: f, Right: u, Cond: eq(col(f, "f_cat"), col(u, "u_key"))}
			j := &Join{Kind: JoinInner, Left: s, Right: d, Cond: eq(col(f, "f_key"), col(d, "d_key"))}
			return b.agg(j, []Expr{col(d, "d_name")}, sum(col(f, "f_amount")))
		}},
		{name: "filtered_dimension_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			// A filtered dim may drop most facts: it is joined first.
			j, f, d := factDim(b)
			d.Filters = []Expr{eq(col(d, "d_region"), i64(3))}
			return b.agg(j, []Expr{col(d, "d_name")}, sum(col(f, "f_amount")))
		}},
		{name: "avg_as_sum_and_count", apply: EagerAggregate, build: func(b *tb) Node {
			j, f, d := factDim(b)
			return b.agg(j, []Expr{col(d, "d_name")}, avg(col(f, "f_amount")))
		}},
		{name: "distinct_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			j, f, d := factDim(b)
			return b.agg(j, []Expr{col(d, "d_name")}, countDistinct(col(f, "f_qty")))
		}},
		{name: "global_aggregate_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			// Grouped first, a count over no rows would come out NULL.
			j, f, _ := factDim(b)
			return b.agg(j, nil, countOf(col(f, "f_amount")))
		}},
		{name: "inequality_link_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			f, d := b.scanStats("fact"), b.scanStats("dim")
			j := &Join{Kind: JoinInner, Left: f, Right: d, Cond: lt(col(f, "f_key"), col(d, "d_key"))}
			return b.agg(j, []Expr{col(d, "d_name")}, sum(col(f, "f_amount")))
		}},
		{name: "argument_reads_the_dimension_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			j, f, d := factDim(b)
			return b.agg(j, []Expr{col(d, "d_name")}, sum(bin(OpMul, col(f, "f_amount"), col(d, "d_region"))))
		}},
		{name: "keys_that_do_not_shrink_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			// A million distinct keys in a million rows: grouping first is
			// an extra pass for nothing.
			u, d := b.scanStats("unique"), b.scanStats("dim")
			j := &Join{Kind: JoinInner, Left: u, Right: d, Cond: eq(col(u, "u_key"), col(d, "d_key"))}
			return b.agg(j, []Expr{col(d, "d_name")}, sum(col(u, "u_amount")))
		}},
		{name: "unknown_distinct_count_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			j, f, d := factDim(b)
			return b.agg(j, []Expr{col(d, "d_name"), col(f, "f_amount")}, countStar())
		}},
		{name: "pivot_reads_the_dimension_in_its_conditions", apply: EagerAggregate, build: func(b *tb) Node {
			// The q2 shape: one fact column pivoted by a dimension column;
			// the sums share one partial sum, MIN and MAX their own.
			j, f, d := factDim(b)
			amount := col(f, "f_amount")
			return b.agg(j, []Expr{col(d, "d_region")},
				sum(pivot(eq(col(d, "d_name"), str("a")), amount)), sum(pivot(eq(col(d, "d_name"), str("b")), amount)),
				minOf(pivot(eq(col(d, "d_name"), str("a")), col(f, "f_qty"))), maxOf(pivot(gt(col(f, "f_cat"), i64(3)), amount)))
		}},
		{name: "pivot_over_a_union_of_facts", apply: EagerAggregate, build: func(b *tb) Node {
			// q2's web and catalog sales: the union's keys are estimated
			// as the sum of each branch's.
			f1, f2, d := b.scanStats("fact"), b.scanStats("fact"), b.scanStats("dim")
			u := &Union{Inputs: []Node{
				b.project(f1, []string{"k", "amount"}, col(f1, "f_key"), col(f1, "f_amount")),
				b.project(f2, []string{"k", "amount"}, col(f2, "f_key"), col(f2, "f_amount")),
			}, Cols: Schema{{ID: b.ids.Next(), Name: "k", Type: Int64}, {ID: b.ids.Next(), Name: "amount", Type: money}}}
			j := &Join{Kind: JoinInner, Left: u, Right: d, Cond: eq(col(u, "k"), col(d, "d_key"))}
			return b.agg(j, []Expr{col(d, "d_region")}, sum(pivot(eq(col(d, "d_name"), str("a")), col(u, "amount"))))
		}},
		{name: "pivot_with_else_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			// ELSE 0 adds a zero per row, not per group.
			j, f, d := factDim(b)
			c := &Case{Whens: []When{{Cond: eq(col(d, "d_name"), str("a")), Then: col(f, "f_qty")}}, Else: i64(0), Typ: Int64}
			return b.agg(j, []Expr{col(d, "d_region")}, sum(c))
		}},
		{name: "count_of_a_pivot_untouched", apply: EagerAggregate, build: func(b *tb) Node {
			// Its groups' counts summed would be NULL, not 0, where the
			// condition never holds.
			j, f, d := factDim(b)
			return b.agg(j, []Expr{col(d, "d_region")}, countOf(pivot(eq(col(d, "d_name"), str("a")), col(f, "f_amount"))))
		}},
	})
}

// pivot is CASE WHEN cond THEN x END.
func pivot(cond, x Expr) Expr {
	return &Case{Whens: []When{{Cond: cond, Then: x}}, Typ: x.Type()}
}

// TestScanSelectivityDisjunction: an OR of restrictions of one column
// keeps the values its terms keep together (a shared CTE's readers' years
// pushed into its scan), and an OR over different columns sums its terms.
func TestScanSelectivityDisjunction(t *testing.T) {
	b := newTB()
	s := b.scanStats("dim")
	region, key := col(s, "d_region"), col(s, "d_key")
	eqR := func(v int64) Expr { return eq(region, i64(v)) }
	tests := []struct {
		name      string
		filter    Expr
		sel, kept float64 // kept: the share of d_region's values (0: none recorded)
	}{
		{"one value", eqR(1), 0.2, 0.2},
		{"two values", or(eqR(1), eqR(2)), 0.4, 0.4},
		{"three, nested, each with its own restriction of the same column",
			or(and(eqR(1), inList(region, i64(1), i64(2))), or(eqR(2), eqR(3))), 0.6, 0.6},
		{"different columns", or(eqR(1), eq(key, i64(7))), 0.201, 0},
		{"restrictions of one column keep the fewest values", and(eqR(1), inList(region, i64(1), i64(2))), 0.2, 0.2},
	}
	for _, tt := range tests {
		s.Filters = []Expr{tt.filter}
		sel, kept := scanSelectivity(s)
		if math.Abs(sel-tt.sel) > 1e-9 || math.Abs(kept[region.ID]-tt.kept) > 1e-9 {
			t.Errorf("%s: selectivity %v, d_region kept %v; want %v, %v", tt.name, sel, kept[region.ID], tt.sel, tt.kept)
		}
	}
}

// decimalTable is a fakeTable whose first column (a decimal with 2
// places) holds 0.00 to 200.00, its footers' unscaled range.
type decimalTable struct{ *fakeTable }

func (t *decimalTable) DistinctCount(int) int64 { return -1 }
func (t *decimalTable) IntRange(col int) (int64, int64, bool) {
	return 0, 20000, col == 0
}

// TestScanSelectivityDecimalRange: bounds on a decimal column are measured
// against its range in unscaled units, as integer ones are; equality with
// a decimal and a bound of another scale keep the fixed guesses.
func TestScanSelectivityDecimalRange(t *testing.T) {
	b := newTB()
	table := &decimalTable{tbl(1000, "p", Decimal(7, 2), "n", Int64)}
	s := &Scan{TableName: "t", Table: table, Projection: []int{0, 1}}
	for _, f := range table.schema.Fields() {
		s.Cols = append(s.Cols, Column{ID: b.ids.Next(), Name: f.Name, Table: "t", Type: f.Type, Nullable: true})
	}
	p := col(s, "p")
	dec := func(unscaled int64, scale int32) Expr {
		return &Literal{Typ: Decimal(7, scale), Val: decimal128.FromI64(unscaled)}
	}
	cmp := func(op BinaryOp, l, r Expr) Expr { return &Binary{Op: op, L: l, R: r, Typ: Bool} }
	tests := []struct {
		name   string
		filter Expr
		sel    float64
	}{
		{"between 50.00 and 200.00", and(cmp(OpGtEq, p, dec(5000, 2)), cmp(OpLtEq, p, dec(20000, 2))), 15001.0 / 20001},
		{"below 50.00, the constant on the left", cmp(OpGt, dec(5000, 2), p), 5000.0 / 20001},
		{"equal to 50.00: a guess", cmp(OpEq, p, dec(5000, 2)), selEq},
		{"another scale: a guess", cmp(OpGtEq, p, dec(50000, 3)), selRange},
	}
	for _, tt := range tests {
		s.Filters = []Expr{tt.filter}
		if sel, _ := scanSelectivity(s); math.Abs(sel-tt.sel) > 1e-9 {
			t.Errorf("%s: selectivity %v, want %v", tt.name, sel, tt.sel)
		}
	}
}
