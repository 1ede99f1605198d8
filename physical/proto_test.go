package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/plan"
	"sluice/rpc"
	"sluice/sql"
)

// shipPlan encodes op, sends it through its binary encoding and decodes it
// with a fresh table cache, as an executor would.
func shipPlan(t *testing.T, op Operator, ext ExtensionCodec) Operator {
	t.Helper()
	got, err := shipPlanErr(op, ext, NewTableCache())
	if err != nil {
		t.Fatal(err)
	}
	if g, w := Format(got), Format(op); g != w {
		t.Fatalf("decoded plan:\n%s\nwant:\n%s", g, w)
	}
	checkSameScans(t, op, got)
	return got
}

func shipPlanErr(op Operator, ext ExtensionCodec, tables TableResolver) (Operator, error) {
	p, err := EncodePlan(op, ext)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(p)
	if err != nil {
		return nil, err
	}
	var q rpc.PhysicalPlan
	if err := proto.Unmarshal(b, &q); err != nil {
		return nil, err
	}
	return DecodePlan(&q, ext, tables)
}

// checkSameScans checks that the decoded scans split their tables into the
// same work units per partition as the originals.
func checkSameScans(t *testing.T, a, b Operator) {
	t.Helper()
	switch a := a.(type) {
	case *ParquetScan:
		if !reflect.DeepEqual(a.parts, b.(*ParquetScan).parts) {
			t.Fatalf("parquet scan %s: decoded work units %v, want %v", a.name, b.(*ParquetScan).parts, a.parts)
		}
	case *CSVScan:
		if !reflect.DeepEqual(a.parts, b.(*CSVScan).parts) {
			t.Fatalf("csv scan %s: decoded work units %v, want %v", a.name, b.(*CSVScan).parts, a.parts)
		}
	}
	for i, c := range a.Children() {
		checkSameScans(t, c, b.Children()[i])
	}
}

