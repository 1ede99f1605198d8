package expr

import (
	"testing"

	"sluice/plan"
)

// Test columns (see helpers_test.go): dt = 2020-01-31, 2019-02-28, NULL,
// 1970-01-01; ts = 2020-01-31 10:00:00, NULL, 1969-12-31 23:59:59,
// 2000-02-29 00:00:00.5.

func ts(s string) *plan.Literal {
	v, err := parseTimestamp(s)
	if err != nil {
		panic(err)
	}
	return lit(plan.Timestamp, v)
}

func TestMoreDateFuncs(t *testing.T) {
	runCases(t, []exprCase{
		{"second", fn("extract_second", plan.Decimal(8, 6), col("ts")), "0.000000 NULL 59.000000 0.500000", ""},
		{"millisecond", fn("extract_millisecond", plan.Decimal(8, 3), col("ts")), "0.000 NULL 59000.000 500.000", ""},
		{"microsecond", fn("extract_microsecond", plan.Int32, col("ts")), "0 NULL 59000000 500000", ""},
		{"epoch", fn("extract_epoch", plan.Decimal(20, 6), col("ts")), "1580464800.000000 NULL -1.000000 951782400.500000", ""},
		{"epoch date", fn("extract_epoch", plan.Decimal(20, 0), col("dt")), "1580428800 1551312000 NULL 0", ""},
		{"epoch double", fn("extract_epoch", plan.Float64, col("ts")), "1580464800 NULL -1 951782400.5", ""},
		{"isoyear", fn("extract_isoyear", plan.Int32, date("2021-01-03")), "2020 2020 2020 2020", ""},
		{"century", fn("extract_century", plan.Int32, col("dt")), "21 21 NULL 20", ""},
		{"millennium", fn("extract_millennium", plan.Int32, col("dt")), "3 3 NULL 2", ""},
		{"decade", fn("extract_decade", plan.Int32, col("dt")), "202 201 NULL 197", ""},
		{"date_diff year", fn("date_diff", plan.Int64, str("year"), ts("2019-12-31 23:59:59"), col("ts")), "1 NULL -50 -19", ""},
		{"date_diff month", fn("date_diff", plan.Int64, str("month"), col("ts"), ts("2020-03-01 00:00:00")), "2 NULL 603 241", ""},
		{"date_diff day", fn("date_diff", plan.Int64, str("day"), ts("1970-01-01 00:00:00"), col("ts")), "18292 NULL -1 11016", ""},
		{"date_diff second", fn("date_diff", plan.Int64, str("second"), ts("1970-01-01 00:00:00"), col("ts")), "1580464800 NULL -1 951782400", ""},
		{"date_diff week", fn("date_diff", plan.Int64, str("week"), ts("2024-03-03 00:00:00"), ts("2024-03-04 00:00:00")), "1 1 1 1", ""},
		{"date_diff bad unit", fn("date_diff", plan.Int64, str("eon"), col("ts"), col("ts")), "", "unit \"eon\" not recognized"},
		{"make_date", fn("make_date", plan.Date32, cast(col("i64"), plan.Int64), i64(2), i64(28)), "0010-02-28 0020-02-28 0030-02-28 NULL", ""},
		{"make_date invalid", fn("make_date", plan.Date32, i64(2023), i64(2), i64(29)), "", "date field value out of range: 2023-02-29"},
		{"make_date year zero", fn("make_date", plan.Date32, i64(0), i64(1), i64(1)), "", "date field value out of range"},
		{"make_timestamp", fn("make_timestamp", plan.Timestamp, i64(2024), i64(2), i64(29), i64(13), i64(45), f64(30.25)), "2024-02-29 13:45:30.250000 2024-02-29 13:45:30.250000 2024-02-29 13:45:30.250000 2024-02-29 13:45:30.250000", ""},
		{"make_timestamp midnight 24", fn("make_timestamp", plan.Timestamp, i64(2024), i64(2), i64(29), i64(24), i64(0), f64(0)), "2024-03-01 00:00:00 2024-03-01 00:00:00 2024-03-01 00:00:00 2024-03-01 00:00:00", ""},
		{"make_timestamp bad time", fn("make_timestamp", plan.Timestamp, i64(2024), i64(2), i64(29), i64(10), i64(60), f64(0)), "", "time field value out of range: 10:60:00"},
		{"last_day", fn("last_day", plan.Date32, col("dt")), "2020-01-31 2019-02-28 NULL 1970-01-31", ""},
		{"last_day timestamp", fn("last_day", plan.Date32, col("ts")), "2020-01-31 NULL 1969-12-31 2000-02-29", ""},
		{"to_timestamp", fn("to_timestamp", plan.Timestamp, col("f64")), "1970-01-01 00:00:01.500000 NULL 1969-12-31 23:59:57.750000 1970-01-01 00:00:00", ""},
		{"to_timestamp range", fn("to_timestamp", plan.Timestamp, f64(1e300)), "", "timestamp out of range"},
		{"to_char", fn("to_char", plan.Utf8, col("ts"), str("YYYY-MM-DD HH24:MI:SS.MS")), "2020-01-31 10:00:00.000 NULL 1969-12-31 23:59:59.000 2000-02-29 00:00:00.500", ""},
		{"to_char names", fn("to_char", plan.Utf8, col("ts"), str(`FMDay, FMMonth DD "of" YYYY HH12 PM`)), "Friday, January 31 of 2020 10 AM NULL Wednesday, December 31 of 1969 11 PM Tuesday, February 29 of 2000 12 AM", ""},
		{"to_char padded", fn("to_char", plan.Utf8, ts("2024-05-05 00:00:00"), str("Day|Mon|DY|mon|Q|WW|IW|D|ID|DDD")), "Sunday   |May|SUN|may|2|18|18|1|7|126 Sunday   |May|SUN|may|2|18|18|1|7|126 Sunday   |May|SUN|may|2|18|18|1|7|126 Sunday   |May|SUN|may|2|18|18|1|7|126", ""},
		{"strftime", fn("strftime", plan.Utf8, col("ts"), str("%Y/%m/%d %H:%M:%S.%f %a %b %j %p %%")), "2020/01/31 10:00:00.000000 Fri Jan 031 AM % NULL 1969/12/31 23:59:59.000000 Wed Dec 365 PM % 2000/02/29 00:00:00.500000 Tue Feb 060 AM %", ""},
		{"strftime short", fn("strftime", plan.Utf8, ts("2024-03-03 09:05:00"), str("%F %T %-d/%-m %-H %e %A %B %u %w %I")), "2024-03-03 09:05:00 3/3 9  3 Sunday March 7 0 09 2024-03-03 09:05:00 3/3 9  3 Sunday March 7 0 09 2024-03-03 09:05:00 3/3 9  3 Sunday March 7 0 09 2024-03-03 09:05:00 3/3 9  3 Sunday March 7 0 09", ""},
		{"strftime bad", fn("strftime", plan.Utf8, col("ts"), str("%Q")), "", "unsupported format %Q"},
	})
}

