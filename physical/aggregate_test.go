package physical

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

var jaAggSchema = jaSchema("k", plan.Utf8, "x", plan.Int64, "d", plan.Decimal(12, 2), "f", plan.Float64)

// jaAggSource returns the two-partition aggregate test input.
func jaAggSource(t testing.TB, mem memory.Allocator, empty bool) *jaSource {
	if empty {
		return &jaSource{schema: jaAggSchema, parts: [][]arrow.RecordBatch{nil, nil}}
	}
	p0 := jaBatch(t, mem, jaAggSchema, [][]any{
		{"a", 1, "1.50", 1.0},
		{"b", 2, "2.25", nil},
		{"a", nil, nil, 2.0},
		{nil, 3, "-1.00", 3.0},
	})
	p1a := jaBatch(t, mem, jaAggSchema, [][]any{
		{"a", 1, "0.01", nil},
		{"b", 5, "2.25", 4.0},
	})
	p1b := jaBatch(t, mem, jaAggSchema, [][]any{
		{nil, nil, nil, nil},
		{"c", nil, nil, nil},
	})
	return &jaSource{schema: jaAggSchema, parts: [][]arrow.RecordBatch{{p0}, {p1a, p1b}}}
}

func jaAggs() []AggregateExpr {
	x := jaCol(1, "x", plan.Int64)
	d := jaCol(2, "d", plan.Decimal(12, 2))
	f := jaCol(3, "f", plan.Float64)
	return []AggregateExpr{
		{Func: plan.AggCountStar, Name: "cs", Type: plan.Int64},
		{Func: plan.AggCount, Arg: x, Name: "c", Type: plan.Int64},
		{Func: plan.AggSum, Arg: x, Name: "s", Type: plan.SumType(plan.Int64)},
		{Func: plan.AggAvg, Arg: x, Name: "a", Type: plan.AvgType(plan.Int64)},
		{Func: plan.AggMin, Arg: x, Name: "mn", Type: plan.Int64},
		{Func: plan.AggMax, Arg: x, Name: "mx", Type: plan.Int64},
		{Func: plan.AggSum, Arg: d, Name: "sd", Type: plan.SumType(d.Type)},
		{Func: plan.AggAvg, Arg: d, Name: "ad", Type: plan.AvgType(d.Type)},
		{Func: plan.AggMin, Arg: d, Name: "md", Type: d.Type},
		{Func: plan.AggMin, Arg: f, Name: "mf", Type: plan.Float64},
		{Func: plan.AggSum, Arg: f, Name: "sf", Type: plan.Float64},
	}
}

func TestHashAggregate(t *testing.T) {
	keyed := []string{
		"a|3|2|2|1|1|1|1.51|0.755000|0.01|1|3",
		"b|2|2|7|3.5|2|5|4.50|2.250000|2.25|4|4",
		"c|1|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
		"NULL|2|1|3|3|3|3|-1.00|-1.000000|-1.00|3|3",
	}
	slices.Sort(keyed)
	k := []expr.Expr{jaCol(0, "k", plan.Utf8)}
	cases := []struct {
		name      string
		groupBy   []expr.Expr
		empty     bool
		twoStage  bool
		batchSize int
		want      []string
	}{
		{"single keyed", k, false, false, 8192, keyed},
		{"two-stage keyed", k, false, true, 8192, keyed},
		{"single keyed batch 1", k, false, false, 1, keyed},
		{"two-stage keyed batch 1", k, false, true, 1, keyed},
		{"single global", nil, false, false, 8192, []string{"8|5|12|2.4|1|5|5.01|1.002000|-1.00|1|10"}},
		{"two-stage global", nil, false, true, 8192, []string{"8|5|12|2.4|1|5|5.01|1.002000|-1.00|1|10"}},
		{"single empty keyed", k, true, false, 8192, nil},
		{"two-stage empty keyed", k, true, true, 8192, nil},
		{"single empty global", nil, true, false, 8192, []string{"0|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL"}},
		{"two-stage empty global", nil, true, true, 8192, []string{"0|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src := jaAggSource(t, mem, tc.empty)
			defer src.release()
			names := make([]string, len(tc.groupBy))
			for i := range names {
				names[i] = fmt.Sprintf("g%d", i)
			}
			var op Operator
			if tc.twoStage {
				partial, err := NewHashAggregate(src, AggPartial, tc.groupBy, names, jaAggs())
				if err != nil {
					t.Fatal(err)
				}
				op, err = NewHashAggregate(&jaCoalesce{in: partial}, AggFinal, tc.groupBy, names, jaAggs())
				if err != nil {
					t.Fatal(err)
				}
			} else {
				var err error
				op, err = NewHashAggregate(&jaCoalesce{in: src}, AggSingle, tc.groupBy, names, jaAggs())
				if err != nil {
					t.Fatal(err)
				}
			}
			tctx := jaTC(mem, tc.batchSize, 0)
			got := jaCollect(t, op, tctx)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if u := tctx.Memory.Used(); u != 0 {
				t.Fatalf("memory pool still holds %d bytes", u)
			}
		})
	}
}

