package expr

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// The test table: every column has 4 rows and one NULL in a different row.
var testCols = []struct {
	name string
	typ  arrow.DataType
	vals []any // nil = NULL; strings for decimals/dates are parsed
}{
	{"i32", plan.Int32, []any{int32(1), int32(2), nil, int32(-4)}},
	{"i64", plan.Int64, []any{int64(10), int64(20), int64(30), nil}},
	{"f64", plan.Float64, []any{1.5, nil, -2.25, 0.0}},
	{"d1", plan.Decimal(15, 2), []any{"0.10", "1.00", nil, "-2.50"}},
	{"d2", plan.Decimal(15, 2), []any{"0.20", "3.00", "1.00", nil}},
	{"s", plan.Utf8, []any{"abc", "", nil, "héllo"}},
	{"dt", plan.Date32, []any{"2020-01-31", "2019-02-28", nil, "1970-01-01"}},
	{"b", plan.Bool, []any{true, false, nil, true}},
	{"ts", plan.Timestamp, []any{"2020-01-31 10:00:00", nil, "1969-12-31 23:59:59", "2000-02-29 00:00:00.5"}},
	{"z", plan.Int32, []any{int32(0), int32(1), int32(0), nil}},
	{"pat", plan.Utf8, []any{"a%", "%", "x", nil}},
	{"d4", plan.Decimal(10, 4), []any{"1.0000", "0.3333", "2.5000", nil}},
}

func testSchema() plan.Schema {
	s := make(plan.Schema, len(testCols))
	for i, c := range testCols {
		s[i] = plan.Column{ID: plan.ColumnID(100 + i), Name: c.name, Type: c.typ, Nullable: true}
	}
	return s
}

// col returns a reference to the named test column.
func col(name string) *plan.ColRef {
	for i, c := range testCols {
		if c.name == name {
			return &plan.ColRef{ID: plan.ColumnID(100 + i), Name: name, Typ: c.typ}
		}
	}
	panic("no column " + name)
}

func testBatch(t testing.TB, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	fields := make([]arrow.Field, len(testCols))
	arrs := make([]arrow.Array, len(testCols))
	for i, c := range testCols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
		b := array.NewBuilder(mem, c.typ)
		for _, v := range c.vals {
			if v == nil {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.Decimal128Builder:
				d := c.typ.(*arrow.Decimal128Type)
				n, err := parseDecimal(v.(string), d.Scale)
				if err != nil {
					t.Fatal(err)
				}
				bb.Append(n)
			case *array.Date32Builder:
				d, err := parseDate(v.(string))
				if err != nil {
					t.Fatal(err)
				}
				bb.Append(arrow.Date32(d))
			case *array.TimestampBuilder:
				ts, err := parseTimestamp(v.(string))
				if err != nil {
					t.Fatal(err)
				}
				bb.Append(arrow.Timestamp(ts))
			case *array.Int32Builder:
				bb.Append(v.(int32))
			case *array.Int64Builder:
				bb.Append(v.(int64))
			case *array.Float64Builder:
				bb.Append(v.(float64))
			case *array.StringBuilder:
				bb.Append(v.(string))
			case *array.BooleanBuilder:
				bb.Append(v.(bool))
			}
		}
		arrs[i] = b.NewArray()
		b.Release()
	}
	rb := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, 4)
	for _, a := range arrs {
		a.Release()
	}
	return rb
}

// render prints every row, "NULL" for nulls.
func render(t testing.TB, a arrow.Array, mem memory.Allocator) string {
	t.Helper()
	if a.DataType().ID() == arrow.NULL {
		return strings.TrimSuffix(strings.Repeat("NULL ", a.Len()), " ")
	}
	s, err := castToText(a, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	parts := make([]string, a.Len())
	for i := range parts {
		if s.IsNull(i) {
			parts[i] = "NULL"
		} else {
			parts[i] = s.(*array.String).Value(i)
		}
	}
	return strings.Join(parts, " ")
}

func lit(typ arrow.DataType, v any) *plan.Literal { return &plan.Literal{Typ: typ, Val: v} }

func i32(v int32) *plan.Literal   { return lit(plan.Int32, v) }
func i64(v int64) *plan.Literal   { return lit(plan.Int64, v) }
func f64(v float64) *plan.Literal { return lit(plan.Float64, v) }
func str(v string) *plan.Literal  { return lit(plan.Utf8, v) }

func dec(s string, p, sc int32) *plan.Literal {
	n, err := parseDecimal(s, sc)
	if err != nil {
		panic(err)
	}
	return lit(plan.Decimal(p, sc), n)
}

func date(s string) *plan.Literal {
	d, err := parseDate(s)
	if err != nil {
		panic(err)
	}
	return lit(plan.Date32, d)
}

func bin(op plan.BinaryOp, l, r plan.Expr) *plan.Binary {
	var typ arrow.DataType = plan.Bool
	switch op {
	case plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpDiv, plan.OpMod:
		var err error
		if typ, err = plan.ArithmeticType(op, l.Type(), r.Type()); err != nil {
			panic(err)
		}
	case plan.OpConcat:
		typ = plan.Utf8
	}
	return &plan.Binary{Op: op, L: l, R: r, Typ: typ}
}

// exprCase is one table-driven expression test.
type exprCase struct {
	name    string
	e       plan.Expr
	want    string // rendered rows
	wantErr string // substring of the error, if an error is expected
}

func runCases(t *testing.T, cases []exprCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := testBatch(t, mem)
			defer batch.Release()
			pe, err := Compile(tc.e, testSchema())
			if err == nil {
				var out arrow.Array
				out, err = pe.Eval(batch, mem)
				if err == nil {
					defer out.Release()
					if !arrow.TypeEqual(out.DataType(), tc.e.Type()) {
						t.Fatalf("type %s, want %s", out.DataType(), tc.e.Type())
					}
					if out.Len() != 4 {
						t.Fatalf("len %d", out.Len())
					}
					if tc.wantErr != "" {
						t.Fatalf("got %s, want error %q", render(t, out, mem), tc.wantErr)
					}
					if got := render(t, out, mem); got != tc.want {
						t.Fatalf("%s\n got: %s\nwant: %s", tc.e, got, tc.want)
					}
					// On a slice of the batch (arrays with an offset) the
					// rows are the same.
					sub := batch.NewSlice(1, 4)
					defer sub.Release()
					subOut, err := pe.Eval(sub, mem)
					if err != nil {
						t.Fatalf("on a slice: %v", err)
					}
					defer subOut.Release()
					want := array.NewSlice(out, 1, 4)
					defer want.Release()
					if got, want := render(t, subOut, mem), render(t, want, mem); got != want {
						t.Fatalf("%s on rows 1-3\n got: %s\nwant: %s", tc.e, got, want)
					}
					return
				}
			}
			if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