// runPartitions executes every partition of op concurrently (exchanges need
// all their outputs drained together) and renders each partition's rows in
// order.
func runPartitions(t *testing.T, op Operator, tc *TaskContext) ([][]string, error) {
	t.Helper()
	ctx := context.Background()
	n := op.OutputPartitioning().Count
	out := make([][]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := range n {
		wg.Go(func() {
			s, err := op.Execute(ctx, p, tc)
			if err != nil {
				errs[p] = err
				return
			}
			defer s.Close()
			for {
				b, err := s.Next(ctx)
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					errs[p] = err
					return
				}
				for r := range int(b.NumRows()) {
					vs := make([]string, b.NumCols())
					for c := range vs {
						vs[c] = jaFormat(b.Column(c), r)
					}
					out[p] = append(out[p], strings.Join(vs, "|"))
				}
				b.Release()
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// sameResults runs both plans with checked allocators and compares their
// rows: partition by partition in order when exact, else as one multiset.
// It returns the number of rows, so callers can check the test saw data.
func sameResults(t *testing.T, want, got Operator, exact bool) int {
	t.Helper()
	run := func(op Operator) [][]string {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		rows, err := runPartitions(t, op, jaTC(mem, 64, 0))
		if err != nil {
			t.Fatalf("%s: %v", Format(op), err)
		}
		return rows
	}
	w, g := run(want), run(got)
	if !exact {
		w, g = [][]string{slices.Sorted(slices.Values(slices.Concat(w...)))}, [][]string{slices.Sorted(slices.Values(slices.Concat(g...)))}
	}
	if !reflect.DeepEqual(w, g) {
		t.Fatalf("decoded plan returns\n%v\nwant\n%v", g, w)
	}
	return len(slices.Concat(w...))
}

// Shorthands for hand-built expressions over testParquetSchema.
var (
	tID    = &expr.Column{Index: 0, Name: "id", Type: plan.Int64}
	tName  = &expr.Column{Index: 1, Name: "name", Type: plan.Utf8}
	tPrice = &expr.Column{Index: 2, Name: "price", Type: plan.Decimal(12, 2)}
	tQty   = &expr.Column{Index: 3, Name: "qty", Type: plan.Int32}
)

func pLit(t arrow.DataType, v any) *expr.Literal {
	return &expr.Literal{Value: plan.Literal{Typ: t, Val: v}}
}

func pCmp(op plan.BinaryOp, l, r expr.Expr) expr.Expr {
	return &expr.Binary{Op: op, L: l, R: r, Type: plan.Bool}
}

func colAt(i int, c *expr.Column) *expr.Column {
	return &expr.Column{Index: i, Name: c.Name, Type: c.Type}
}

// protoTables opens the test tables: t (Parquet, 300 rows in 3 row groups
// over 2 files) and c (CSV, 120 rows in 3 files).
func protoTables(t *testing.T) (*catalog.ParquetTable, *catalog.CSVTable) {
	pq, err := catalog.OpenParquet(writeTestTable(t))
	if err != nil {
		t.Fatal(err)
	}
	csv, err := catalog.OpenCSV(writeCSVDir(t), catalog.CSVOptions{Header: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pq, csv
}

// operatorCases builds one plan per operator (and mode) of the package.
func operatorCases(t *testing.T) []struct {
	name  string
	op    Operator
	exact bool
} {
	pq, csv := protoTables(t)
	// scan reads id, name, price, qty (the t* columns above).
	scan := func(parts int) Operator { return NewParquetScan("t", pq, []int{0, 1, 2, 5}, nil, parts) }
	must := func(op Operator, err error) Operator {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	sumType, avgType := plan.SumType(tPrice.Type), plan.AvgType(tPrice.Type)
	mulType, err := plan.ArithmeticType(plan.OpMul, tPrice.Type, plan.Decimal(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	aggs := []AggregateExpr{
		{Func: plan.AggCountStar, Name: "n", Type: plan.Int64},
		{Func: plan.AggCount, Arg: tName, Name: "names", Type: plan.Int64},
		{Func: plan.AggSum, Arg: tPrice, Name: "total", Type: sumType},
		{Func: plan.AggAvg, Arg: tPrice, Name: "mean", Type: avgType},
		{Func: plan.AggMin, Arg: tName, Name: "first", Type: plan.Utf8},
		{Func: plan.AggMax, Arg: tID, Name: "last", Type: plan.Int64},
	}
	partial := must(NewHashAggregate(scan(3), AggPartial, []expr.Expr{tQty}, []string{"qty"}, aggs))
	partialKey := &expr.Column{Index: 0, Name: "qty", Type: plan.Int32}
	small := NewFilter(scan(2), pCmp(plan.OpLt, tID, pLit(plan.Int64, int64(40))))
	// A null-aware anti join outputs nothing once a build key is NULL.
	smallNamed := NewFilter(small, &expr.IsNull{X: tName, Negated: true})
	// Join filters see left columns then right columns: right qty is 4+3.
	rightQty := &expr.Column{Index: 7, Name: "qty", Type: plan.Int32}
	byID := func(op Operator, n int) Operator {
		return NewRepartition(op, Partitioning{Kind: PartHash, Count: n, Keys: []expr.Expr{tID}})
	}
	sortKeys := []SortKey{{Expr: tPrice, Desc: true, NullsFirst: true}, {Expr: tID}}
	valuesSchema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: plan.Int64, Nullable: true}, {Name: "b", Type: plan.Utf8, Nullable: true},
	}, nil)
	csvIDName := NewProjection(NewCSVScan("c", csv, []int{0, 1}, 2),
		[]expr.Expr{&expr.Column{Index: 0, Name: "id", Type: plan.Int64}, &expr.Column{Index: 1, Name: "name", Type: plan.Utf8}},
		[]string{"id", "name"})
	// ROLLUP(name, qty) over an Expand, with the two-argument and
	// statistical aggregates and a grand total.
	// One small input partition: float sums and string concatenations
	// then happen in one order, so both plans give identical values.
	expand := must(NewExpand(NewFilter(scan(1), pCmp(plan.OpLt, tID, pLit(plan.Int64, int64(30)))), []expr.Expr{tName, tQty}, []string{"kname", "kqty"}, [][]int{{0, 1}, {0}, {}}, "gid"))
	expandKeys := []expr.Expr{
		&expr.Column{Index: 4, Name: "kname", Type: plan.Utf8},
		&expr.Column{Index: 5, Name: "kqty", Type: plan.Int32},
		&expr.Column{Index: 6, Name: "gid", Type: plan.Int64},
	}
	priceF := &expr.Cast{X: tPrice, To: plan.Float64}
	idF := &expr.Cast{X: tID, To: plan.Float64}
	statAggs := []AggregateExpr{
		{Func: plan.AggStddevSamp, Arg: priceF, Name: "sd", Type: plan.Float64},
		{Func: plan.AggVarPop, Arg: priceF, Name: "vp", Type: plan.Float64},
		{Func: plan.AggCorr, Arg: priceF, Arg2: idF, Name: "r", Type: plan.Float64},
		{Func: plan.AggCovarSamp, Arg: priceF, Arg2: idF, Name: "cs", Type: plan.Float64},
		{Func: plan.AggStringAgg, Arg: tName, Arg2: pLit(plan.Utf8, ","), Name: "names", Type: plan.Utf8},
		{Func: plan.AggBoolAnd, Arg: pCmp(plan.OpGt, tQty, pLit(plan.Int32, int32(3))), Name: "all", Type: plan.Bool},
		{Func: plan.AggBoolOr, Arg: pCmp(plan.OpGt, tQty, pLit(plan.Int32, int32(3))), Name: "any", Type: plan.Bool},
		{Func: plan.AggStringAgg, Arg: tName, Arg2: pLit(plan.Utf8, ";"), Name: "ordered", Type: plan.Utf8,
			OrderBy: []SortKey{{Expr: tPrice, Desc: true, NullsFirst: true}, {Expr: tID}}},
		{Func: plan.AggPercentileCont, Arg: priceF, Arg2: pLit(plan.Float64, 0.3), Name: "p30", Type: plan.Float64,
			OrderBy: []SortKey{{Expr: priceF, Desc: true, NullsFirst: true}}},
		{Func: plan.AggPercentileDisc, Arg: tName, Arg2: pLit(plan.Float64, 0.5), Name: "median_name", Type: plan.Utf8,
			OrderBy: []SortKey{{Expr: tName}}},
	}
	withTotals := func(op Operator) Operator {
		return must(op.(*HashAggregate).WithGrandTotals([]int64{2}))
	}
	expandPartial := must(NewHashAggregate(expand, AggPartial, expandKeys, []string{"kname", "kqty", "gid"}, statAggs[:4]))
	expandFinal := withTotals(must(NewHashAggregate(
		NewRepartition(expandPartial, Partitioning{Kind: PartHash, Count: 3, Keys: []expr.Expr{
			&expr.Column{Index: 0, Name: "kname", Type: plan.Utf8},
			&expr.Column{Index: 1, Name: "kqty", Type: plan.Int32},
			&expr.Column{Index: 2, Name: "gid", Type: plan.Int64},
		}}), AggFinal, expandKeys, []string{"kname", "kqty", "gid"}, statAggs[:4])))
	idNameSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: plan.Int64, Nullable: true}, {Name: "name", Type: plan.Utf8, Nullable: true},
	}, nil)
	byIDName := func(op Operator) Operator {
		return NewRepartition(op, Partitioning{Kind: PartHash, Count: 3, Keys: []expr.Expr{
			&expr.Column{Index: 0, Name: "id", Type: plan.Int64}, &expr.Column{Index: 1, Name: "name", Type: plan.Utf8}}})
	}
	return []struct {
		name  string
		op    Operator
		exact bool
	}{
		{"expand", expand, true},
		{"recursive cte union all", recursiveCounter(t, []int64{1}, 20, 0, false), true},
		{"recursive cte union", recursiveCounter(t, []int64{0, 0, 5}, 100, 7, true), true},
		{"grouping sets aggregate single", withTotals(must(NewHashAggregate(expand, AggSingle, expandKeys,
			[]string{"kname", "kqty", "gid"}, statAggs))), false},
		{"grouping sets aggregate two-stage", expandFinal, false},
		{"parquet scan", NewParquetScan("t", pq, []int{5, 0, 1, 2, 3, 4}, []ColumnPredicate{
			{Column: 0, Op: plan.OpGtEq, Value: plan.Literal{Typ: plan.Int64, Val: int64(150)}},
			{Column: 3, Op: plan.OpLt, Value: plan.Literal{Typ: plan.Date32, Val: int32(280)}},
		}, 3), true},
		{"parquet scan without columns", NewParquetScan("t", pq, nil, nil, 2), true},
		{"csv scan", NewCSVScan("c", csv, []int{3, 0, 2}, 2), true},
		{"filter", NewFilter(scan(3), pCmp(plan.OpAnd,
			pCmp(plan.OpEq, &expr.Binary{Op: plan.OpMod, L: tID, R: pLit(plan.Int64, int64(3)), Type: plan.Int64}, pLit(plan.Int64, int64(0))),
			&expr.IsNull{X: tName, Negated: true})), true},
		{"projection", NewProjection(scan(3), []expr.Expr{
			&expr.Binary{Op: plan.OpMul, L: tPrice, R: pLit(plan.Decimal(1, 0), decimal128.FromI64(2)), Type: mulType},
			&expr.Func{Name: "upper", Args: []expr.Expr{tName}, Type: plan.Utf8},
			&expr.Case{Whens: []expr.When{{Cond: pCmp(plan.OpGt, tQty, pLit(plan.Int32, int32(3))), Then: pLit(plan.Utf8, "many")}},
				Else: &expr.Coalesce{Args: []expr.Expr{tName, pLit(plan.Utf8, "none")}, Type: plan.Utf8}, Type: plan.Utf8},
			&expr.Like{X: tName, Pattern: pLit(plan.Utf8, "n_5%")},
		}, []string{"double", "upper", "label", "like"}), true},
		{"aggregate single", must(NewHashAggregate(scan(3), AggSingle, []expr.Expr{tQty}, []string{"qty"},
			append(slices.Clone(aggs), AggregateExpr{Func: plan.AggCount, Arg: tName, Distinct: true, Name: "distinct", Type: plan.Int64}))), false},
		{"aggregate without groups", must(NewHashAggregate(scan(2), AggSingle, nil, nil, aggs)), true},
		{"aggregate two-stage", must(NewHashAggregate(
			NewRepartition(partial, Partitioning{Kind: PartHash, Count: 4, Keys: []expr.Expr{partialKey}}),
			AggFinal, []expr.Expr{tQty}, []string{"qty"}, aggs)), false},
		{"hash join collect-left", must(NewHashJoin(small, scan(3), JoinInner, []expr.Expr{tID}, []expr.Expr{tID},
			pCmp(plan.OpGt, rightQty, pLit(plan.Int32, int32(1))), false, JoinCollectLeft)), false},
		{"hash join partitioned", must(NewHashJoin(byID(small, 3), byID(scan(2), 3), JoinFull, []expr.Expr{tID}, []expr.Expr{tID},
			nil, false, JoinPartitioned)), false},
		{"hash join null-aware", must(NewHashJoin(smallNamed, scan(3), JoinRightAnti, []expr.Expr{tName}, []expr.Expr{tName},
			nil, true, JoinCollectLeft)), false},
		{"nested loop join", must(NewNestedLoopJoin(NewFilter(scan(1), pCmp(plan.OpLt, tID, pLit(plan.Int64, int64(5)))), scan(3), JoinInner,
			pCmp(plan.OpGt, tID, &expr.Cast{X: rightQty, To: plan.Int64}))), false},
		{"nested loop join left anti", must(NewNestedLoopJoin(small, NewCoalescePartitions(scan(3)), JoinLeftAnti,
			pCmp(plan.OpEq, tID, &expr.Binary{Op: plan.OpAdd, L: colAt(4, tID), R: pLit(plan.Int64, int64(1)), Type: plan.Int64}))), false},
		{"sort", NewSort(scan(3), sortKeys, -1), true},
		{"sort top-k", NewSort(scan(3), sortKeys, 7), true},
		{"sort-preserving merge", NewSortPreservingMerge(NewSort(scan(3), sortKeys, 25), sortKeys, 25), true},
		{"limit", NewLimit(scan(1), 5, 10), true},
		{"limit without count", NewLimit(scan(2), 95, -1), true},
		{"union", NewUnion([]Operator{NewProjection(scan(2), []expr.Expr{tID, tName}, []string{"id", "name"}), csvIDName}), true},
		{"folded union", NewFoldedUnion([]Operator{NewProjection(scan(2), []expr.Expr{tID, tName}, []string{"id", "name"}), csvIDName}, 2), false},
		{"set op except all", must(NewSetOp(byIDName(NewProjection(scan(2), []expr.Expr{tID, tName}, []string{"id", "name"})),
			byIDName(csvIDName), plan.SetExcept, true, idNameSchema)), false},
		{"set op intersect", must(NewSetOp(byIDName(NewProjection(scan(3), []expr.Expr{tID, tName}, []string{"id", "name"})),
			byIDName(NewProjection(scan(1), []expr.Expr{tID, tName}, []string{"id", "name"})), plan.SetIntersect, false, idNameSchema)), false},
		{"values", NewValues(valuesSchema, [][]expr.Expr{
			{pLit(plan.Int64, int64(1)), pLit(plan.Utf8, "one")},
			{pLit(plan.Null, nil), pLit(plan.Utf8, nil)},
		}), true},
		{"generate_series", must(NewGenerateSeries(arrow.NewSchema([]arrow.Field{{Name: "x", Type: plan.Int64}}, nil),
			pLit(plan.Int64, int64(-3)), pLit(plan.Int64, int64(20)), pLit(plan.Int64, int64(4)))), true},
		{"generate_series timestamps", must(NewGenerateSeries(arrow.NewSchema([]arrow.Field{{Name: "t", Type: plan.Timestamp}}, nil),
			pLit(plan.Timestamp, int64(0)), pLit(plan.Timestamp, int64(100*plan.MicrosPerDay)),
			pLit(plan.Interval, arrow.MonthDayNanoInterval{Months: 1, Days: 2}))), true},
		{"window", must(NewWindow(NewSort(NewRepartition(scan(3), Partitioning{Kind: PartHash, Count: 2, Keys: []expr.Expr{tQty}}), []SortKey{{Expr: tQty}, {Expr: tID}}, -1),
			[]expr.Expr{tQty}, []SortKey{{Expr: tID}}, windowCases(sumType, avgType))), false},
		{"window group limit", must(NewWindowGroupLimit(scan(3), []expr.Expr{tQty}, []SortKey{{Expr: tID, Desc: true}}, plan.WinDenseRank, 2)), false},
		{"coalesce partitions", NewCoalescePartitions(scan(3)), false},
		{"dynamic filter build", must(NewDynamicFilterBuild(scan(3), []int{4, 7}, []int{0, 1})), false},
		{"repartition round-robin", NewRepartition(scan(2), Partitioning{Kind: PartRoundRobin, Count: 3}), false},
		{"repartition hash", byID(scan(3), 4), false},
		{"unresolved exchange", NewUnresolvedExchange(3, valuesSchema,
			Partitioning{Kind: PartHash, Count: 5, Keys: []expr.Expr{&expr.Column{Index: 1, Name: "b", Type: plan.Utf8}}}), false},
	}
}

// windowCases are window functions over the test table's columns, with
// every kind of frame bound and offset.
func windowCases(sumType, avgType arrow.DataType) []WindowExpr {
	rows := func(s, e plan.FrameBound) plan.WindowFrame { return plan.WindowFrame{Rows: true, Start: s, End: e} }
	off := func(k plan.BoundKind, n int64) plan.FrameBound {
		return plan.FrameBound{Kind: k, Offset: &plan.Literal{Typ: plan.Int64, Val: n}}
	}
	return []WindowExpr{
		{Func: plan.WinRowNumber, Name: "rn", Type: plan.Int64},
		{Func: plan.WinRank, Name: "rank", Type: plan.Int64},
		{Func: plan.WinCumeDist, Name: "cd", Type: plan.Float64},
		{Func: plan.WinNtile, Args: []expr.Expr{pLit(plan.Int64, int64(3))}, Name: "tile", Type: plan.Int64},
		{Func: plan.WinLag, Args: []expr.Expr{tName, pLit(plan.Int64, int64(2)), pLit(plan.Utf8, "none")}, Name: "prev", Type: plan.Utf8},
		{Func: plan.WinAggregate, Agg: plan.AggSum, Args: []expr.Expr{tPrice}, Name: "sum",
			Frame: rows(off(plan.BoundPreceding, 2), off(plan.BoundFollowing, 1)), Type: sumType},
		{Func: plan.WinAggregate, Agg: plan.AggAvg, Args: []expr.Expr{tPrice}, Name: "avg",
			Frame: plan.WindowFrame{Start: off(plan.BoundPreceding, 10), End: plan.FrameBound{Kind: plan.BoundCurrentRow}}, Type: avgType},
		{Func: plan.WinAggregate, Agg: plan.AggCountStar, Name: "n", Frame: plan.DefaultFrame, Type: plan.Int64},
		{Func: plan.WinNthValue, Args: []expr.Expr{tName, pLit(plan.Int64, int64(2))}, Name: "second",
			Frame: rows(plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, plan.FrameBound{Kind: plan.BoundUnboundedFollowing}), Type: plan.Utf8},
	}
}

func TestPlanProtoEveryOperator(t *testing.T) {
	seen := map[string]bool{}
	var walk func(Operator)
	walk = func(op Operator) {
		seen[fmt.Sprintf("%T", op)] = true
		for _, c := range op.Children() {
			walk(c)
		}
	}
	for _, tc := range operatorCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			walk(tc.op)
			got := shipPlan(t, tc.op, nil)
			if _, ok := tc.op.(*UnresolvedExchange); ok {
				if _, err := got.Execute(context.Background(), 0, NewTaskContext()); err == nil {
					t.Fatal("decoded unresolved exchange executed")
				}
				return
			}
			if n := sameResults(t, tc.op, got, tc.exact); n == 0 {
				t.Fatalf("no rows: the comparison proves nothing")
			}
		})
	}
	// Every operator of the package is in the table (MemScan cannot be
	// shipped; TestPlanProtoErrors covers it).
	for _, want := range []string{"ParquetScan", "CSVScan", "Filter", "Projection", "HashAggregate", "HashJoin",
		"NestedLoopJoin", "Sort", "SortPreservingMerge", "Limit", "Union", "Values", "CoalescePartitions",
		"Repartition", "UnresolvedExchange", "GenerateSeries", "Expand", "Window", "WindowGroupLimit", "SetOp", "DynamicFilterBuild",
		"RecursiveCTE", "WorkTableScan"} {
		if !seen["*physical."+want] {
			t.Errorf("no round-trip case for %s", want)
		}
	}
}

// tagged is an operator from "another package": it passes its input
// through and carries a tag, like an exchange writer carries its job.
type tagged struct {
	input Operator
	tag   string
}

func (o *tagged) Schema() *arrow.Schema            { return o.input.Schema() }
func (o *tagged) Children() []Operator             { return []Operator{o.input} }
func (o *tagged) OutputPartitioning() Partitioning { return o.input.OutputPartitioning() }
func (o *tagged) String() string                   { return "Tagged: " + o.tag }
func (o *tagged) Execute(ctx context.Context, p int, tc *TaskContext) (Stream, error) {
	return o.input.Execute(ctx, p, tc)
}

// taggedCodec ships tagged operators as shuffle writer messages.
type taggedCodec struct{ encoded, decoded int }

func (c *taggedCodec) Encode(op Operator, encode func(Operator) (*rpc.PhysicalPlan, error)) (*rpc.PhysicalPlan, error) {
	o, ok := op.(*tagged)
	if !ok {
		return nil, nil
	}
	in, err := encode(o.input)
	if err != nil {
		return nil, err
	}
	c.encoded++
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_ShuffleWriter{ShuffleWriter: &rpc.ShuffleWriterNode{Input: in, JobId: o.tag}}}, nil
}