func TestHashAggregatePartialPerPartition(t *testing.T) {
	// Without keys, a partial aggregate emits one state row per partition,
	// even for an empty partition.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaAggSource(t, mem, false)
	defer src.release()
	src.parts = append(src.parts, nil)
	aggs := jaAggs()[:4]
	op, err := NewHashAggregate(src, AggPartial, nil, nil, aggs)
	if err != nil {
		t.Fatal(err)
	}
	if op.OutputPartitioning().Count != 3 {
		t.Fatalf("partitions = %d", op.OutputPartitioning().Count)
	}
	wantFields := []string{"cs[count]", "c[count]", "s[sum]", "a[sum]", "a[count]"}
	for i, f := range op.Schema().Fields() {
		if f.Name != wantFields[i] {
			t.Fatalf("field %d = %s, want %s", i, f.Name, wantFields[i])
		}
	}
	got := jaCollect(t, op, jaTC(mem, 8192, 0))
	want := []string{"0|0|NULL|NULL|0", "4|3|6|6|3", "4|2|6|6|2"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestHashAggregateDistinct(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaAggSource(t, mem, false)
	defer src.release()
	x := jaCol(1, "x", plan.Int64)
	aggs := []AggregateExpr{
		{Func: plan.AggCount, Arg: x, Distinct: true, Name: "cd", Type: plan.Int64},
		{Func: plan.AggSum, Arg: x, Distinct: true, Name: "sd", Type: plan.Int64},
		{Func: plan.AggCountStar, Name: "cs", Type: plan.Int64},
	}
	k := []expr.Expr{jaCol(0, "k", plan.Utf8)}
	op, err := NewHashAggregate(&jaCoalesce{in: src}, AggSingle, k, []string{"k"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	got := jaCollect(t, op, jaTC(mem, 8192, 0))
	want := []string{"NULL|1|3|2", "a|1|1|3", "b|2|7|2", "c|0|NULL|1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, mode := range []AggMode{AggPartial, AggFinal} {
		if _, err := NewHashAggregate(src, mode, k, []string{"k"}, aggs); err == nil {
			t.Fatalf("%s: distinct aggregate accepted", mode)
		}
	}
}

func TestHashAggregateDecimal(t *testing.T) {
	dt := plan.Decimal(38, 2)
	schema := jaSchema("d", dt)
	huge := "999999999999999999999999999999999999.99" // 38 digits
	cases := []struct {
		name    string
		rows    [][]any
		want    string
		wantErr bool
	}{
		{"thirds", [][]any{{"1.00"}, {"2.00"}, {"2.00"}}, "5.00|1.666667", false},
		{"negative thirds", [][]any{{"-1.00"}, {"-2.00"}, {"-2.00"}}, "-5.00|-1.666667", false},
		{"half up", jaDecRows("0.01", 32), "0.01|0.000313", false},
		{"negative half up", jaDecRows("-0.01", 32), "-0.01|-0.000313", false},
		{"large exact", [][]any{{"99999999999999999999999999999999.99"}, {"0.01"}}, "100000000000000000000000000000000.00|50000000000000000000000000000000.000000", false},
		{"overflow", [][]any{{huge}, {huge}}, "", true},
		{"128-bit overflow", [][]any{{huge}, {huge}, {huge}, {huge}, {huge}, {huge}}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{{jaBatch(t, mem, schema, tc.rows)}}}
			defer src.release()
			d := jaCol(0, "d", dt)
			aggs := []AggregateExpr{
				{Func: plan.AggSum, Arg: d, Name: "s", Type: plan.SumType(dt)},
				{Func: plan.AggAvg, Arg: d, Name: "a", Type: plan.AvgType(dt)},
			}
			op, err := NewHashAggregate(src, AggSingle, nil, nil, aggs)
			if err != nil {
				t.Fatal(err)
			}
			bs, err := jaRun(t, op, jaTC(mem, 8192, 0))
			if tc.wantErr {
				if err == nil || !errors.Is(err, errDecimalOverflow) {
					t.Fatalf("err = %v, want decimal overflow", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := jaRows(bs)
			for _, b := range bs {
				b.Release()
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
}

func TestDecimalAvg(t *testing.T) {
	cases := []struct {
		sum   string
		count int64
		k     int32
		want  string
	}{
		{"10", 4, 0, "3"},   // 2.5 → 3
		{"-10", 4, 0, "-3"}, // -2.5 → -3
		{"10", 3, 0, "3"},
		{"2", 3, 4, "6667"},
		{"99999999999999999999999999999999999999", 1, 0, "99999999999999999999999999999999999999"},
		{"99999999999999999999999999999999999999", 100000, 4, "10000000000000000000000000000000000000"},
	}
	for _, tc := range cases {
		s, err := decimal128.FromString(tc.sum, 38, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decimalAvg(s, tc.count, tc.k)
		if err != nil {
			t.Fatalf("%s/%d: %v", tc.sum, tc.count, err)
		}
		if got.ToString(0) != tc.want {
			t.Errorf("%s/%d*10^%d = %s, want %s", tc.sum, tc.count, tc.k, got.ToString(0), tc.want)
		}
	}
	big, _ := decimal128.FromString("99999999999999999999999999999999999999", 38, 0)
	if _, err := decimalAvg(big, 1, 4); !errors.Is(err, errDecimalOverflow) {
		t.Fatalf("err = %v, want overflow", err)
	}
}

func TestHashAggregateIntOverflow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := jaSchema("x", plan.Int64)
	src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{{jaBatch(t, mem, schema, [][]any{{1 << 62}, {1 << 62}})}}}
	defer src.release()
	op, err := NewHashAggregate(src, AggSingle, nil, nil, []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(0, "x", plan.Int64), Name: "s", Type: plan.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jaRun(t, op, jaTC(mem, 8192, 0)); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Fatalf("err = %v, want overflow", err)
	}
}

// jaManyGroups returns a one-partition source of n rows with int64 key i%groups
// (and a NULL key every 7th row), value i, plus a utf8 copy of the key.
func jaManyGroups(t testing.TB, mem memory.Allocator, n, groups, batch int) *jaSource {
	schema := jaSchema("k", plan.Int64, "v", plan.Int64, "ks", plan.Utf8)
	var bs []arrow.RecordBatch
	for start := 0; start < n; start += batch {
		var rows [][]any
		for i := start; i < min(n, start+batch); i++ {
			if i%7 == 3 {
				rows = append(rows, []any{nil, i, nil})
			} else {
				rows = append(rows, []any{i % groups, i, fmt.Sprint(i % groups)})
			}
		}
		bs = append(bs, jaBatch(t, mem, schema, rows))
	}
	return &jaSource{schema: schema, parts: [][]arrow.RecordBatch{bs}}
}

func TestHashAggregateManyGroups(t *testing.T) {
	const n, groups = 20000, 3000
	want := map[string]int64{}
	for i := 0; i < n; i++ {
		if i%7 == 3 {
			want["NULL"] += int64(i)
		} else {
			want[fmt.Sprint(i%groups)] += int64(i)
		}
	}
	var wantRows []string
	for k, v := range want {
		wantRows = append(wantRows, fmt.Sprintf("%s|%d", k, v))
	}
	slices.Sort(wantRows)
	for _, keyCol := range []int{0, 2} {
		for _, mk := range []bool{false, true} {
			t.Run(fmt.Sprintf("key%d/multi=%v", keyCol, mk), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				src := jaManyGroups(t, mem, n, groups, 1000)
				defer src.release()
				typ := src.schema.Field(keyCol).Type
				gb := []expr.Expr{jaCol(keyCol, "k", typ)}
				names := []string{"k"}
				if mk {
					// A second key equal to the first must not split groups.
					gb = append(gb, jaCol(keyCol, "k2", typ))
					names = append(names, "k2")
				}
				aggs := []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(1, "v", plan.Int64), Name: "s", Type: plan.Int64}}
				op, err := NewHashAggregate(src, AggSingle, gb, names, aggs)
				if err != nil {
					t.Fatal(err)
				}
				got := jaCollect(t, op, jaTC(mem, 512, 0))
				if mk {
					for i, r := range got {
						p := strings.SplitN(r, "|", 3)
						if p[0] != p[1] {
							t.Fatalf("row %s: keys differ", r)
						}
						got[i] = p[0] + "|" + p[2]
					}
					slices.Sort(got)
				}
				if !slices.Equal(got, wantRows) {
					t.Fatalf("got %d rows, want %d; first got %v", len(got), len(wantRows), got[:min(3, len(got))])
				}
			})
		}
	}
}

func TestHashAggregateMemoryLimit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaManyGroups(t, mem, 20000, 20000, 1000)
	defer src.release()
	aggs := []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(1, "v", plan.Int64), Name: "s", Type: plan.Int64}}
	op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "k", plan.Int64)}, []string{"k"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	tc := jaTC(mem, 8192, 10000)
	if _, err := jaRun(t, op, tc); !errors.Is(err, mempool.ErrResourcesExhausted) {
		t.Fatalf("err = %v, want mempool.ErrResourcesExhausted", err)
	}
	if u := tc.Memory.Used(); u != 0 {
		t.Fatalf("memory pool still holds %d bytes", u)
	}
}

// jaDecRows returns first followed by n-1 zero rows.
func jaDecRows(first string, n int) [][]any {
	rows := [][]any{{first}}
	for i := 1; i < n; i++ {
		rows = append(rows, []any{"0.00"})
	}
	return rows
}

func TestHashAggregateNarrowIntKeys(t *testing.T) {
	for _, typ := range []arrow.DataType{plan.Int32, plan.Date32, plan.Int64} {
		t.Run(typ.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			schema := jaSchema("k", typ, "v", plan.Int64)
			src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{{
				jaBatch(t, mem, schema, [][]any{{1, 10}, {nil, 1}, {2, 5}, {1, 7}}),
				jaBatch(t, mem, schema, [][]any{{nil, 2}, {0, 3}, {2, nil}}),
			}}}
			defer src.release()
			aggs := []AggregateExpr{
				{Func: plan.AggSum, Arg: jaCol(1, "v", plan.Int64), Name: "s", Type: plan.Int64},
				{Func: plan.AggCountStar, Name: "c", Type: plan.Int64},
			}
			op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "k", typ)}, []string{"k"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			got := jaCollect(t, op, jaTC(mem, 2, 0))
			for i, r := range got {
				got[i] = r[strings.Index(r, "|"):] // key rendering differs by type
			}
			slices.Sort(got)
			// groups: 1 → 17/2, NULL → 3/2, 2 → 5/2, 0 → 3/1
			want := []string{"|17|2", "|3|1", "|3|2", "|5|2"}
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

func TestHashAggregateTwoStageRandom(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := plan.Decimal(15, 2)
	schema := jaSchema("k1", plan.Int64, "k2", plan.Utf8, "x", plan.Int32, "d", dt, "s", plan.Utf8)
	src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 3)}
	defer src.release()
	for p := range src.parts {
		for b := 0; b < 4; b++ {
			var rows [][]any
			for i := 0; i < 300; i++ {
				n := p*100000 + b*1000 + i
				row := []any{n % 37, fmt.Sprint("k", n%5), n % 1000, fmt.Sprintf("%d.%02d", n%997-500, n%100), fmt.Sprint("v", n%211)}
				for c := range row {
					if (n+c)%(11+c) == 0 {
						row[c] = nil
					}
				}
				rows = append(rows, row)
			}
			src.parts[p] = append(src.parts[p], jaBatch(t, mem, schema, rows))
		}
	}
	x, d, s := jaCol(2, "x", plan.Int32), jaCol(3, "d", dt), jaCol(4, "s", plan.Utf8)
	aggs := []AggregateExpr{
		{Func: plan.AggCountStar, Name: "cs", Type: plan.Int64},
		{Func: plan.AggCount, Arg: s, Name: "c", Type: plan.Int64},
		{Func: plan.AggSum, Arg: x, Name: "sx", Type: plan.Int64},
		{Func: plan.AggMin, Arg: x, Name: "mnx", Type: plan.Int32},
		{Func: plan.AggSum, Arg: d, Name: "sd", Type: plan.SumType(dt)},
		{Func: plan.AggAvg, Arg: d, Name: "ad", Type: plan.AvgType(dt)},
		{Func: plan.AggMax, Arg: d, Name: "mxd", Type: dt},
		{Func: plan.AggMin, Arg: s, Name: "mns", Type: plan.Utf8},
		{Func: plan.AggMax, Arg: s, Name: "mxs", Type: plan.Utf8},
	}
	gb := []expr.Expr{jaCol(0, "k1", plan.Int64), jaCol(1, "k2", plan.Utf8)}
	names := []string{"k1", "k2"}
	single, err := NewHashAggregate(&jaCoalesce{in: src}, AggSingle, gb, names, aggs)
	if err != nil {
		t.Fatal(err)
	}
	partial, err := NewHashAggregate(src, AggPartial, gb, names, aggs)
	if err != nil {
		t.Fatal(err)
	}
	final, err := NewHashAggregate(&jaCoalesce{in: partial}, AggFinal, gb, names, aggs)
	if err != nil {
		t.Fatal(err)
	}
	want := jaCollect(t, single, jaTC(mem, 64, 0))
	// The partial aggregates pass rows on from the first row (a point at
	// 0, 0), never (a point no partition reaches; the defaults too here:
	// 1,200 rows per partition), or after random points, none to three:
	// the result never changes.
	defer func(points []PartialSkipPoint) { PartialSkip = points }(PartialSkip)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	never := int64(1 << 62)
	random := func() []PartialSkipPoint {
		points := make([]PartialSkipPoint, r.IntN(4))
		for i := range points {
			points[i] = PartialSkipPoint{Rows: r.Int64N(1500), Ratio: r.Float64()}
		}
		return points
	}
	for i, skip := range [][]PartialSkipPoint{
		PartialSkip,
		{{Rows: 0, Ratio: 0}},
		{{Rows: never, Ratio: 0}},
		random(),
		random(),
		random(),
	} {
		PartialSkip = skip
		got := jaCollect(t, final, jaTC(mem, 50, 0))
		if len(want) < 100 || !slices.Equal(got, want) {
			t.Fatalf("run %d (skip points %v): two-stage differs from single-stage (%d vs %d rows)", i, skip, len(got), len(want))
		}
	}
}

