package expr

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"sluice/plan"
	"sluice/rpc"
)

// wire sends an expression message through its binary encoding, as the
// scheduler does when it ships a plan.
func wire[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// roundTrip encodes e, sends it over the wire and decodes it.
func roundTrip(t *testing.T, e Expr) Expr {
	t.Helper()
	p, err := ToProto(e)
	if err != nil {
		t.Fatalf("encode %s: %v", e, err)
	}
	out, err := FromProto(wire(t, p))
	if err != nil {
		t.Fatalf("decode %s: %v", e, err)
	}
	return out
}

// evalString evaluates e on the test batch: its rendered rows, or the error.
func evalString(t *testing.T, e Expr, batch arrow.RecordBatch, mem memory.Allocator) string {
	t.Helper()
	out, err := e.Eval(batch, mem)
	if err != nil {
		return "error: " + err.Error()
	}
	defer out.Release()
	return render(t, out, mem)
}

func TestExprProtoRoundTrip(t *testing.T) {
	ts, err := parseTimestamp("2020-01-31 10:00:00")
	if err != nil {
		t.Fatal(err)
	}
	caseExpr := &plan.Case{Whens: []plan.When{
		{Cond: bin(plan.OpGt, col("i32"), i32(1)), Then: str("big")},
		{Cond: bin(plan.OpLt, col("i32"), i32(0)), Then: str("neg")},
	}, Else: str("small"), Typ: plan.Utf8}
	// Every node type of the package, every operator class and every
	// literal type appears at least once.
	cases := []struct {
		name string
		e    plan.Expr
	}{
		{"column", col("d1")},
		{"literal bool", lit(plan.Bool, true)},
		{"literal int32", i32(-7)},
		{"literal int64", i64(math.MinInt64)},
		{"literal float64", f64(-0.125)},
		{"literal decimal negative", dec("-12345678901234567890.12", 38, 2)},
		{"literal decimal", dec("0.05", 15, 2)},
		{"literal utf8", str("it's ü")},
		{"literal date32", date("1998-12-01")},
		{"literal timestamp", lit(plan.Timestamp, ts)},
		{"literal interval", interval(3, -2)},
		{"literal null", lit(plan.Null, nil)},
		{"literal typed null", lit(plan.Decimal(12, 2), nil)},
		{"arithmetic", bin(plan.OpMul, col("d1"), bin(plan.OpSub, dec("1", 1, 0), col("d2")))},
		{"mod", bin(plan.OpMod, col("i64"), i64(7))},
		{"date arithmetic", bin(plan.OpAdd, col("dt"), interval(1, 0))},
		{"comparison", bin(plan.OpLtEq, col("dt"), date("2019-03-01"))},
		{"logic", bin(plan.OpOr, bin(plan.OpAnd, col("b"), bin(plan.OpGt, col("i32"), i32(0))), &plan.Not{X: col("b")})},
		{"concat", bin(plan.OpConcat, col("s"), str("x"))},
		{"not", &plan.Not{X: col("b")}},
		{"negate", &plan.Negate{X: col("d1")}},
		{"is null", &plan.IsNull{X: col("i64")}},
		{"is not null", &plan.IsNull{X: col("s"), Negated: true}},
		{"cast", cast(col("i32"), plan.Decimal(12, 2))},
		{"cast string", cast(str("2020-02-29"), plan.Date32)},
		{"try_cast", &plan.Cast{X: col("s"), To: plan.Int64, Try: true}},
		{"case", caseExpr},
		{"case no else", &plan.Case{Whens: []plan.When{{Cond: col("b"), Then: col("i64")}}, Typ: plan.Int64}},
		{"coalesce", fn("coalesce", plan.Int64, col("i64"), i64(99))},
		{"concat function", fn("concat_ws", plan.Utf8, str(","), col("s"), lit(plan.Utf8, nil), col("pat"))},
		{"greatest", fn("greatest", plan.Int64, col("i64"), i64(15))},
		{"date_trunc", fn("date_trunc", plan.Timestamp, str("month"), col("ts"))},
		{"regexp_replace", fn("regexp_replace", plan.Utf8, col("s"), str("l+"), str("L"), str("g"))},
		{"regexp_match", fn("array_element", plan.Utf8, fn("regexp_match", plan.TextArray, col("s"), str("(l+)"), str("i")), i64(1))},
		{"array cast", cast(fn("regexp_match", plan.TextArray, col("s"), str("l+")), plan.Utf8)},
		{"lpad", fn("lpad", plan.Utf8, col("s"), i64(6), str("*"))},
		{"extract week", fn("extract_week", plan.Int32, col("dt"))},
		{"nullif", fn("nullif", plan.Int32, col("i32"), i32(2))},
		{"in", &plan.InList{X: col("i32"), List: []plan.Expr{i32(1), lit(plan.Int32, nil)}}},
		{"not in", &plan.InList{X: col("s"), List: []plan.Expr{str("abc")}, Negated: true}},
		{"like", like(col("s"), str("%b%"), false)},
		{"not like", like(col("s"), str("a%"), true)},
		{"like per-row pattern", like(col("s"), col("pat"), false)},
		{"substring", fn("substring", plan.Utf8, col("s"), i64(2), i64(2))},
		{"extract", fn("extract_year", plan.Int32, col("dt"))},
		{"extract month", fn("extract_month", plan.Int32, col("ts"))},
		{"extract day", fn("extract_day", plan.Int32, col("dt"))},
		{"upper", fn("upper", plan.Utf8, col("s"))},
		{"lower", fn("lower", plan.Utf8, col("s"))},
		{"length", fn("length", plan.Int64, col("s"))},
		{"trim", fn("trim", plan.Utf8, col("s"))},
		{"abs", fn("abs", plan.Decimal(15, 2), col("d1"))},
		{"round", fn("round", plan.Decimal(10, 4), col("d4"), i32(2))},
		{"error at eval", bin(plan.OpDiv, col("i32"), col("z"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := testBatch(t, mem)
			defer batch.Release()
			orig, err := Compile(tc.e, testSchema())
			if err != nil {
				t.Fatal(err)
			}
			got := roundTrip(t, orig)
			if !reflect.DeepEqual(got, orig) {
				t.Fatalf("decoded %#v\nwant %#v", got, orig)
			}
			if got.String() != orig.String() || !arrow.TypeEqual(got.DataType(), orig.DataType()) {
				t.Fatalf("decoded %s %s, want %s %s", got, got.DataType(), orig, orig.DataType())
			}
			want := evalString(t, orig, batch, mem)
			if res := evalString(t, got, batch, mem); res != want {
				t.Fatalf("decoded evaluates to %s, original to %s", res, want)
			}
		})
	}
}

func TestTypeProtoRoundTrip(t *testing.T) {
	types := []arrow.DataType{plan.Null, plan.Bool, plan.Int32, plan.Int64, plan.Float64, plan.Utf8,
		plan.Date32, plan.Timestamp, plan.Decimal(38, 10), plan.Decimal(1, 0), plan.Interval}
	for _, typ := range types {
		p, err := TypeToProto(typ)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		got, err := TypeFromProto(wire(t, p))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if !arrow.TypeEqual(got, typ) {
			t.Fatalf("%s decoded as %s", typ, got)
		}
	}
	for _, bad := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.BinaryTypes.LargeString,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, arrow.FixedWidthTypes.Timestamp_ns,
		&arrow.Decimal128Type{Precision: 0}, &arrow.Decimal128Type{Precision: 5, Scale: -1}, nil} {
		if _, err := TypeToProto(bad); err == nil {
			t.Errorf("%v: encoded, want an error", bad)
		}
	}
	for _, bad := range []*rpc.ArrowType{nil, {Id: 99}, {Id: rpc.ArrowType_DECIMAL128, Precision: 39},
		{Id: rpc.ArrowType_DECIMAL128, Precision: 5, Scale: 6}, {Id: rpc.ArrowType_DECIMAL128}} {
		if got, err := TypeFromProto(bad); err == nil {
			t.Errorf("%v: decoded as %s, want an error", bad, got)
		}
	}
}

func TestLiteralProtoRoundTrip(t *testing.T) {
	lits := []plan.Literal{
		{Typ: plan.Decimal(38, 0), Val: decimal128.MaxDecimal128},
		{Typ: plan.Decimal(38, 0), Val: decimal128.MaxDecimal128.Negate()},
		{Typ: plan.Decimal(5, 2), Val: decimal128.FromI64(-1)},
		{Typ: plan.Float64, Val: math.Inf(-1)},
		{Typ: plan.Int32, Val: int32(math.MinInt32)},
		{Typ: plan.Utf8, Val: ""},
		{Typ: plan.Interval, Val: arrow.MonthDayNanoInterval{Months: -1, Days: 2, Nanoseconds: -3}},
		{Typ: plan.Bool, Val: false},
		{Typ: plan.Utf8},
	}
	for _, l := range lits {
		p, err := LiteralToProto(l)
		if err != nil {
			t.Fatalf("%s: %v", l.String(), err)
		}
		got, err := LiteralFromProto(wire(t, p))
		if err != nil {
			t.Fatalf("%s: %v", l.String(), err)
		}
		if !reflect.DeepEqual(got, l) {
			t.Fatalf("%#v decoded as %#v", l, got)
		}
	}
	nan, err := LiteralFromProto(wire(t, must(LiteralToProto(plan.Literal{Typ: plan.Float64, Val: math.NaN()}))))
	if err != nil || !math.IsNaN(nan.Val.(float64)) {
		t.Fatalf("NaN decoded as %v, %v", nan.Val, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSchemaProtoRoundTrip(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: plan.Int64},
		{Name: "b b", Type: plan.Decimal(15, 2), Nullable: true},
		{Name: "", Type: plan.Timestamp, Nullable: true},
	}, nil)
	p, err := SchemaToProto(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SchemaFromProto(wire(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(s) {
		t.Fatalf("decoded %s, want %s", got, s)
	}
	if _, err := SchemaToProto(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Uint64}}, nil)); err == nil ||
		!strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("unsupported field type: error %v, want one naming the field", err)
	}
	if _, err := SchemaFromProto(&rpc.Schema{Fields: []*rpc.Field{{Name: "x"}}}); err == nil {
		t.Fatal("field without a type decoded")
	}
}