func (c *taggedCodec) Decode(n *rpc.PhysicalPlan, decode func(*rpc.PhysicalPlan) (Operator, error)) (Operator, error) {
	w := n.GetShuffleWriter()
	if w == nil {
		return nil, nil
	}
	in, err := decode(w.GetInput())
	if err != nil {
		return nil, err
	}
	c.decoded++
	return &tagged{input: in, tag: w.GetJobId()}, nil
}

func TestPlanProtoExtensionCodec(t *testing.T) {
	pq, _ := protoTables(t)
	scan := NewParquetScan("t", pq, []int{0, 1}, nil, 3)
	// Extension operators above and below package operators.
	op := &tagged{tag: "outer", input: NewFilter(&tagged{tag: "inner", input: scan},
		pCmp(plan.OpLt, tID, pLit(plan.Int64, int64(100))))}
	codec := &taggedCodec{}
	got := shipPlan(t, op, codec)
	if codec.encoded != 2 || codec.decoded != 2 {
		t.Fatalf("codec encoded %d and decoded %d operators, want 2 and 2", codec.encoded, codec.decoded)
	}
	if inner := got.Children()[0].Children()[0].(*tagged); inner.tag != "inner" {
		t.Fatalf("inner tag %q", inner.tag)
	}
	if n := sameResults(t, op, got, true); n != 100 {
		t.Fatalf("%d rows, want 100", n)
	}
}

