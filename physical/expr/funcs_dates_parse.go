package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Parsing dates and timestamps by a format: PostgreSQL's to_date(text,
// template) and to_timestamp(text, template) with the template patterns
// to_char writes, and DuckDB's strptime(text, format) with C's % codes.

func init() {
	funcArity["to_date"] = [2]int{2, 2}
	funcArity["strptime"] = [2]int{2, 2}
	opFuncs["to_date"] = parseByFormat
	opFuncs["to_timestamp"] = func(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
		if len(ops) == 2 {
			return parseByFormat(e, ops, n, mem)
		}
		return toTimestamp(e, ops, n, mem)
	}
	opFuncs["strptime"] = parseByFormat
}

// fields collects what a format read; unset fields take the defaults of
// PostgreSQL's to_timestamp (year 1, January, day 1, midnight).
type fields struct {
	y              int64
	mon, d         int64
	h, mi, sec, us int64
	hour12, isPM   bool
}

// parseByFormat is to_date, to_timestamp(text, template) and strptime:
// each row's text read by its format.
func parseByFormat(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	texts, err := strsOf(ops[0])
	if err != nil {
		return nil, err
	}
	formats, err := strsOf(ops[1])
	if err != nil {
		return nil, err
	}
	parse := parseTemplate
	if e.Name == "strptime" {
		parse = parseStrptime
	}
	ts := func(i int) (int64, error) {
		text, format := string(texts.at(i)), string(formats.at(i))
		f := fields{y: 1, mon: 1, d: 1}
		if err := parse(&f, text, format); err != nil {
			return 0, err
		}
		if f.hour12 {
			if f.h < 1 || f.h > 12 {
				return 0, dataErrorf("hour \"%d\" is invalid for the 12-hour clock", f.h)
			}
			f.h %= 12
			if f.isPM {
				f.h += 12
			}
		}
		days, err := checkDate(f.y, f.mon, f.d)
		if err != nil {
			return 0, err
		}
		if f.h > 23 || f.mi > 59 || f.sec > 59 {
			return 0, dataErrorf("date/time field value out of range: %q", text)
		}
		return days*microsPerDay + f.h*3600e6 + f.mi*60e6 + f.sec*1e6 + f.us, nil
	}
	if e.Name == "to_date" {
		return fixedRows(plan.Date32, ops, n, mem, func(i int) (int32, error) {
			t, err := ts(i)
			return int32(floorDiv(t, microsPerDay)), err
		})
	}
	return fixedRows(arrow.DataType(plan.Timestamp), ops, n, mem, ts)
}

// readNum reads 1 to max digits at the start of s (a leading sign when
// signed); ok is false when there is no digit.
func readNum(s string, max int, signed bool) (v int64, rest string, ok bool) {
	neg := false
	if signed && len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	k := 0
	for k < len(s) && k < max && s[k] >= '0' && s[k] <= '9' {
		v = v*10 + int64(s[k]-'0')
		k++
	}
	if neg {
		v = -v
	}
	return v, s[k:], k > 0
}

// readName reads one of names (case-insensitive, or its first three
// letters when short) at the start of s, returning its index.
func readName(s string, names []string, short bool) (int, string, bool) {
	for k, name := range names {
		if short {
			name = name[:3]
		}
		if len(s) >= len(name) && strings.EqualFold(s[:len(name)], name) {
			return k, s[len(name):], true
		}
	}
	return 0, s, false
}

// fraction reads up to digits digits as a fraction of a second, in
// microseconds.
func fraction(s string, digits int) (int64, string, bool) {
	k := 0
	var v int64
	for k < len(s) && k < digits && s[k] >= '0' && s[k] <= '9' {
		v = v*10 + int64(s[k]-'0')
		k++
	}
	for j := k; j < 6; j++ {
		v *= 10
	}
	for j := 6; j < k; j++ {
		v /= 10
	}
	return v, s[k:], k > 0
}

// templateFields are the to_date/to_timestamp patterns read, longest
// first.
var templateFields = []string{"MONTH", "Month", "month", "HH24", "HH12", "YYYY", "MON", "Mon", "mon",
	"AM", "PM", "am", "pm", "HH", "MI", "SS", "MS", "US", "MM", "DD", "YY"}