// BenchmarkHashAggregateQ1 aggregates 6M rows into 4 groups (two utf8 keys,
// as TPC-H q1) with 5 decimal sums, in one partition.
func BenchmarkHashAggregateQ1(b *testing.B) {
	const rows, batch = 6_000_000, 8192
	dt := plan.Decimal(15, 2)
	schema := jaSchema("flag", plan.Utf8, "status", plan.Utf8, "d1", dt, "d2", dt, "d3", dt, "d4", dt, "d5", dt)
	mem := memory.NewGoAllocator()
	rb := array.NewRecordBuilder(mem, schema)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < batch; i++ {
		g := r.IntN(4)
		rb.Field(0).(*array.StringBuilder).Append([]string{"A", "N", "R"}[g%3])
		rb.Field(1).(*array.StringBuilder).Append([]string{"F", "O"}[g/2])
		for c := 2; c < 7; c++ {
			rb.Field(c).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(10_000_000)))
		}
	}
	one := rb.NewRecordBatch()
	rb.Release()
	defer one.Release()
	var bs []arrow.RecordBatch
	for i := 0; i < rows/batch; i++ {
		bs = append(bs, one)
	}
	src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{bs}}
	var aggs []AggregateExpr
	for c := 2; c < 7; c++ {
		aggs = append(aggs, AggregateExpr{Func: plan.AggSum, Arg: jaCol(c, "d", dt), Name: "s", Type: plan.SumType(dt)})
	}
	aggs = append(aggs, AggregateExpr{Func: plan.AggCountStar, Name: "c", Type: plan.Int64})
	op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "flag", plan.Utf8), jaCol(1, "status", plan.Utf8)}, []string{"flag", "status"}, aggs)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := jaDrain(b, op, NewTaskContext()); n != 4 {
			b.Fatalf("%d groups", n)
		}
	}
	b.ReportMetric(float64(len(bs)*batch)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}