// nothingCodec knows no operator.
type nothingCodec struct{}

func (nothingCodec) Encode(Operator, func(Operator) (*rpc.PhysicalPlan, error)) (*rpc.PhysicalPlan, error) {
	return nil, nil
}

func (nothingCodec) Decode(*rpc.PhysicalPlan, func(*rpc.PhysicalPlan) (Operator, error)) (Operator, error) {
	return nil, nil
}

func TestPlanProtoErrors(t *testing.T) {
	pq, _ := protoTables(t)
	scan := NewParquetScan("t", pq, []int{0, 1}, nil, 2)
	mt := catalog.NewMemTable(testParquetSchema, nil)
	encodeCases := []struct {
		name string
		op   Operator
		ext  ExtensionCodec
		want string
	}{
		{"memory table", NewFilter(NewMemScan("mem_t", mt, []int{0}, 1), pCmp(plan.OpEq, tID, tID)), nil, "mem_t is an in-memory table"},
		{"foreign operator without codec", &tagged{input: scan, tag: "x"}, nil, "*physical.tagged"},
		{"foreign operator unknown to codec", NewLimit(&tagged{input: scan, tag: "x"}, 0, 1), nothingCodec{}, "neither package physical nor the extension codec"},
		{"foreign expression", NewFilter(scan, &jaCmp{L: 0, R: 0, Op: "="}), nil, "*physical.jaCmp"},
		{"nil operator", nil, nil, "missing operator"},
	}
	for _, tc := range encodeCases {
		t.Run("encode "+tc.name, func(t *testing.T) {
			p, err := EncodePlan(tc.op, tc.ext)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("encoded %v, error %v, want an error containing %q", p, err, tc.want)
			}
		})
	}

	good, err := EncodePlan(NewFilter(scan, pCmp(plan.OpLt, tID, pLit(plan.Int64, int64(5)))), nil)
	if err != nil {
		t.Fatal(err)
	}
	// edit returns a copy of good changed by f.
	edit := func(f func(filter *rpc.FilterNode, scan *rpc.ParquetScanNode)) *rpc.PhysicalPlan {
		p := proto.Clone(good).(*rpc.PhysicalPlan)
		f(p.GetFilter(), p.GetFilter().GetInput().GetParquetScan())
		return p
	}
	pipelined := &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_PipelinedReader{PipelinedReader: &rpc.PipelinedReaderNode{JobId: "j"}}}
	decodeCases := []struct {
		name   string
		p      *rpc.PhysicalPlan
		ext    ExtensionCodec
		tables TableResolver
		want   string
	}{
		{"empty node", &rpc.PhysicalPlan{}, nil, NewTableCache(), "empty node"},
		{"missing child", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Limit{Limit: &rpc.LimitNode{}}}, nil, NewTableCache(), "missing plan node"},
		{"extension node without codec", pipelined, nil, NewTableCache(), "pipelined_reader: no decoder"},
		{"extension node unknown to codec", pipelined, nothingCodec{}, NewTableCache(), "neither package physical nor the extension codec"},
		{"no table resolver", good, nil, nil, "no table resolver"},
		{"missing table", edit(func(_ *rpc.FilterNode, s *rpc.ParquetScanNode) { s.Location += "/nope" }), nil, NewTableCache(), "open parquet table"},
		{"projection out of range", edit(func(_ *rpc.FilterNode, s *rpc.ParquetScanNode) { s.Projection = []int32{0, 6} }), nil, NewTableCache(), "projected column 6 out of range"},
		{"pruning column out of range", edit(func(_ *rpc.FilterNode, s *rpc.ParquetScanNode) {
			s.Pruning = []*rpc.ColumnPredicate{{Column: 9, Op: int32(plan.OpEq), Value: &rpc.Literal{Type: &rpc.ArrowType{Id: rpc.ArrowType_NULL}}}}
		}), nil, NewTableCache(), "column 9 out of range"},
		{"no partitions", edit(func(_ *rpc.FilterNode, s *rpc.ParquetScanNode) { s.Partitions = 0 }), nil, NewTableCache(), "0 partitions"},
		{"column out of range", edit(func(f *rpc.FilterNode, _ *rpc.ParquetScanNode) {
			f.Predicate.GetBinary().Left.GetColumn().Index = 2
		}), nil, NewTableCache(), "index out of range"},
		{"column of the wrong type", edit(func(f *rpc.FilterNode, _ *rpc.ParquetScanNode) {
			f.Predicate.GetBinary().Left.GetColumn().Index = 1
		}), nil, NewTableCache(), "but input column 1 is"},
		{"bad expression", edit(func(f *rpc.FilterNode, _ *rpc.ParquetScanNode) { f.Predicate.GetBinary().Op = 77 }), nil, NewTableCache(), "unknown binary operator"},
		{"bad partitioning", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Repartition{Repartition: &rpc.RepartitionNode{
			Input: good, Partitioning: &rpc.Partitioning{Kind: int32(PartHash), Count: 3}}}}, nil, NewTableCache(), "needs keys"},
		{"repartition to single", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Repartition{Repartition: &rpc.RepartitionNode{
			Input: good, Partitioning: &rpc.Partitioning{Kind: int32(PartSingle), Count: 1}}}}, nil, NewTableCache(), "must hash or deal round-robin"},
		{"unknown join type", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_NestedLoopJoin{NestedLoopJoin: &rpc.NestedLoopJoinNode{
			Left: good, Right: good, JoinType: 42}}}, nil, NewTableCache(), "unknown join type"},
		{"unknown aggregate mode", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_HashAggregate{HashAggregate: &rpc.HashAggregateNode{
			Input: good, Mode: 9}}}, nil, NewTableCache(), "unknown mode"},
		{"unknown aggregate function", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_HashAggregate{HashAggregate: &rpc.HashAggregateNode{
			Input: good, Aggs: []*rpc.AggregateExpr{{Func: int32(plan.NumAggFuncs), Name: "f"}}}}}, nil, NewTableCache(), fmt.Sprintf("unknown function %d", plan.NumAggFuncs)},
		{"union without inputs", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Union{Union: &rpc.UnionNode{}}}, nil, NewTableCache(), "without inputs"},
		{"values row too short", &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Values{Values: &rpc.ValuesNode{
			Schema: &rpc.Schema{Fields: []*rpc.Field{{Name: "a", Type: &rpc.ArrowType{Id: rpc.ArrowType_INT64}}}},
			Rows:   []*rpc.ValuesRow{{}}}}}, nil, NewTableCache(), "row 0 has 0 values for 1 columns"},
	}
	for _, tc := range decodeCases {
		t.Run("decode "+tc.name, func(t *testing.T) {
			op, err := DecodePlan(tc.p, tc.ext, tc.tables)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decoded %v, error %v, want an error containing %q", op, err, tc.want)
			}
		})
	}
}