// opaque is an expression type the codec does not know.
type opaque struct{ Column }

func TestExprProtoErrors(t *testing.T) {
	colI32 := &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Column{Column: &rpc.ColumnExpr{Index: 0, Name: "i32", Type: &rpc.ArrowType{Id: rpc.ArrowType_INT32}}}}
	colB := &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Column{Column: &rpc.ColumnExpr{Index: 7, Name: "b", Type: &rpc.ArrowType{Id: rpc.ArrowType_BOOL}}}}
	strLit := func(s string) *rpc.PhysicalExpr {
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Literal{Literal: &rpc.Literal{
			Type: &rpc.ArrowType{Id: rpc.ArrowType_UTF8}, Value: &rpc.Literal_StringValue{StringValue: s}}}}
	}
	i32Type := &rpc.ArrowType{Id: rpc.ArrowType_INT32}
	decodeCases := []struct {
		name string
		p    *rpc.PhysicalExpr
		want string
	}{
		{"nil", nil, "missing expression"},
		{"empty", &rpc.PhysicalExpr{}, "unknown expression kind"},
		{"negative column", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Column{Column: &rpc.ColumnExpr{Index: -1, Type: i32Type}}}, "invalid column"},
		{"column without type", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Column{Column: &rpc.ColumnExpr{Name: "c"}}}, "missing type"},
		{"literal value mismatch", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Literal{Literal: &rpc.Literal{
			Type: i32Type, Value: &rpc.Literal_StringValue{StringValue: "x"}}}}, "does not match type"},
		{"literal without value", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Literal{Literal: &rpc.Literal{Type: i32Type}}}, "does not match type"},
		{"short decimal", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Literal{Literal: &rpc.Literal{
			Type:  &rpc.ArrowType{Id: rpc.ArrowType_DECIMAL128, Precision: 10, Scale: 2},
			Value: &rpc.Literal_DecimalValue{DecimalValue: []byte{1, 2}}}}}, "16"},
		{"unknown operator", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Binary{Binary: &rpc.BinaryExpr{
			Op: 99, Left: colI32, Right: colI32, Type: i32Type}}}, "unknown binary operator"},
		{"binary missing operand", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Binary{Binary: &rpc.BinaryExpr{
			Op: int32(plan.OpAdd), Left: colI32, Type: i32Type}}}, "missing expression"},
		{"not without operand", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Not{Not: &rpc.UnaryExpr{}}}, "missing expression"},
		{"unsupported cast", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Cast{Cast: &rpc.CastExpr{
			X: colB, To: &rpc.ArrowType{Id: rpc.ArrowType_DATE32}}}}, "cannot cast"},
		{"malformed like pattern", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Like{Like: &rpc.LikeExpr{
			X: strLit("a"), Pattern: strLit(`a\`)}}}, "escape"},
		{"unknown function", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Func{Func: &rpc.FuncExpr{
			Name: "frobnicate", Args: []*rpc.PhysicalExpr{colI32}, Type: i32Type}}}, "unknown function"},
		{"wrong arity", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Func{Func: &rpc.FuncExpr{
			Name: "abs", Type: i32Type}}}, "wrong number of arguments"},
		{"empty coalesce", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Coalesce{Coalesce: &rpc.FuncExpr{Type: i32Type}}}, "at least one"},
		{"case without type", &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Case{Case: &rpc.CaseExpr{
			Whens: []*rpc.WhenThen{{When: colB, Then: colI32}}}}}, "missing type"},
	}
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := FromProto(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decoded %v, error %v, want an error containing %q", e, err, tc.want)
			}
		})
	}
	encodeCases := []struct {
		name string
		e    Expr
		want string
	}{
		{"nil", nil, "missing expression"},
		{"foreign node", &opaque{Column{Name: "x", Type: plan.Int32}}, "*expr.opaque"},
		{"nested foreign node", &Not{X: &opaque{Column{Name: "x", Type: plan.Bool}}}, "*expr.opaque"},
		{"unsupported type", &Column{Name: "u", Type: arrow.PrimitiveTypes.Uint8}, "not one of sluice's types"},
		{"literal value mismatch", &Literal{Value: plan.Literal{Typ: plan.Int64, Val: int32(1)}}, "does not match type"},
		{"decimal as big", &Literal{Value: plan.Literal{Typ: plan.Decimal(5, 0), Val: 12}}, "does not match type"},
	}
	for _, tc := range encodeCases {
		t.Run("encode "+tc.name, func(t *testing.T) {
			p, err := ToProto(tc.e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("encoded %v, error %v, want an error containing %q", p, err, tc.want)
			}
		})
	}
}