// BenchmarkHashAggregateManyGroups aggregates 6M rows into 1.5M int64 groups
// (as TPC-H q18's subquery) with one decimal sum.
func BenchmarkHashAggregateManyGroups(b *testing.B) {
	const rows, groups, batch = 6_000_000, 1_500_000, 8192
	dt := plan.Decimal(15, 2)
	schema := jaSchema("k", plan.Int64, "d", dt)
	mem := memory.NewGoAllocator()
	r := rand.New(rand.NewPCG(3, 4))
	src := jaBuild(mem, schema, rows, batch, func(rb *array.RecordBuilder, i int) {
		rb.Field(0).(*array.Int64Builder).Append(int64(r.IntN(groups)))
		rb.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(10_000)))
	})
	defer src.release()
	aggs := []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(1, "d", dt), Name: "s", Type: plan.SumType(dt)}}
	op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "k", plan.Int64)}, []string{"k"}, aggs)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		jaDrain(b, op, NewTaskContext())
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}

// TestHashAggregateDecimalFewGroups: decimal sums over a handful of groups,
// an odd number of rows per batch and groups interleaved at random (the
// two-chain path for few groups), and over more groups than it serves,
// match sums computed row by row.
func TestHashAggregateDecimalFewGroups(t *testing.T) {
	dt := plan.Decimal(15, 2)
	schema := jaSchema("g", plan.Int64, "d", dt)
	for _, groups := range []int{1, 3, fewGroups + 5} {
		t.Run(fmt.Sprint(groups, " groups"), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewPCG(uint64(groups), 9))
			want := map[int]int64{}
			var batches []arrow.RecordBatch
			for b := 0; b < 3; b++ {
				var rows [][]any
				for i := 0; i < 1001; i++ {
					g, cents := rng.IntN(groups), rng.Int64N(2_000_000)-1_000_000
					want[g] += cents
					sign := ""
					if cents < 0 {
						sign, cents = "-", -cents
					}
					rows = append(rows, []any{g, fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)})
				}
				batches = append(batches, jaBatch(t, mem, schema, rows))
			}
			src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{batches}}
			defer src.release()
			op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "g", plan.Int64)}, []string{"g"},
				[]AggregateExpr{{Func: plan.AggSum, Arg: jaCol(1, "d", dt), Name: "s", Type: plan.SumType(dt)}})
			if err != nil {
				t.Fatal(err)
			}
			bs, err := jaRun(t, op, jaTC(mem, 8192, 0))
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]string{}
			for _, b := range bs {
				g, s := b.Column(0).(*array.Int64), b.Column(1).(*array.Decimal128)
				for r := 0; r < int(b.NumRows()); r++ {
					got[g.Value(r)] = s.Value(r).ToString(2)
				}
				b.Release()
			}
			if len(got) != len(want) {
				t.Fatalf("%d groups, want %d", len(got), len(want))
			}
			for g, cents := range want {
				if w := decimal128.FromI64(cents).ToString(2); got[int64(g)] != w {
					t.Errorf("group %d: sum %s, want %s", g, got[int64(g)], w)
				}
			}
		})
	}
}