// tpchTables describes small TPC-H tables (i int64, s utf8, m
// DECIMAL(15,2), d date32) that TestPlanProtoTPCH fills with synthetic rows:
// keys join as in TPC-H and the strings the 22 queries filter on occur, so
// most queries return rows.
var tpchTables = []struct {
	name string
	rows int
	cols string
}{
	{"region", 5, "r_regionkey:i r_name:s r_comment:s"},
	{"nation", 25, "n_nationkey:i n_name:s n_regionkey:i n_comment:s"},
	{"part", 80, "p_partkey:i p_name:s p_mfgr:s p_brand:s p_type:s p_size:i p_container:s p_retailprice:m p_comment:s"},
	{"supplier", 20, "s_suppkey:i s_name:s s_address:s s_nationkey:i s_phone:s s_acctbal:m s_comment:s"},
	{"partsupp", 320, "ps_partkey:i ps_suppkey:i ps_availqty:i ps_supplycost:m ps_comment:s"},
	{"customer", 60, "c_custkey:i c_name:s c_address:s c_nationkey:i c_phone:s c_acctbal:m c_mktsegment:s c_comment:s"},
	{"orders", 300, "o_orderkey:i o_custkey:i o_orderstatus:s o_totalprice:m o_orderdate:d o_orderpriority:s o_clerk:s " +
		"o_shippriority:i o_comment:s"},
	{"lineitem", 1200, "l_orderkey:i l_partkey:i l_suppkey:i l_linenumber:i l_quantity:m l_extendedprice:m l_discount:m " +
		"l_tax:m l_returnflag:s l_linestatus:s l_shipdate:d l_commitdate:d l_receiptdate:d l_shipinstruct:s l_shipmode:s l_comment:s"},
}