// parseTemplate reads s by a PostgreSQL template. As in PostgreSQL,
// spaces and separators in the template skip any run of spaces or
// separators in the input, and text in double quotes is skipped.
func parseTemplate(f *fields, s, t string) error {
	orig := s
	bad := func(p string) error {
		v := s
		if k := strings.IndexByte(v, ' '); k >= 0 {
			v = v[:k]
		}
		return dataErrorf("invalid value %q for %q", v, p)
	}
	for i := 0; i < len(t); {
		if strings.HasPrefix(t[i:], "FM") || strings.HasPrefix(t[i:], "fm") {
			i += 2
			continue
		}
		if t[i] == '"' {
			j := strings.IndexByte(t[i+1:], '"')
			if j < 0 {
				j = len(t) - i - 1
			}
			lit := t[i+1 : i+1+j]
			if len(s) < len(lit) {
				return dataErrorf("input %q is too short for the template", orig)
			}
			s = s[len(lit):]
			i += j + 2
			continue
		}
		p := ""
		for _, cand := range templateFields {
			if strings.HasPrefix(t[i:], cand) {
				p = cand
				break
			}
		}
		if p == "" {
			// A separator: skip the input's separators.
			i++
			for len(s) > 0 && !isAlnum(s[0]) {
				s = s[1:]
			}
			continue
		}
		for len(s) > 0 && s[0] == ' ' {
			s = s[1:]
		}
		var ok bool
		var v int64
		switch p {
		case "YYYY":
			v, s, ok = readNum(s, 4, true)
			f.y = v
		case "YY":
			v, s, ok = readNum(s, 2, false)
			// PostgreSQL's two-digit years: 00-69 are 2000s, 70-99 1900s.
			if v < 70 {
				f.y = 2000 + v
			} else {
				f.y = 1900 + v
			}
		case "MM":
			f.mon, s, ok = readNum(s, 2, false)
		case "DD":
			f.d, s, ok = readNum(s, 2, false)
		case "HH24":
			f.h, s, ok = readNum(s, 2, false)
		case "HH", "HH12":
			f.h, s, ok = readNum(s, 2, false)
			f.hour12 = true
		case "MI":
			f.mi, s, ok = readNum(s, 2, false)
		case "SS":
			f.sec, s, ok = readNum(s, 2, false)
		case "MS":
			f.us, s, ok = fraction(s, 3)
		case "US":
			f.us, s, ok = fraction(s, 6)
		case "MONTH", "Month", "month", "MON", "Mon", "mon":
			var k int
			k, s, ok = readName(s, monthNames[:], len(p) == 3)
			f.mon = int64(k + 1)
		case "AM", "PM", "am", "pm":
			f.hour12 = true
			switch {
			case len(s) >= 2 && strings.EqualFold(s[:2], "AM"):
				ok, s = true, s[2:]
			case len(s) >= 2 && strings.EqualFold(s[:2], "PM"):
				ok, s, f.isPM = true, s[2:], true
			}
		}
		if !ok {
			return bad(p)
		}
		i += len(p)
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// parseStrptime reads s by a C/DuckDB strptime format: characters other
// than % codes must match exactly, and the whole input must be read.
func parseStrptime(f *fields, s, format string) error {
	orig, given := s, format
	fail := func() error {
		return dataErrorf("could not parse string %q according to format specifier %q", orig, given)
	}
	format = strings.NewReplacer("%F", "%Y-%m-%d", "%T", "%H:%M:%S", "%%", "%%").Replace(format)
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			if c == ' ' {
				for len(s) > 0 && s[0] == ' ' {
					s = s[1:]
				}
				continue
			}
			if len(s) == 0 || s[0] != c {
				return fail()
			}
			s = s[1:]
			continue
		}
		i++
		if i == len(format) {
			return NewDataError("strptime: format ends with a lone %")
		}
		var ok bool
		var v int64
		switch format[i] {
		case 'Y':
			f.y, s, ok = readNum(s, 6, true)
		case 'y':
			v, s, ok = readNum(s, 2, false)
			if v < 69 {
				f.y = 2000 + v
			} else {
				f.y = 1900 + v
			}
		case 'm':
			f.mon, s, ok = readNum(s, 2, false)
		case 'd', 'e':
			f.d, s, ok = readNum(strings.TrimLeft(s, " "), 2, false)
		case 'H':
			f.h, s, ok = readNum(s, 2, false)
		case 'I':
			f.h, s, ok = readNum(s, 2, false)
			f.hour12 = true
		case 'M':
			f.mi, s, ok = readNum(s, 2, false)
		case 'S':
			f.sec, s, ok = readNum(s, 2, false)
		case 'f':
			f.us, s, ok = fraction(s, 6)
		case 'g':
			f.us, s, ok = fraction(s, 3)
		case 'p':
			f.hour12 = true
			switch {
			case len(s) >= 2 && strings.EqualFold(s[:2], "AM"):
				ok, s = true, s[2:]
			case len(s) >= 2 && strings.EqualFold(s[:2], "PM"):
				ok, s, f.isPM = true, s[2:], true
			}
		case 'b', 'h':
			var k int
			k, s, ok = readName(s, monthNames[:], true)
			f.mon = int64(k + 1)
		case 'B':
			var k int
			k, s, ok = readName(s, monthNames[:], false)
			f.mon = int64(k + 1)
		case 'a':
			_, s, ok = readName(s, dayNames[:], true)
		case 'A':
			_, s, ok = readName(s, dayNames[:], false)
		case '%':
			ok = len(s) > 0 && s[0] == '%'
			if ok {
				s = s[1:]
			}
		default:
			return dataErrorf("strptime: unsupported format %%%c", format[i])
		}
		if !ok {
			return fail()
		}
	}
	if s != "" {
		return fail()
	}
	return nil
}
