package expr

import (
	"testing"

	"sluice/plan"
)

// Test columns (see helpers_test.go): s = 'abc', '', NULL, 'héllo';
// pat = 'a%', '%', 'x', NULL; i32 = 1, 2, NULL, -4.

func TestStringFuncs(t *testing.T) {
	runCases(t, []exprCase{
		{"replace", fn("replace", plan.Utf8, col("s"), str("l"), str("LL")), "abc  NULL héLLLLo", ""},
		{"replace empty from", fn("replace", plan.Utf8, col("s"), str(""), str("x")), "abc  NULL héllo", ""},
		{"replace null to", fn("replace", plan.Utf8, col("s"), str("a"), nullStr()), "NULL NULL NULL NULL", ""},
		{"left", fn("left", plan.Utf8, col("s"), cast(col("i32"), plan.Int64)), "a  NULL h", ""},
		{"left big", fn("left", plan.Utf8, col("s"), i64(100)), "abc  NULL héllo", ""},
		{"right", fn("right", plan.Utf8, col("s"), i64(3)), "abc  NULL llo", ""},
		{"right negative", fn("right", plan.Utf8, col("s"), i64(-2)), "c  NULL llo", ""},
		{"left negative past start", fn("left", plan.Utf8, col("s"), i64(-10)), "  NULL ", ""},
		{"reverse", fn("reverse", plan.Utf8, col("s")), "cba  NULL olléh", ""},
		{"strpos", fn("strpos", plan.Int32, col("s"), str("l")), "0 0 NULL 3", ""},
		{"strpos empty", fn("strpos", plan.Int32, col("s"), str("")), "1 1 NULL 1", ""},
		{"translate", fn("translate", plan.Utf8, col("s"), str("aél"), str("AE")), "Abc  NULL hEo", ""},
		{"initcap", fn("initcap", plan.Utf8, str("hELLO wORLD-x1y 2nd")), "Hello World-X1y 2nd Hello World-X1y 2nd Hello World-X1y 2nd Hello World-X1y 2nd", ""},
		{"md5", fn("md5", plan.Utf8, col("s")), "900150983cd24fb0d6963f7d28e17f72 d41d8cd98f00b204e9800998ecf8427e NULL be50e8478cf24ff3595bc7307fb91b50", ""},
		{"sha256 empty", fn("sha256", plan.Utf8, str("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ""},
		{"ends_with", fn("ends_with", plan.Bool, col("s"), str("lo")), "false false NULL true", ""},
		{"contains", fn("contains", plan.Bool, col("s"), str("")), "true true NULL true", ""},
		{"octet_length", fn("octet_length", plan.Int32, col("s")), "3 0 NULL 6", ""},
		{"bit_length", fn("bit_length", plan.Int32, col("s")), "24 0 NULL 48", ""},
		{"to_hex int", fn("to_hex", plan.Utf8, col("i32")), "1 2 NULL fffffffc", ""},
		{"to_hex bigint", fn("to_hex", plan.Utf8, i64(-1)), "ffffffffffffffff ffffffffffffffff ffffffffffffffff ffffffffffffffff", ""},
		{"regexp_extract", fn("regexp_extract", plan.Utf8, col("s"), str("l+")), "  NULL ll", ""},
		{"regexp_extract group", fn("regexp_extract", plan.Utf8, col("s"), str("(.)(l)"), i64(1)), "  NULL é", ""},
		{"format", fn("format", plan.Utf8, str("<%s|%L>"), col("s"), col("s")), "<abc|'abc'> <|''> <|NULL> <héllo|'héllo'>", ""},
		{"format positions and widths", fn("format", plan.Utf8, str("%2$s %1$s %s|%4s|%-4s|%%"), str("a"), str("b"), str("c"), str("dé")), "b a b|   c|dé  |% b a b|   c|dé  |% b a b|   c|dé  |% b a b|   c|dé  |%", ""},
		{"format null format", fn("format", plan.Utf8, col("s"), col("pat")), "abc  NULL héllo", ""},
		{"format quote backslash", fn("format", plan.Utf8, str("%L"), str(`it's a\b`)), `E'it''s a\\b' E'it''s a\\b' E'it''s a\\b' E'it''s a\\b'`, ""},
		{"format too few", fn("format", plan.Utf8, str("%s %s"), col("s")), "", "too few arguments for format()"},
		{"format bad type", fn("format", plan.Utf8, str("%d"), col("s")), "", `unrecognized format() type specifier "d"`},
		{"format unterminated", fn("format", plan.Utf8, str("abc%")), "", "unterminated format() type specifier"},
		{"regexp_extract bad group", fn("regexp_extract", plan.Utf8, col("s"), str("(.)"), i64(2)), "", "group 2 does not exist"},
	})
}

// TestBatchTextLimit: string results are capped per batch, so a function
// that multiplies its input over every row fails with a clear error
// instead of exhausting memory; nothing leaks on the way out.
func TestBatchTextLimit(t *testing.T) {
	defer func(n int) { maxBatchText = n }(maxBatchText)
	maxBatchText = 10
	tooLong := "result too large: the strings of one batch would exceed"
	runCases(t, []exprCase{
		{"repeat", fn("repeat", plan.Utf8, col("s"), i64(5)), "", tooLong},
		{"concat", &plan.Binary{Op: plan.OpConcat, L: col("s"), R: str("0123456789"), Typ: plan.Utf8}, "", tooLong},
		{"within the limit", fn("repeat", plan.Utf8, str("ab"), i64(1)), "ab ab ab ab", ""},
	})
}