var tpchVocab = map[string][]string{
	"r_name": {"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"},
	"n_name": {"ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY", "INDIA",
		"INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA",
		"ROMANIA", "SAUDI ARABIA", "VIETNAM", "RUSSIA", "UNITED KINGDOM", "UNITED STATES"},
	"c_mktsegment":    {"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"},
	"o_orderstatus":   {"F", "O", "P"},
	"o_orderpriority": {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"},
	"l_returnflag":    {"A", "N", "R"},
	"l_linestatus":    {"F", "O"},
	"l_shipmode":      {"AIR", "AIR REG", "FOB", "MAIL", "RAIL", "SHIP", "TRUCK"},
	"l_shipinstruct":  {"COLLECT COD", "DELIVER IN PERSON", "NONE", "TAKE BACK RETURN"},
	"p_brand":         {"Brand#12", "Brand#23", "Brand#34", "Brand#45", "Brand#11"},
	"p_type": {"PROMO BRUSHED BRASS", "ECONOMY ANODIZED STEEL", "LARGE POLISHED TIN", "STANDARD BURNISHED NICKEL",
		"MEDIUM PLATED COPPER", "SMALL PLATED BRASS", "PROMO POLISHED STEEL"},
	"p_container": {"SM CASE", "SM BOX", "SM PACK", "SM PKG", "MED BAG", "MED BOX", "MED PKG", "MED PACK",
		"LG CASE", "LG BOX", "LG PACK", "LG PKG", "JUMBO JAR"},
	"p_name":    {"forest green almond", "lime blush navy", "green navy azure", "forest khaki red", "azure red lime"},
	"p_mfgr":    {"Manufacturer#1", "Manufacturer#2", "Manufacturer#3"},
	"o_comment": {"carefully final", "special packages requests", "regular pending"},
	"s_comment": {"carefully final", "Customer slyly Complaints", "regular pending", "quickly special"},
}

var nationRegion = []int64{0, 1, 1, 1, 4, 0, 3, 3, 2, 2, 4, 4, 2, 4, 0, 0, 0, 1, 2, 3, 4, 2, 3, 3, 1}

// tpchValue is row i's value of a column: int64, string, cents (for money)
// or days since the epoch.
func tpchValue(column string, i int) any {
	const day1992 = 8035 // 1992-01-01
	orderDate := func(o int) int64 { return day1992 + int64(o*13%2400) }
	part := i*7%80 + 1 // lineitem's part
	switch column {
	case "r_regionkey", "n_nationkey":
		return int64(i)
	case "n_regionkey":
		return nationRegion[i]
	case "p_partkey", "s_suppkey", "c_custkey", "o_orderkey":
		return int64(i + 1)
	case "ps_partkey":
		return int64(i/4 + 1)
	case "ps_suppkey": // four suppliers per part, as lineitem picks them
		return int64((i/4+i%4*5)%20 + 1)
	case "s_nationkey", "c_nationkey":
		return int64(i % 25)
	case "o_custkey": // customers 51-60 place no orders
		return int64(i%50 + 1)
	case "l_orderkey":
		return int64(i/4 + 1)
	case "l_linenumber":
		return int64(i%4 + 1)
	case "l_partkey":
		return int64(part)
	case "l_suppkey":
		return int64((part-1+i%4*5)%20 + 1)
	case "p_size":
		return int64(i%50 + 1)
	case "o_shippriority":
		return int64(0)
	case "o_orderdate":
		return orderDate(i)
	case "l_shipdate":
		return orderDate(i/4) + int64(i%4*20+1)
	case "l_commitdate":
		return orderDate(i/4) + int64(30-i%3*10)
	case "l_receiptdate":
		return orderDate(i/4) + int64(i%4*20+2+i%15)
	case "l_quantity":
		return int64(i%50+1) * 100
	case "l_extendedprice":
		return int64(i*7919%100000 + 100)
	case "l_discount":
		return int64(i % 11)
	case "l_tax":
		return int64(i % 9)
	case "o_totalprice":
		return int64(i * 1234 % 500000)
	case "c_acctbal", "s_acctbal":
		return int64(i*977%20000 - 1000)
	case "p_retailprice":
		return int64(90000 + i)
	case "ps_supplycost":
		return int64(i * 31 % 100000)
	case "c_phone", "s_phone":
		return fmt.Sprintf("%02d-555-%04d", 10+i%25, i)
	}
	if vs, ok := tpchVocab[column]; ok {
		return vs[i%len(vs)]
	}
	if strings.HasSuffix(column, "availqty") {
		return int64(i * 37 % 9999)
	}
	return fmt.Sprintf("%s#%03d", column, i)
}

// writeTPCH writes the tables under dir/<table>/ (lineitem as two files of
// two row groups) and registers them in a new catalog.
func writeTPCH(t *testing.T) *catalog.Catalog {
	dir := t.TempDir()
	cat := catalog.New()
	types := map[string]arrow.DataType{"i": plan.Int64, "s": plan.Utf8, "m": plan.Decimal(15, 2), "d": plan.Date32}
	for _, tb := range tpchTables {
		var fields []arrow.Field
		for _, c := range strings.Fields(tb.cols) {
			name, typ, _ := strings.Cut(c, ":")
			fields = append(fields, arrow.Field{Name: name, Type: types[typ]})
		}
		schema := arrow.NewSchema(fields, nil)
		batch := func(lo, hi int) arrow.RecordBatch {
			b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			defer b.Release()
			for i := lo; i < hi; i++ {
				for c, f := range fields {
					switch v := tpchValue(f.Name, i).(type) {
					case string:
						b.Field(c).(*array.StringBuilder).Append(v)
					case int64:
						switch fb := b.Field(c).(type) {
						case *array.Int64Builder:
							fb.Append(v)
						case *array.Decimal128Builder:
							fb.Append(decimal128.FromI64(v))
						case *array.Date32Builder:
							fb.Append(arrow.Date32(v))
						}
					}
				}
			}
			return b.NewRecordBatch()
		}
		tdir := filepath.Join(dir, tb.name)
		if tb.name == "lineitem" {
			q := tb.rows / 4
			writeParquet(t, filepath.Join(tdir, "1.parquet"), schema, batch(0, q), batch(q, 2*q))
			writeParquet(t, filepath.Join(tdir, "2.parquet"), schema, batch(2*q, 3*q), batch(3*q, tb.rows))
		} else {
			writeParquet(t, filepath.Join(tdir, "1.parquet"), schema, batch(0, tb.rows))
		}
		tbl, err := catalog.OpenParquet(tdir)
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.RegisterTable(tb.name, tbl, false); err != nil {
			t.Fatal(err)
		}
	}
	return cat
}

// planSQL plans every query in text (applying CREATE/DROP VIEW on the way)
// as the scheduler does, over 3 partitions.
func planSQL(t *testing.T, cat *catalog.Catalog, text string) []Operator {
	t.Helper()
	stmts, err := sql.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	var out []Operator
	for _, st := range stmts {
		bound, err := (&sql.Binder{Catalog: cat}).Bind(st)
		if err != nil {
			t.Fatal(err)
		}
		switch b := bound.(type) {
		case *sql.CreateView:
			if err := cat.RegisterView(&catalog.View{Name: b.Name, SQL: b.SQL, Columns: b.Columns}, b.OrReplace); err != nil {
				t.Fatal(err)
			}
		case *sql.Drop:
			cat.DropView(b.Name)
		case *sql.Query:
			opt, err := plan.Optimize(b.Plan, b.IDs)
			if err != nil {
				t.Fatal(err)
			}
			op, err := PlanForTests(opt, 3, false)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, op)
		default:
			t.Fatalf("unexpected statement %T", bound)
		}
	}
	return out
}

