// Package render writes query results: a streaming table for people, and
// csv for programs. Values are formatted the same way in every format.
package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/plan"
)

// FormatValue renders row i of a; ok is false for NULL. Every value of a
// NULL-typed array (a bare NULL literal) is NULL, though such an array
// carries no validity bitmap for IsNull to read.
func FormatValue(a arrow.Array, i int) (s string, ok bool) {
	if a.DataType().ID() == arrow.NULL || a.IsNull(i) {
		return "", false
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i), true
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10), true
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), true
	case *array.Float64:
		switch v := a.Value(i); {
		case math.IsInf(v, 1):
			return "Infinity", true // PostgreSQL's spelling, not Go's +Inf
		case math.IsInf(v, -1):
			return "-Infinity", true
		default:
			return strconv.FormatFloat(v, 'f', -1, 64), true
		}
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale), true
	case *array.Date32:
		return a.Value(i).FormattedString(), true
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		t := a.Value(i).ToTime(unit).UTC()
		if t.Nanosecond() == 0 {
			return t.Format(time.DateTime), true
		}
		return t.Format("2006-01-02 15:04:05.999999"), true
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i)), true
	case *array.MonthDayNanoInterval:
		return string(plan.AppendIntervalText(nil, a.Value(i))), true
	case *array.List:
		lo, hi := a.ValueOffsets(i)
		elems := a.ListValues()
		return string(plan.AppendArrayText(nil, int(hi-lo), func(k int) (string, bool) {
			return FormatValue(elems, int(lo)+k)
		})), true
	}
	return a.ValueStr(i), true
}

// IsNumeric reports whether values of t are right-aligned in tables.
func IsNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// Escape shows the control characters of s that a terminal would act on
// (ESC starting a sequence that moves the cursor, retitles the window or
// rewrites the screen, BEL, backspace, C1 controls such as CSI) as
// escapes, as psql does: ESC becomes \x1b, U+009B becomes \u009b, a byte
// that is not UTF-8 becomes \xHH. keep lists the controls left as they are
// (the formats that show multi-line values keep "\n"). Backslashes are
// not escaped: the escapes mark control characters for a person, they are
// not a reversible encoding (use csv or json for that).
func Escape(s, keep string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strings.ContainsRune(keep, r):
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
