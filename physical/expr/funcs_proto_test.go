package expr

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestMoreFuncsProtoRoundTrip ships a call of every function of
// funcs_math.go, funcs_strings.go and funcs_dates.go through protobuf, as
// the scheduler does, and checks the executor's copy computes the same.
func TestMoreFuncsProtoRoundTrip(t *testing.T) {
	dbl := cast(col("i64"), plan.Float64)
	calls := []*plan.Func{
		fn("sqrt", plan.Float64, dbl), fn("cbrt", plan.Float64, dbl), fn("exp", plan.Float64, col("f64")),
		fn("ln", plan.Float64, dbl), fn("log10", plan.Float64, dbl), fn("log2", plan.Float64, dbl),
		fn("sin", plan.Float64, col("f64")), fn("cos", plan.Float64, col("f64")), fn("tan", plan.Float64, col("f64")),
		fn("cot", plan.Float64, col("f64")), fn("asin", plan.Float64, f64(0.5)), fn("acos", plan.Float64, f64(0.5)),
		fn("atan", plan.Float64, col("f64")), fn("degrees", plan.Float64, col("f64")), fn("radians", plan.Float64, col("f64")),
		fn("power", plan.Float64, col("f64"), f64(2)), fn("atan2", plan.Float64, col("f64"), f64(2)),
		fn("log", plan.Float64, f64(2), dbl), fn("ceil", plan.Decimal(14, 0), col("d1")),
		fn("floor", plan.Float64, col("f64")), fn("trunc", plan.Decimal(8, 2), col("d4"), i64(2)),
		fn("sign", plan.Int32, col("i32")), fn("gcd", plan.Int64, col("i64"), i64(4)), fn("lcm", plan.Int32, col("i32"), i32(3)),
		fn("factorial", plan.Decimal(38, 0), i64(5)), fn("random", plan.Float64),
		fn("replace", plan.Utf8, col("s"), str("l"), str("L")), fn("left", plan.Utf8, col("s"), i64(2)),
		fn("right", plan.Utf8, col("s"), i64(-1)), fn("reverse", plan.Utf8, col("s")),
		fn("strpos", plan.Int32, col("s"), str("l")), fn("translate", plan.Utf8, col("s"), str("lé"), str("L")),
		fn("initcap", plan.Utf8, col("s")), fn("md5", plan.Utf8, col("s")), fn("sha256", plan.Utf8, col("s")),
		fn("ends_with", plan.Bool, col("s"), str("o")), fn("contains", plan.Bool, col("s"), str("b")),
		fn("octet_length", plan.Int32, col("s")), fn("bit_length", plan.Int32, col("s")),
		fn("to_hex", plan.Utf8, col("i32")), fn("regexp_extract", plan.Utf8, col("s"), str("(l+)"), i64(1)),
		fn("format", plan.Utf8, str("%s-%L"), col("s"), col("pat")),
		fn("extract_second", plan.Decimal(8, 6), col("ts")), fn("extract_millisecond", plan.Float64, col("ts")),
		fn("extract_microsecond", plan.Int32, col("ts")), fn("extract_epoch", plan.Decimal(20, 0), col("dt")),
		fn("extract_isoyear", plan.Int32, col("dt")), fn("extract_decade", plan.Int32, col("dt")),
		fn("extract_century", plan.Int32, col("ts")), fn("extract_millennium", plan.Int32, col("ts")),
		fn("date_diff", plan.Int64, str("month"), col("ts"), ts("2021-01-01 00:00:00")),
		fn("make_date", plan.Date32, cast(col("i64"), plan.Int64), i64(1), i64(2)),
		fn("make_timestamp", plan.Timestamp, i64(2020), i64(1), i64(2), i64(3), i64(4), col("f64")),
		fn("last_day", plan.Date32, col("dt")), fn("to_timestamp", plan.Timestamp, col("f64")),
		fn("to_char", plan.Utf8, col("ts"), str("YYYY-MM-DD")),
		fn("to_date", plan.Date32, str("2020-01-02"), str("YYYY-MM-DD")),
		fn("to_timestamp", plan.Timestamp, str("2020-01-02 03"), str("YYYY-MM-DD HH24")),
		fn("strptime", plan.Timestamp, str("2020-01-02"), str("%Y-%m-%d")), fn("strftime", plan.Utf8, col("ts"), str("%Y")),
	}
	covered := map[string]bool{}
	for _, call := range calls {
		covered[call.Name] = true
		t.Run(call.Name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := testBatch(t, mem)
			defer batch.Release()
			orig, err := Compile(call, testSchema())
			if err != nil {
				t.Fatal(err)
			}
			got := roundTrip(t, orig)
			if !reflect.DeepEqual(got, orig) {
				t.Fatalf("decoded %#v\nwant %#v", got, orig)
			}
			if call.Name == "random" {
				return // a fresh value on every evaluation
			}
			want := evalString(t, orig, batch, mem)
			if res := evalString(t, got, batch, mem); res != want {
				t.Fatalf("decoded evaluates to %s, original to %s", res, want)
			}
		})
	}
	for _, names := range []map[string][2]int{mathArity, stringArity, dateArity, {"to_date": {}, "strptime": {}}} {
		for name := range names {
			if !covered[name] {
				t.Errorf("no round-trip case for %s", name)
			}
		}
	}
}