// TestPlanProtoTPCH ships the physical plans of the 22 TPC-H queries, as
// the planner builds them, and checks each decoded plan returns what the
// original returns.
func TestPlanProtoTPCH(t *testing.T) {
	cat := writeTPCH(t)
	total, nonEmpty := 0, 0
	for q := 1; q <= 22; q++ {
		t.Run(fmt.Sprintf("q%d", q), func(t *testing.T) {
			text, err := os.ReadFile(fmt.Sprintf("../testdata/tpch/q%d.sql", q))
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range planSQL(t, cat, string(text)) {
				n := sameResults(t, op, shipPlan(t, op, nil), false)
				t.Logf("%d rows", n)
				total += n
				if n > 0 {
					nonEmpty++
				}
			}
		})
	}
	if nonEmpty < 15 {
		t.Fatalf("only %d of 22 queries return rows (%d in all): the data no longer exercises the plans", nonEmpty, total)
	}
}

// TestPlanProtoSQL ships planner-built plans with joins, aggregates,
// subqueries, sort and limit, and compares results in order.
func TestPlanProtoSQL(t *testing.T) {
	cat := writeTPCH(t)
	queries := []string{
		`select n_name, count(*) as lines, sum(o_totalprice) as total, avg(l_quantity) as qty
		 from customer join orders on c_custkey = o_custkey join nation on c_nationkey = n_nationkey
		   join lineitem on l_orderkey = o_orderkey
		 where o_orderdate >= date '1993-01-01' and l_shipmode in ('AIR', 'MAIL') and c_name not like '%7'
		 group by n_name order by total desc, n_name limit 10`,
		`select c_custkey, count(o_orderkey) as orders, max(coalesce(o_comment, 'none')) as comment
		 from customer left join orders on c_custkey = o_custkey
		 where c_custkey not in (select s_suppkey from supplier where s_acctbal < 0)
		   and exists (select * from nation where n_nationkey = c_nationkey and n_regionkey <> 2)
		 group by c_custkey order by orders, c_custkey limit 20 offset 3`,
		`select extract(year from o_orderdate) as y,
		   case when o_orderpriority like '1%' then 'urgent' else 'other' end as urgency,
		   count(distinct o_custkey) as customers, sum(o_totalprice * 2) as doubled
		 from orders where o_orderstatus <> 'P'
		 group by extract(year from o_orderdate), case when o_orderpriority like '1%' then 'urgent' else 'other' end
		 order by y, urgency`,
		`select o_custkey, o_orderkey, row_number() over (partition by o_custkey order by o_orderdate, o_orderkey) as rn,
		   sum(o_totalprice) over (partition by o_custkey order by o_orderkey rows between 1 preceding and current row) as pair,
		   rank() over (order by o_totalprice desc) as overall
		 from orders order by o_custkey, o_orderkey limit 50`,
		`select c_nationkey, c_mktsegment from customer where c_acctbal > 0
		 intersect all select s_nationkey, 'BUILDING' from supplier
		 except select n_nationkey, 'AUTOMOBILE' from nation where n_regionkey = 1`,
		`select c_custkey,
		   c_nationkey in (select s_nationkey from supplier where s_acctbal > 5000)
		     or exists (select 1 from orders where o_custkey = c_custkey and o_totalprice > 300000) as m,
		   (select n_name from nation where n_nationkey = c_nationkey) as nation
		 from customer order by c_custkey limit 50`,
	}
	for i, q := range queries {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			for _, op := range planSQL(t, cat, q) {
				if n := sameResults(t, op, shipPlan(t, op, nil), true); n == 0 {
					t.Fatalf("no rows:\n%s", Format(op))
				}
			}
		})
	}
}

