package expr

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

func TestArrayBuildFuncs(t *testing.T) {
	// i32 is 1, 2, NULL, -4; s is abc, '', NULL, héllo; d1 0.10, 1.00, NULL, -2.50.
	runCases(t, []exprCase{
		{name: "make_array ints", e: fn("make_array", plan.ArrayOf(plan.Int32), col("i32"), i32(7)), want: "{1,7} {2,7} {NULL,7} {-4,7}"},
		{name: "make_array decimals", e: fn("make_array", plan.ArrayOf(plan.Decimal(15, 2)), col("d1")), want: "{0.10} {1.00} {NULL} {-2.50}"},
		{name: "make_array dates", e: fn("make_array", plan.ArrayOf(plan.Date32), col("dt"), lit(plan.Date32, nil)), want: "{2020-01-31,NULL} {2019-02-28,NULL} {NULL,NULL} {1970-01-01,NULL}"},
		{name: "make_array empty", e: fn("make_array", plan.ArrayOf(plan.Int64)), want: "{} {} {} {}"},
		{name: "element of int array", e: fn("array_element", plan.Int32, fn("make_array", plan.ArrayOf(plan.Int32), col("i32"), i32(7)), i64(2)), want: "7 7 7 7"},
		{name: "cardinality", e: fn("cardinality", plan.Int32, fn("make_array", plan.ArrayOf(plan.Int32), col("i32"), i32(7))), want: "2 2 2 2"},
		{name: "array_to_string of ints", e: fn("array_to_string", plan.Utf8, fn("make_array", plan.ArrayOf(plan.Int32), col("i32"), i32(7)), str("-"), str("?")), want: "1-7 2-7 ?-7 -4-7"},
		{name: "string_to_array", e: fn("string_to_array", plan.TextArray, col("s"), str("b")), want: "{a,c} {} NULL {héllo}"},
		{name: "string_to_array chars", e: fn("string_to_array", plan.TextArray, col("s"), lit(plan.Utf8, nil)), want: "{a,b,c} {} NULL {h,é,l,l,o}"},
		{name: "string_to_array null string", e: fn("string_to_array", plan.TextArray, col("s"), str("b"), str("a")), want: "{NULL,c} {} NULL {héllo}"},
	})
}

func TestArrayTypesProtoRoundTrip(t *testing.T) {
	for _, typ := range []arrow.DataType{plan.ArrayOf(plan.Int32), plan.ArrayOf(plan.Int64), plan.ArrayOf(plan.Decimal(12, 3)), plan.ArrayOf(plan.Date32),
		plan.ArrayOf(plan.Timestamp), plan.ArrayOf(plan.Bool), plan.ArrayOf(plan.Float64), plan.TextArray, plan.ArrayOf(plan.Interval)} {
		p, err := TypeToProto(typ)
		if err != nil {
			t.Fatal(err)
		}
		back, err := TypeFromProto(wire(t, p))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, typ) && back.String() != typ.String() {
			t.Fatalf("%s came back as %s", typ, back)
		}
	}
	if _, err := TypeToProto(plan.ArrayOf(plan.TextArray)); err == nil {
		t.Fatal("arrays of arrays encoded")
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := testBatch(t, mem)
	defer batch.Release()
	orig, err := Compile(fn("make_array", plan.ArrayOf(plan.Int32), col("i32"), i32(7)), testSchema())
	if err != nil {
		t.Fatal(err)
	}
	got := roundTrip(t, orig)
	if a, b := evalString(t, got, batch, mem), evalString(t, orig, batch, mem); a != b {
		t.Fatalf("decoded gives %s, original %s", a, b)
	}
}

func TestArrayQuantified(t *testing.T) {
	// i32 is 1, 2, NULL, -4.
	arr := func(vs ...plan.Expr) plan.Expr { return fn("make_array", plan.ArrayOf(plan.Int32), vs...) }
	op := func(s string) plan.Expr { return str(s) }
	runCases(t, []exprCase{
		{name: "= any", e: fn("array_any", plan.Bool, col("i32"), arr(i32(1), i32(-4)), op("=")), want: "true false NULL true"},
		{name: "= any with null element", e: fn("array_any", plan.Bool, col("i32"), arr(i32(1), lit(plan.Int32, nil)), op("=")), want: "true NULL NULL NULL"},
		{name: "> all", e: fn("array_all", plan.Bool, col("i32"), arr(i32(0), i32(1)), op(">")), want: "false true NULL false"},
		{name: "<> all of column", e: fn("array_all", plan.Bool, i32(2), arr(col("i32")), op("<>")), want: "true false NULL true"},
		{name: "empty array", e: fn("array_any", plan.Bool, col("i32"), fn("make_array", plan.ArrayOf(plan.Int32)), op("=")), want: "false false false false"},
		{name: "empty array all", e: fn("array_all", plan.Bool, col("i32"), fn("make_array", plan.ArrayOf(plan.Int32)), op("=")), want: "true true true true"},
		{name: "bad operator", e: fn("array_any", plan.Bool, col("i32"), arr(i32(1)), op("~")), wantErr: "operator must be one of"},
	})
}

func TestArrayConcat(t *testing.T) {
	// i32 is 1, 2, NULL, -4.
	ints := plan.ArrayOf(plan.Int32)
	arr := func(vs ...plan.Expr) plan.Expr { return fn("make_array", ints, vs...) }
	nullArr := lit(ints, nil)
	runCases(t, []exprCase{
		{name: "cat", e: fn("array_cat", ints, arr(col("i32")), arr(i32(9))), want: "{1,9} {2,9} {NULL,9} {-4,9}"},
		{name: "cat null", e: fn("array_cat", ints, nullArr, arr(col("i32"))), want: "{1} {2} {NULL} {-4}"},
		{name: "cat nulls", e: fn("array_cat", ints, nullArr, nullArr), want: "NULL NULL NULL NULL"},
		{name: "append", e: fn("array_append", ints, arr(i32(0)), col("i32")), want: "{0,1} {0,2} {0,NULL} {0,-4}"},
		{name: "prepend to null", e: fn("array_prepend", ints, col("i32"), nullArr), want: "{1} {2} {NULL} {-4}"},
	})
}