func TestParseByFormat(t *testing.T) {
	runCases(t, []exprCase{
		{"to_date", fn("to_date", plan.Date32, str("05 Dec 2000"), str("DD Mon YYYY")), "2000-12-05 2000-12-05 2000-12-05 2000-12-05", ""},
		{"to_date month name", fn("to_date", plan.Date32, str("march 3, 2024"), str("Month DD, YYYY")), "2024-03-03 2024-03-03 2024-03-03 2024-03-03", ""},
		{"to_date column", fn("to_date", plan.Date32, col("s"), str("YYYY")), "", `invalid value "abc" for "YYYY"`},
		{"to_date null", fn("to_date", plan.Date32, col("pat"), nullStr()), "NULL NULL NULL NULL", ""},
		{"to_date out of range", fn("to_date", plan.Date32, str("2023-02-29"), str("YYYY-MM-DD")), "", "date field value out of range: 2023-02-29"},
		{"to_timestamp template", fn("to_timestamp", plan.Timestamp, str("29/02/24 01:45:30.5 PM"), str("DD/MM/YY HH12:MI:SS.MS AM")), "2024-02-29 13:45:30.500000 2024-02-29 13:45:30.500000 2024-02-29 13:45:30.500000 2024-02-29 13:45:30.500000", ""},
		{"to_timestamp 12 am", fn("to_timestamp", plan.Timestamp, str("12:05 AM"), str("HH:MI AM")), "0001-01-01 00:05:00 0001-01-01 00:05:00 0001-01-01 00:05:00 0001-01-01 00:05:00", ""},
		{"to_timestamp bad hour", fn("to_timestamp", plan.Timestamp, str("13 PM"), str("HH12 PM")), "", "invalid for the 12-hour clock"},
		{"strptime", fn("strptime", plan.Timestamp, str("Feb 29 2024 01:45PM"), str("%b %d %Y %I:%M%p")), "2024-02-29 13:45:00 2024-02-29 13:45:00 2024-02-29 13:45:00 2024-02-29 13:45:00", ""},
		{"strptime F T f", fn("strptime", plan.Timestamp, str("2024-02-29T13:45:30.123"), str("%FT%T.%f")), "2024-02-29 13:45:30.123000 2024-02-29 13:45:30.123000 2024-02-29 13:45:30.123000 2024-02-29 13:45:30.123000", ""},
		{"strptime mismatch", fn("strptime", plan.Timestamp, str("2024/02/29"), str("%Y-%m-%d")), "", `could not parse string "2024/02/29" according to format specifier "%Y-%m-%d"`},
		{"strptime trailing", fn("strptime", plan.Timestamp, str("2024-02-29 x"), str("%Y-%m-%d")), "", "could not parse string"},
		{"strptime bad code", fn("strptime", plan.Timestamp, str("x"), str("%Q")), "", "unsupported format %Q"},
	})
}
