package expr

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

func distinctFrom(l, r plan.Expr, negated bool) *plan.DistinctFrom {
	return &plan.DistinctFrom{L: l, R: r, Negated: negated}
}

func TestDistinctFrom(t *testing.T) {
	// i32 and d1 are NULL in the same row (2); i32 and z in different rows.
	asDec := cast(col("i32"), plan.Decimal(15, 2))
	runCases(t, []exprCase{
		{name: "self distinct", e: distinctFrom(col("i32"), col("i32"), false), want: "false false false false"},
		{name: "self not distinct", e: distinctFrom(col("s"), col("s"), true), want: "true true true true"},
		{name: "both null in one row", e: distinctFrom(asDec, col("d1"), true), want: "false false true false"},
		{name: "both null distinct", e: distinctFrom(asDec, col("d1"), false), want: "true true false true"},
		{name: "nulls in different rows", e: distinctFrom(col("i32"), col("z"), true), want: "false false false false"},
		{name: "literal right", e: distinctFrom(col("i32"), i32(2), false), want: "true false true true"},
		{name: "literal left", e: distinctFrom(str("abc"), col("s"), true), want: "true false false false"},
		{name: "null literal", e: distinctFrom(col("i32"), lit(plan.Int32, nil), true), want: "false false true false"},
		{name: "null both", e: distinctFrom(lit(plan.Int32, nil), lit(plan.Int32, nil), false), want: "false false false false"},
		{name: "bool", e: distinctFrom(col("b"), lit(plan.Bool, true), false), want: "false true true false"},
		{name: "timestamp", e: distinctFrom(col("ts"), col("ts"), true), want: "true true true true"},
		{name: "date", e: distinctFrom(col("dt"), date("2019-02-28"), true), want: "false true false false"},
		{name: "float", e: distinctFrom(col("f64"), f64(0), false), want: "true true true false"},
	})
}

func TestDistinctFromRefusesArrays(t *testing.T) {
	arr := fn("regexp_match", plan.TextArray, col("s"), str("b"))
	_, err := Compile(distinctFrom(arr, arr, false), testSchema())
	if err == nil || !strings.Contains(err.Error(), "cannot compare") {
		t.Fatalf("got %v, want a cannot compare error", err)
	}
}

func TestDistinctFromProtoRoundTrip(t *testing.T) {
	for _, neg := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		batch := testBatch(t, mem)
		orig, err := Compile(distinctFrom(col("i32"), i32(2), neg), testSchema())
		if err != nil {
			t.Fatal(err)
		}
		got := roundTrip(t, orig)
		if !reflect.DeepEqual(got, orig) {
			t.Fatalf("decoded %#v\nwant %#v", got, orig)
		}
		if a, b := evalString(t, got, batch, mem), evalString(t, orig, batch, mem); a != b {
			t.Fatalf("decoded gives %s, original %s", a, b)
		}
		batch.Release()
		mem.AssertSize(t, 0)
	}
}
