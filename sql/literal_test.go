package sql

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/plan"
)

func TestNumberLiteral(t *testing.T) {
	tests := []struct {
		text, typ, val string
	}{
		{"42", "BIGINT", "42"},
		{"0.05", "DECIMAL(2,2)", "0.05"},
		{"123.450", "DECIMAL(6,3)", "123.450"},
		{"99999999999999999999", "DECIMAL(20,0)", "99999999999999999999"},
		{"1e3", "DOUBLE", "1000"},
	}
	for _, tc := range tests {
		l, ok := numberLiteral(tc.text)
		if !ok || plan.TypeName(l.Typ) != tc.typ || l.String() != tc.val {
			t.Errorf("%s: got %v %v ok=%v, want %s %s", tc.text, l.Typ, l, ok, tc.typ, tc.val)
		}
	}
}

// TestNumberLiteralTooWide checks that a literal beyond DECIMAL(38) is
// refused, not rounded to a DOUBLE.
func TestNumberLiteralTooWide(t *testing.T) {
	for _, s := range []string{
		"10000000000000000000000000000000000000000",  // 41 digits
		"1.2345678901234567890123456789012345678901", // 41 digits
		"123456789012345678901234567890123456789",    // 39 digits
	} {
		if l, ok := numberLiteral(s); ok {
			t.Errorf("%s: got %v %v, want a refusal", s, l.Typ, l)
		}
	}
	if l, ok := numberLiteral("12345678901234567890123456789012345678"); !ok || plan.TypeName(l.Typ) != "DECIMAL(38,0)" {
		t.Errorf("38 digits: got %v ok=%v, want DECIMAL(38,0)", l, ok)
	}
}

func TestConvertLiteral(t *testing.T) {
	dec := func(s string) *plan.Literal { l, _ := numberLiteral(s); return l }
	tests := []struct {
		name string
		in   *plan.Literal
		to   arrow.DataType
		ok   bool
		want string
	}{
		{"int to int32", &plan.Literal{Typ: plan.Int64, Val: int64(7)}, plan.Int32, true, "7"},
		{"int too big for int32", &plan.Literal{Typ: plan.Int64, Val: int64(1 << 40)}, plan.Int32, false, ""},
		{"int to decimal", &plan.Literal{Typ: plan.Int64, Val: int64(24)}, plan.Decimal(15, 2), true, "24.00"},
		{"decimal rescale", dec("0.05"), plan.Decimal(15, 2), true, "0.05"},
		{"decimal would round", dec("0.065"), plan.Decimal(15, 2), false, ""},
		{"decimal overflow", dec("12345.6"), plan.Decimal(4, 1), false, ""},
		{"decimal to int exact", dec("3.00"), plan.Int64, true, "3"},
		{"string to date", &plan.Literal{Typ: plan.Utf8, Val: "1995-03-15"}, plan.Date32, true, "DATE '1995-03-15'"},
		{"bad date", &plan.Literal{Typ: plan.Utf8, Val: "1995-02-30"}, plan.Date32, false, ""},
		{"null to anything", &plan.Literal{Typ: plan.Null}, plan.Date32, true, "NULL"},
	}
	for _, tc := range tests {
		got, ok := convertLiteral(tc.in, tc.to)
		if ok != tc.ok || (ok && (got.String() != tc.want || !arrow.TypeEqual(got.Typ, tc.to))) {
			t.Errorf("%s: got %v ok=%v, want %s ok=%v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := adaptLiteral(&plan.Literal{Typ: plan.Int64, Val: int64(1)}, plan.Utf8); ok {
		t.Error("adaptLiteral turned a number into text")
	}
}

func TestParseInterval(t *testing.T) {
	tests := []struct {
		text string
		mods []int
		want arrow.MonthDayNanoInterval
		ok   bool
	}{
		{"90", []int{maskDay}, arrow.MonthDayNanoInterval{Days: 90}, true},
		{"3", []int{maskMonth}, arrow.MonthDayNanoInterval{Months: 3}, true},
		{"1", []int{maskYear}, arrow.MonthDayNanoInterval{Months: 12}, true},
		{"90 days", nil, arrow.MonthDayNanoInterval{Days: 90}, true},
		{"1 year 2 months 1 week", nil, arrow.MonthDayNanoInterval{Months: 14, Days: 7}, true},
		{"2 hours", nil, arrow.MonthDayNanoInterval{Nanoseconds: 2 * 3600e9}, true},
		{"soon", nil, arrow.MonthDayNanoInterval{}, false},
	}
	for _, tc := range tests {
		got, err := parseInterval(tc.text, tc.mods)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("%q %v: got %+v err=%v, want %+v ok=%v", tc.text, tc.mods, got, err, tc.want, tc.ok)
		}
	}
}

func TestFoldArith(t *testing.T) {
	dec := func(s string) *plan.Literal { l, _ := numberLiteral(s); return l }
	tests := []struct {
		op   plan.BinaryOp
		l, r *plan.Literal
		want string
	}{
		{plan.OpSub, dec("0.06"), dec("0.01"), "0.05"},
		{plan.OpAdd, &plan.Literal{Typ: plan.Int64, Val: int64(1)}, dec("0.5"), "1.5"},
		{plan.OpMul, dec("1.5"), dec("0.2"), "0.30"},
	}
	for _, tc := range tests {
		typ, err := plan.ArithmeticType(tc.op, tc.l.Typ, tc.r.Typ)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := foldArith(tc.op, tc.l, tc.r, typ)
		if !ok || got.String() != tc.want {
			t.Errorf("%v %v %v: got %v ok=%v, want %s", tc.l, tc.op, tc.r, got, ok, tc.want)
		}
	}
}