// TestHashAggregateSharedArguments sums an expression, the same
// expression again, and an expression with it as an operand (q1's shape):
// each argument is computed once per batch and every sum is right, in one
// stage and in two.
func TestHashAggregateSharedArguments(t *testing.T) {
	x := jaCol(1, "x", plan.Int64)
	d := jaCol(2, "d", plan.Decimal(12, 2))
	two := &expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: int64(2)}}
	x2 := &expr.Binary{Op: plan.OpMul, L: x, R: two, Type: plan.Int64}
	x2again := &expr.Binary{Op: plan.OpMul, L: x, R: two, Type: plan.Int64}
	x2plus := &expr.Binary{Op: plan.OpAdd, L: x2again, R: x, Type: plan.Int64}
	aggs := []AggregateExpr{
		{Func: plan.AggSum, Arg: x2, Name: "s2", Type: plan.Int64},
		{Func: plan.AggSum, Arg: x2plus, Name: "s3", Type: plan.Int64},
		{Func: plan.AggAvg, Arg: x2again, Name: "a2", Type: plan.AvgType(plan.Int64)},
		{Func: plan.AggSum, Arg: d, Name: "sd", Type: plan.SumType(d.Type)},
		{Func: plan.AggAvg, Arg: d, Name: "ad", Type: plan.AvgType(d.Type)},
	}
	want := []string{
		"NULL|6|9|6|-1.00|-1.000000",
		"a|4|6|2|1.51|0.755000",
		"b|14|21|7|4.50|2.250000",
		"c|NULL|NULL|NULL|NULL|NULL",
	}
	k := []expr.Expr{jaCol(0, "k", plan.Utf8)}
	for _, twoStage := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src := jaAggSource(t, mem, false)
		var op Operator
		var err error
		if twoStage {
			partial, err := NewHashAggregate(src, AggPartial, k, []string{"k"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			op, err = NewHashAggregate(&jaCoalesce{in: partial}, AggFinal, k, []string{"k"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
		} else if op, err = NewHashAggregate(&jaCoalesce{in: src}, AggSingle, k, []string{"k"}, aggs); err != nil {
			t.Fatal(err)
		}
		got := jaCollect(t, op, jaTC(mem, 8192, 0))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("two-stage %v: got\n%s\nwant\n%s", twoStage, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		src.release()
		mem.AssertSize(t, 0)
	}
}

// TestAggregateKeepsHashPartitioning: an aggregate over input hash
// partitioned on group columns is hash partitioned on those output
// columns, so a join on them needs no second repartition (HashPartitioned
// then returns it unchanged); partitioned on anything else, or with grand
// totals, it is not, and HashPartitioned adds a Repartition.
func TestAggregateKeepsHashPartitioning(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaPartitioned(t, mem, jaLeftSchema, [][]any{{1, "a", 1}, {2, "b", 2}}, 1, 2)
	defer src.release()
	k1 := jaCol(0, "lk1", plan.Int64)
	v := jaCol(2, "lv", plan.Int64)
	hashed := NewRepartition(src, Partitioning{Kind: PartHash, Count: 3, Keys: []expr.Expr{k1}})
	agg := func(in Operator, groupBy ...expr.Expr) *HashAggregate {
		names := make([]string, len(groupBy))
		for i := range names {
			names[i] = fmt.Sprint("g", i)
		}
		h, err := NewHashAggregate(in, AggSingle, groupBy, names, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Grouped by (lv, lk1): lk1 is output column 1.
	byBoth := agg(hashed, v, k1)
	out := byBoth.OutputPartitioning()
	if out.Kind != PartHash || out.Count != 3 || len(out.Keys) != 1 || out.Keys[0].(*expr.Column).Index != 1 {
		t.Fatalf("grouped by the hash key: %s, want Hash([g1@1], 3)", out)
	}
	if op := HashPartitioned(byBoth, []expr.Expr{&expr.Column{Index: 1, Name: "g1", Type: plan.Int64}}, 3); op != Operator(byBoth) {
		t.Errorf("a second repartition was added on the same keys: %s", op)
	}
	for name, op := range map[string]Operator{
		"other key":    hashed,
		"other count":  byBoth,
		"not grouped":  agg(hashed, v),
		"grand totals": mustGrandTotals(t, agg(hashed, k1)),
	} {
		keys := []expr.Expr{&expr.Column{Index: 0, Name: "g0", Type: plan.Int64}}
		count := 3
		switch name {
		case "other key":
			keys = []expr.Expr{v}
		case "other count":
			keys, count = []expr.Expr{&expr.Column{Index: 1, Name: "g1", Type: plan.Int64}}, 4
		}
		if _, ok := HashPartitioned(op, keys, count).(*Repartition); !ok {
			t.Errorf("%s: no Repartition added", name)
		}
	}
}

func mustGrandTotals(t *testing.T, h *HashAggregate) Operator {
	t.Helper()
	o, err := h.WithGrandTotals([]int64{0})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestHashAggregateSpills: under a memory limit a fraction of what its
// groups need, a single aggregate, and the final one of a two-stage
// aggregate, spill their groups' states to hash buckets and merge each
// bucket alone, giving the rows the unlimited aggregate gives; the
// partial aggregates pass their groups on instead of failing. Nothing stays
// reserved and no spill file is left.
func TestHashAggregateSpills(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := plan.Decimal(15, 2)
	schema := jaSchema("k", plan.Int64, "s", plan.Utf8, "d", dt, "x", plan.Int32)
	src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 2)}
	defer src.release()
	for p := range src.parts {
		for b := 0; b < 20; b++ {
			var rows [][]any
			for i := 0; i < 500; i++ {
				n := (p*20+b)*500 + i
				row := []any{n % 6000, fmt.Sprint("g", n%7), fmt.Sprintf("%d.%02d", n%997, n%100), n % 1000}
				if n%13 == 0 {
					row[3] = nil
				}
				rows = append(rows, row)
			}
			src.parts[p] = append(src.parts[p], jaBatch(t, mem, schema, rows))
		}
	}
	d, x := jaCol(2, "d", dt), jaCol(3, "x", plan.Int32)
	aggs := []AggregateExpr{
		{Func: plan.AggCountStar, Name: "cs", Type: plan.Int64},
		{Func: plan.AggSum, Arg: d, Name: "sd", Type: plan.SumType(dt)},
		{Func: plan.AggAvg, Arg: x, Name: "ax", Type: plan.AvgType(plan.Int32)},
		{Func: plan.AggMax, Arg: x, Name: "mx", Type: plan.Int32},
	}
	gb := []expr.Expr{jaCol(0, "k", plan.Int64), jaCol(1, "s", plan.Utf8)}
	names := []string{"k", "s"}
	single, err := NewHashAggregate(&jaCoalesce{in: src}, AggSingle, gb, names, aggs)
	if err != nil {
		t.Fatal(err)
	}
	want := jaCollect(t, single, jaTC(mem, 256, 0))
	partial, err := NewHashAggregate(src, AggPartial, gb, names, aggs)
	if err != nil {
		t.Fatal(err)
	}
	final, err := NewHashAggregate(&jaCoalesce{in: partial}, AggFinal, gb, names, aggs)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Operator{single, final} {
		tc := jaTC(mem, 256, 500_000)
		tc.SpillDir = t.TempDir()
		got := jaCollect(t, op, tc)
		if len(want) < 6000 || !slices.Equal(got, want) {
			t.Fatalf("%s under a memory limit differs from the unlimited aggregate (%d vs %d rows)", op, len(got), len(want))
		}
		if used := tc.Memory.Used(); used != 0 {
			t.Errorf("%s: %d bytes still reserved", op, used)
		}
		if left, _ := os.ReadDir(tc.SpillDir); len(left) != 0 {
			t.Errorf("spill files left behind: %v", left)
		}
		// Without a place to spill, the limit is the error.
		if _, err := jaRun(t, op, jaTC(mem, 256, 500_000)); !errors.Is(err, mempool.ErrResourcesExhausted) {
			t.Errorf("%s without a spill directory: err = %v, want the memory limit", op, err)
		}
	}
}

// TestAggCountSlicedNulls counts the non-NULL values of arrays that are
// slices of a larger one (their validity bits start mid-byte), into one
// group and into several, against a count row by row.
func TestAggCountSlicedNulls(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < 1000; i++ {
		if rng.IntN(3) == 0 {
			b.AppendNull()
		} else {
			b.Append(int64(i))
		}
	}
	whole := b.NewInt64Array()
	defer whole.Release()
	for _, groups := range []int{1, 5} {
		for _, off := range []int{0, 3, 13} {
			arg := array.NewSlice(whole, int64(off), int64(off+900))
			gids := make([]int32, arg.Len())
			want := make([]int64, groups)
			for i := range gids {
				gids[i] = int32(rng.IntN(groups))
				if arg.IsValid(i) {
					want[gids[i]]++
				}
			}
			c := &aggCount{}
			c.resize(groups)
			if err := c.update(gids, arg); err != nil {
				t.Fatal(err)
			}
			arg.Release()
			if !slices.Equal(c.counts, want) {
				t.Fatalf("groups=%d offset=%d: counts %v, want %v", groups, off, c.counts, want)
			}
		}
	}
	// count(NULL): an array of type NULL has no validity bitmap.
	nulls := array.NewNull(10)
	defer nulls.Release()
	for _, groups := range []int{1, 3} {
		c := &aggCount{}
		c.resize(groups)
		gids := make([]int32, nulls.Len())
		for i := range gids {
			gids[i] = int32(i % groups)
		}
		if err := c.update(gids, nulls); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.counts, make([]int64, groups)) {
			t.Fatalf("count(NULL) over %d groups: %v, want zeros", groups, c.counts)
		}
	}
}

// BenchmarkPartialAggregateDistinctKeys runs a partial aggregate over
// 80,000 rows whose four string keys never repeat (TPC-DS q11's customers
// joined to their yearly totals), grouping every row ("grouped": the early
// skip off) or passing rows on once ten thousand rows showed no repeats
// ("passed": the defaults).
func BenchmarkPartialAggregateDistinctKeys(b *testing.B) {
	const rows, batch = 80_000, 8192
	dt := plan.Decimal(17, 2)
	schema := jaSchema("id", plan.Utf8, "first", plan.Utf8, "last", plan.Utf8, "email", plan.Utf8, "d", dt)
	mem := memory.NewGoAllocator()
	src := jaBuild(mem, schema, rows, batch, func(rb *array.RecordBuilder, i int) {
		rb.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("AAAAAAAA%08d", i))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprint("First", i%997))
		rb.Field(2).(*array.StringBuilder).Append(fmt.Sprint("Last", i%4999))
		rb.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("first%d.last%d@example.com", i%997, i))
		rb.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i % 10_000)))
	})
	defer src.release()
	aggs := []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(4, "d", dt), Name: "s", Type: plan.SumType(dt)}}
	gb := []expr.Expr{jaCol(0, "id", plan.Utf8), jaCol(1, "first", plan.Utf8), jaCol(2, "last", plan.Utf8), jaCol(3, "email", plan.Utf8)}
	op, err := NewHashAggregate(src, AggPartial, gb, []string{"id", "first", "last", "email"}, aggs)
	if err != nil {
		b.Fatal(err)
	}
	defer func(points []PartialSkipPoint) { PartialSkip = points }(PartialSkip)
	for _, c := range []struct {
		name   string
		points []PartialSkipPoint
	}{{"grouped", nil}, {"passed", PartialSkip}} {
		b.Run(c.name, func(b *testing.B) {
			PartialSkip = c.points
			for i := 0; i < b.N; i++ {
				if n := jaDrain(b, op, NewTaskContext()); n != rows {
					b.Fatalf("%d rows out", n)
				}
			}
		})
	}
}