// TestEncodeNode checks that EncodeNode encodes the operator alone: a leaf
// as EncodePlan does, and an operator with children with each child, in
// Children() order and only those, replaced by the stub's message.
func TestEncodeNode(t *testing.T) {
	for _, tc := range operatorCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var got []Operator
			m, err := EncodeNode(tc.op, func(c Operator) *rpc.PhysicalPlan {
				got = append(got, c)
				return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_UnresolvedExchange{UnresolvedExchange: &rpc.UnresolvedExchangeNode{StageId: int32(1000 + len(got))}}}
			})
			if err != nil {
				t.Fatal(err)
			}
			children := tc.op.Children()
			if len(got) != len(children) {
				t.Fatalf("stub called for %d operators, want the %d children", len(got), len(children))
			}
			for i, c := range children {
				if got[i] != c {
					t.Fatalf("stub call %d got %s, want child %s", i, got[i], c)
				}
			}
			if len(children) == 0 {
				whole, err := EncodePlan(tc.op, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(m, whole) {
					t.Fatalf("leaf encoded alone differs from EncodePlan:\n%v\n%v", m, whole)
				}
				return
			}
			// The message holds each child's stub where the child was.
			stubs := 0
			var find func(protoreflect.Message)
			find = func(pm protoreflect.Message) {
				pm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
					switch {
					case fd.IsList() && fd.Message() != nil:
						for i := 0; i < v.List().Len(); i++ {
							find(v.List().Get(i).Message())
						}
					case fd.Message() != nil && !fd.IsMap():
						if u, ok := v.Message().Interface().(*rpc.UnresolvedExchangeNode); ok && u.StageId > 1000 {
							stubs++
						}
						find(v.Message())
					}
					return true
				})
			}
			find(m.ProtoReflect())
			if stubs != len(children) {
				t.Fatalf("%d stubs in the message, want %d:\n%v", stubs, len(children), m)
			}
		})
	}
}
