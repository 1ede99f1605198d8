package expr

import (
	"testing"

	"sluice/plan"
)

// Test columns (see helpers_test.go): s = 'abc', '', NULL, 'héllo';
// pat = 'a%', '%', 'x', NULL; i32 = 1, 2, NULL, -4; i64 = 10, 20, 30, NULL.

func nullStr() *plan.Literal { return lit(plan.Utf8, nil) }

func TestTextFuncs(t *testing.T) {
	runCases(t, []exprCase{
		{"concat skips nulls", fn("concat", plan.Utf8, col("s"), str("-"), col("pat")), "abc-a% -% -x héllo-", ""},
		{"concat null constant", fn("concat", plan.Utf8, nullStr(), col("s")), "abc   héllo", ""},
		{"concat all null", fn("concat", plan.Utf8, nullStr()), "   ", ""},
		{"concat untyped null", fn("concat", plan.Utf8, col("s"), lit(plan.Null, nil)), "abc   héllo", ""},
		{"concat_ws", fn("concat_ws", plan.Utf8, str(","), col("s"), col("pat")), "abc,a% ,% x héllo", ""},
		{"concat_ws null separator", fn("concat_ws", plan.Utf8, nullStr(), col("s")), "NULL NULL NULL NULL", ""},
		{"concat_ws column separator", fn("concat_ws", plan.Utf8, col("pat"), str("a"), str("b")), "aa%b a%b axb NULL", ""},
		{"btrim default", fn("btrim", plan.Utf8, str("  x ")), "x x x x", ""},
		{"btrim set", fn("btrim", plan.Utf8, col("s"), str("ao")), "bc  NULL héll", ""},
		{"ltrim set", fn("ltrim", plan.Utf8, col("s"), str("ah")), "bc  NULL éllo", ""},
		{"rtrim multibyte set", fn("rtrim", plan.Utf8, str("xéé"), str("é")), "x x x x", ""},
		{"trim null set", fn("btrim", plan.Utf8, col("s"), nullStr()), "NULL NULL NULL NULL", ""},
		{"repeat", fn("repeat", plan.Utf8, col("s"), i64(2)), "abcabc  NULL héllohéllo", ""},
		{"repeat negative", fn("repeat", plan.Utf8, col("s"), i64(-1)), "  NULL ", ""},
		{"repeat too long", fn("repeat", plan.Utf8, str("xy"), i64(1<<30)), "", "requested length too large"},
		{"chr", fn("chr", plan.Utf8, cast(col("i64"), plan.Int64)), "\n \x14 \x1e NULL", ""},
		{"chr zero", fn("chr", plan.Utf8, i64(0)), "", "null character not permitted"},
		{"chr surrogate", fn("chr", plan.Utf8, i64(0xD800)), "", "not valid for encoding"},
		{"ascii", fn("ascii", plan.Int32, col("s")), "97 0 NULL 104", ""},
		{"lpad", fn("lpad", plan.Utf8, col("s"), i64(4), str("é*")), "éabc é*é* NULL héll", ""},
		{"rpad default fill", fn("rpad", plan.Utf8, col("s"), cast(col("i32"), plan.Int64)), "a    NULL ", ""},
		{"lpad empty fill", fn("lpad", plan.Utf8, col("s"), i64(5), str("")), "abc  NULL héllo", ""},
		{"split_part", fn("split_part", plan.Utf8, col("s"), str("l"), i64(2)), "  NULL ", ""},
		{"split_part negative", fn("split_part", plan.Utf8, str("a.b.c"), str("."), cast(col("i32"), plan.Int64)), "a b NULL ", ""},
		{"split_part zero", fn("split_part", plan.Utf8, col("s"), str(","), i64(0)), "", "field position must not be zero"},
		{"starts_with", fn("starts_with", plan.Bool, col("s"), str("a")), "true false NULL false", ""},
		{"starts_with column prefix", fn("starts_with", plan.Bool, str("a%b"), col("pat")), "true false false NULL", ""},
		{"regexp_match groups", cast(fn("regexp_match", plan.TextArray, col("s"), str("(l+)(o)?")), plan.Utf8), "NULL NULL NULL {ll,o}", ""},
		{"regexp_match whole", cast(fn("regexp_match", plan.TextArray, col("s"), str("B"), str("i")), plan.Utf8), "{b} NULL NULL NULL", ""},
		{"regexp_match global", fn("regexp_match", plan.TextArray, col("s"), str("b"), str("g")), "", "does not support the \"global\" option"},
		{"array_element", fn("array_element", plan.Utf8, fn("regexp_match", plan.TextArray, str("a-b"), str("(.)-(.)")), cast(col("i32"), plan.Int64)), "a b NULL NULL", ""},
		{"cardinality", fn("cardinality", plan.Int32, fn("regexp_match", plan.TextArray, col("s"), str(".(x)?"))), "1 NULL NULL 1", ""},
		{"array_length", fn("array_length", plan.Int32, fn("regexp_match", plan.TextArray, col("s"), str(".")), cast(col("i32"), plan.Int64)), "1 NULL NULL NULL", ""},
		{"array_to_string", fn("array_to_string", plan.Utf8, fn("regexp_match", plan.TextArray, col("s"), str("(.)(x)?")), str("+"), col("pat")), "a+a% NULL NULL h", ""},
		{"regexp_replace first", fn("regexp_replace", plan.Utf8, col("s"), str("[lb]"), str("<\\&>")), "a<b>c  NULL hé<l>lo", ""},
		{"regexp_replace global", fn("regexp_replace", plan.Utf8, col("s"), str("[lb]"), str("_"), str("g")), "a_c  NULL hé__o", ""},
		{"regexp_replace groups", fn("regexp_replace", plan.Utf8, str("ab"), str("(a)(b)"), str(`\2\1\\`)), `ba\ ba\ ba\ ba\`, ""},
		{"regexp_replace case", fn("regexp_replace", plan.Utf8, str("ABC"), str("b"), str("x"), str("i")), "AxC AxC AxC AxC", ""},
		{"regexp_replace column pattern", fn("regexp_replace", plan.Utf8, str("xa%y"), col("pat"), str("-")), "x-y xa-y -a%y NULL", ""},
		{"regexp_replace bad flag", fn("regexp_replace", plan.Utf8, col("s"), str("a"), str("b"), str("q")), "", "invalid regular expression option"},
		{"substring regex", fn("substring_regex", plan.Utf8, col("s"), str("[bl]+")), "b NULL NULL ll", ""},
		{"substring regex group", fn("substring_regex", plan.Utf8, col("s"), str("(.)l")), "NULL NULL NULL é", ""},
		{"regexp_replace bad pattern", fn("regexp_replace", plan.Utf8, col("s"), str("("), str("b")), "", "invalid regular expression"},
	})
}

func TestGreatestLeast(t *testing.T) {
	runCases(t, []exprCase{
		{"greatest ints", fn("greatest", plan.Int64, cast(col("i32"), plan.Int64), col("i64")), "10 20 30 -4", ""},
		{"least ints", fn("least", plan.Int64, cast(col("i32"), plan.Int64), col("i64"), i64(5)), "1 2 5 -4", ""},
		{"greatest all null row", fn("greatest", plan.Int32, col("i32"), lit(plan.Int32, nil)), "1 2 NULL -4", ""},
		{"greatest strings", fn("greatest", plan.Utf8, col("s"), col("pat")), "abc % x héllo", ""},
		{"least decimals", fn("least", plan.Decimal(15, 2), col("d1"), col("d2")), "0.10 1.00 1.00 -2.50", ""},
		{"greatest dates", fn("greatest", plan.Date32, col("dt"), date("2019-06-01")), "2020-01-31 2019-06-01 2019-06-01 2019-06-01", ""},
		{"least floats", fn("least", plan.Float64, col("f64"), f64(1)), "1 1 -2.25 0", ""},
		{"greatest single", fn("greatest", plan.Int32, col("i32")), "1 2 NULL -4", ""},
	})
}

func TestDateFuncs(t *testing.T) {
	ts := func(s string) *plan.Literal {
		v, err := plan.ParseTimestamp(s)
		if err != nil {
			panic(err)
		}
		return lit(plan.Timestamp, v)
	}
	runCases(t, []exprCase{
		{"trunc month", fn("date_trunc", plan.Timestamp, str("month"), col("ts")),
			"2020-01-01 00:00:00 NULL 1969-12-01 00:00:00 2000-02-01 00:00:00", ""},
		{"trunc hour before the epoch", fn("date_trunc", plan.Timestamp, str("hour"), col("ts")),
			"2020-01-31 10:00:00 NULL 1969-12-31 23:00:00 2000-02-29 00:00:00", ""},
		{"trunc second", fn("date_trunc", plan.Timestamp, str("second"), col("ts")),
			"2020-01-31 10:00:00 NULL 1969-12-31 23:59:59 2000-02-29 00:00:00", ""},
		{"trunc week", fn("date_trunc", plan.Timestamp, str("week"), col("ts")),
			"2020-01-27 00:00:00 NULL 1969-12-29 00:00:00 2000-02-28 00:00:00", ""},
		{"trunc quarter", fn("date_trunc", plan.Timestamp, str("quarter"), ts("2020-11-30 01:02:03")),
			"2020-10-01 00:00:00 2020-10-01 00:00:00 2020-10-01 00:00:00 2020-10-01 00:00:00", ""},
		{"trunc century", fn("date_trunc", plan.Timestamp, str("century"), ts("2000-11-30 01:02:03")),
			"1901-01-01 00:00:00 1901-01-01 00:00:00 1901-01-01 00:00:00 1901-01-01 00:00:00", ""},
		{"trunc decade", fn("date_trunc", plan.Timestamp, str("decade"), ts("2009-11-30 01:02:03")),
			"2000-01-01 00:00:00 2000-01-01 00:00:00 2000-01-01 00:00:00 2000-01-01 00:00:00", ""},
		{"trunc bad unit", fn("date_trunc", plan.Timestamp, str("eon"), col("ts")), "", "not recognized"},
		{"extract quarter", fn("extract_quarter", plan.Int32, col("dt")), "1 1 NULL 1", ""},
		{"extract doy", fn("extract_doy", plan.Int32, col("dt")), "31 59 NULL 1", ""},
		{"extract dow", fn("extract_dow", plan.Int32, col("dt")), "5 4 NULL 4", ""},
		{"extract week", fn("extract_week", plan.Int32, col("dt")), "5 9 NULL 1", ""},
		{"extract hour", fn("extract_hour", plan.Int32, col("ts")), "10 NULL 23 0", ""},
		{"extract minute", fn("extract_minute", plan.Int32, col("ts")), "0 NULL 59 0", ""},
		{"extract hour of a date", fn("extract_hour", plan.Int32, col("dt")), "0 0 NULL 0", ""},
	})
}

func TestAbsOverflow(t *testing.T) {
	runCases(t, []exprCase{
		{"abs int32 min", fn("abs", plan.Int32, i32(-1<<31)), "", "integer out of range"},
		{"abs int64 min", fn("abs", plan.Int64, i64(-1<<63)), "", "integer out of range"},
		{"abs int32 column", fn("abs", plan.Int32, col("i32")), "1 2 NULL 4", ""},
		{"abs int64 near min", fn("abs", plan.Int64, i64(-1<<63+1)),
			"9223372036854775807 9223372036854775807 9223372036854775807 9223372036854775807", ""},
	})
}

func TestIsoWeek(t *testing.T) {
	for _, tc := range []struct {
		date string
		want int64
	}{
		{"2021-01-03", 53}, {"2021-01-04", 1}, {"2020-12-31", 53}, {"2019-12-30", 1}, {"2018-12-31", 1},
		{"2016-01-03", 53}, {"2015-12-31", 53}, {"2024-12-30", 1}, {"1970-01-01", 1}, {"1969-12-28", 52},
	} {
		d, err := plan.ParseDate(tc.date)
		if err != nil {
			t.Fatal(err)
		}
		if got := isoWeek(int64(d)); got != tc.want {
			t.Errorf("isoWeek(%s) = %d, want %d", tc.date, got, tc.want)
		}
	}
}

// substringBytes looks only at the bytes before the window's end when they
// are ASCII; it must agree with counting characters over the whole string
// wherever the multi-byte characters sit (before, inside, at the edge of,
// or after the window).
func TestSubstringBytesASCIIPrefix(t *testing.T) {
	ref := func(s string, start, length int64, hasLen bool) string {
		rs := []rune(s)
		end := int64(len(rs)) + 1
		if hasLen {
			end = min(end, start+length)
		}
		start = max(start, 1)
		if end <= start || start > int64(len(rs)) {
			return ""
		}
		return string(rs[start-1 : end-1])
	}
	strs := []string{"", "abcdef", "abcdefé", "abcéfgh", "éabcdef", "ab€", "abc\U0001F600", "日本語テキスト", "abcdefghijklmnopqrstuvwxyzé"}
	for _, s := range strs {
		for start := int64(-2); start <= 9; start++ {
			for length := int64(0); length <= 9; length++ {
				for _, hasLen := range []bool{true, false} {
					got, err := substringBytes(nil, []byte(s), start, length, hasLen)
					if err != nil {
						t.Fatal(err)
					}
					if want := ref(s, start, length, hasLen); string(got) != want {
						t.Errorf("substring(%q, %d, %d, %v) = %q, want %q", s, start, length, hasLen, got, want)
					}
				}
			}
		}
	}
}