// jaBuild is a one-partition source of rows rows in batches of batch, row
// i appended to rb by add.
func jaBuild(mem memory.Allocator, schema *arrow.Schema, rows, batch int, add func(rb *array.RecordBuilder, i int)) *jaSource {
	var bs []arrow.RecordBatch
	for s := 0; s < rows; s += batch {
		rb := array.NewRecordBuilder(mem, schema)
		for i := s; i < min(rows, s+batch); i++ {
			add(rb, i)
		}
		bs = append(bs, rb.NewRecordBatch())
		rb.Release()
	}
	return &jaSource{schema: schema, parts: [][]arrow.RecordBatch{bs}}
}

// TestCoPartitionedJoinSides: a hash join's sides are joined partition by
// partition, without a shuffle or a broadcast, when both are hashed into
// the join's partition count on join keys paired at the same positions,
// of the same types (a subset of the keys will do); hashed on keys of
// other positions or types, into another count, or not hashed, they are
// not.
func TestCoPartitionedJoinSides(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaPartitioned(t, mem, jaLeftSchema, [][]any{{1, "a", 1}, {2, "b", 2}}, 1, 2)
	defer src.release()
	k1, k2, v := jaCol(0, "lk1", plan.Int64), jaCol(1, "lk2", plan.Utf8), jaCol(2, "lv", plan.Int64)
	hashed := func(count int, keys ...expr.Expr) Operator {
		return NewRepartition(src, Partitioning{Kind: PartHash, Count: count, Keys: keys})
	}
	both := []expr.Expr{k1, v}
	for _, c := range []struct {
		name          string
		build, probe  Operator
		bkeys, pkeys  []expr.Expr
		count         int
		coPartitioned bool
	}{
		{"same key, a subset", hashed(3, k1), hashed(3, k1), both, both, 3, true},
		{"all keys", hashed(3, k1, v), hashed(3, k1, v), both, both, 3, true},
		{"other positions", hashed(3, k1), hashed(3, v), both, both, 3, false},
		{"other order", hashed(3, k1, v), hashed(3, v, k1), both, both, 3, false},
		{"other type", hashed(3, k1), hashed(3, k2), []expr.Expr{k1}, []expr.Expr{k2}, 3, false},
		{"other count", hashed(3, k1), hashed(3, k1), both, both, 4, false},
		{"one side not hashed", hashed(3, k1), src, both, both, 3, false},
		{"not a key", hashed(3, k2), hashed(3, k2), both, both, 3, false},
	} {
		if got := CoPartitioned(c.build, c.probe, c.bkeys, c.pkeys, c.count); got != c.coPartitioned {
			t.Errorf("%s: CoPartitioned = %v, want %v", c.name, got, c.coPartitioned)
		}
	}
}
