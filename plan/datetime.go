package plan

import (
	"errors"
	"strings"
)

// Date and timestamp text input, shared by the binder (literals) and the
// executors (casts of strings at run time) so both accept exactly the same
// spellings. It follows PostgreSQL's ISO input: the year has four or more
// digits, month and day one or two ('1999-2-01' and '1999-02-1' are
// 1999-02-01), an optional time of day separated by a space or 'T' with one
// or two digit hours and two digit minutes and seconds, and up to six
// fractional second digits (more are rounded to microseconds). Anything else
// is rejected: this is not a guessing parser.

// MicrosPerDay is the number of microseconds in a day.
const MicrosPerDay = int64(86400) * 1e6

var (
	errDateSyntax = errors.New("expected YYYY-MM-DD")
	errTimeSyntax = errors.New("expected YYYY-MM-DD HH:MM:SS")
	errDateRange  = errors.New("date field value out of range")
	errTimeRange  = errors.New("time field value out of range")
)

// ParseDate parses a date as days since 1970-01-01. A time of day after the
// date is allowed and dropped, as PostgreSQL does for '2000-01-01 10:00'::date.
func ParseDate(s string) (int32, error) {
	s = strings.TrimSpace(s)
	days, rest, err := parseYMD(s)
	if err != nil {
		return 0, err
	}
	if rest != "" {
		if _, err := parseTimeOfDay(rest); err != nil {
			return 0, errDateSyntax
		}
	}
	if days < -(1<<31) || days >= 1<<31 {
		return 0, errDateRange
	}
	return int32(days), nil
}

// ParseTimestamp parses a timestamp (without time zone) as microseconds since
// the epoch; the time of day defaults to midnight.
func ParseTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	days, rest, err := parseYMD(s)
	if err == errDateSyntax {
		return 0, errTimeSyntax
	}
	if err != nil {
		return 0, err
	}
	var tod int64
	if rest != "" {
		rest = trimUTC(rest)
		if tod, err = parseTimeOfDay(rest); err != nil {
			return 0, err
		}
	}
	// Keep the result inside int64 microseconds (about ±292,000 years).
	if days > 100_000_000 || days < -100_000_000 {
		return 0, errDateRange
	}
	return days*MicrosPerDay + tod, nil
}

// utcDesignators are the suffixes that mark a time as UTC, as ISO 8601
// writers (JSON, logs, exports) add them: '2024-01-01T10:00:00Z'.
var utcDesignators = []string{"Z", "z", "+00:00", "+0000", "+00", "-00:00", "-0000", "-00", "UTC"}

// trimUTC drops a UTC designator after the time of day: the time is UTC
// already, as a TIMESTAMP is. Other offsets stay, and fail to parse:
// PostgreSQL ignores them and DuckDB converts, so either reading would
// surprise someone.
func trimUTC(s string) string {
	s = strings.TrimSpace(s)
	for _, z := range utcDesignators {
		if strings.HasSuffix(s, z) {
			return strings.TrimSpace(strings.TrimSuffix(s, z))
		}
	}
	return s
}

// parseYMD reads Y-M-D at the start of s and returns the day number and what
// follows it (without its separator: a space or 'T').
func parseYMD(s string) (days int64, rest string, err error) {
	y, s, ny := digits(s, 9)
	if ny < 4 || !strings.HasPrefix(s, "-") {
		return 0, "", errDateSyntax
	}
	m, s, nm := digits(s[1:], 2)
	if nm == 0 || !strings.HasPrefix(s, "-") {
		return 0, "", errDateSyntax
	}
	d, s, nd := digits(s[1:], 2)
	if nd == 0 {
		return 0, "", errDateSyntax
	}
	if s != "" {
		switch s[0] {
		case ' ', 'T', 't':
			s = strings.TrimLeft(s[1:], " ")
			if s == "" {
				return 0, "", errDateSyntax
			}
		default:
			return 0, "", errDateSyntax
		}
	}
	if m < 1 || m > 12 || d < 1 || d > int64(DaysInMonth(y, int(m))) {
		return 0, "", errDateRange
	}
	return DaysFromCivil(y, int(m), int(d)), s, nil
}

// parseTimeOfDay reads H[H]:MM[:SS[.f...]] and returns microseconds since
// midnight. 24:00:00 is allowed (the end of the day), as in PostgreSQL.
func parseTimeOfDay(s string) (int64, error) {
	h, s, nh := digits(s, 2)
	if nh == 0 || !strings.HasPrefix(s, ":") {
		return 0, errTimeSyntax
	}
	mi, s, nmi := digits(s[1:], 2)
	if nmi != 2 {
		return 0, errTimeSyntax
	}
	var sec, frac int64
	if strings.HasPrefix(s, ":") {
		var ns int
		if sec, s, ns = digits(s[1:], 2); ns != 2 {
			return 0, errTimeSyntax
		}
		if strings.HasPrefix(s, ".") {
			f, rest, nf := digits(s[1:], 18)
			if nf == 0 {
				return 0, errTimeSyntax
			}
			s = rest
			// Scale to exactly 6 digits, rounding half up beyond that.
			for ; nf < 6; nf++ {
				f *= 10
			}
			for ; nf > 7; nf-- {
				f /= 10
			}
			if nf == 7 {
				f = (f + 5) / 10
			}
			frac = f
		}
	}
	if strings.TrimSpace(s) != "" {
		return 0, errTimeSyntax
	}
	if h > 24 || mi > 59 || sec > 59 || (h == 24 && (mi != 0 || sec != 0 || frac != 0)) {
		return 0, errTimeRange
	}
	return ((h*60+mi)*60+sec)*1e6 + frac, nil
}

// digits reads up to max decimal digits from the start of s.
func digits(s string, max int) (v int64, rest string, n int) {
	for n < len(s) && n < max && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int64(s[n]-'0')
		n++
	}
	return v, s[n:], n
}

// IsLeapYear reports whether y is a leap year in the proleptic Gregorian
// calendar.
func IsLeapYear(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// DaysInMonth is the length of month m (1-12) of year y.
func DaysInMonth(y int64, m int) int {
	switch m {
	case 2:
		if IsLeapYear(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// DaysFromCivil converts a proleptic Gregorian date to days since
// 1970-01-01 (Howard Hinnant's algorithm).
func DaysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mm := int64(m)
	if m > 2 {
		mm -= 3
	} else {
		mm += 9
	}
	doy := (153*mm+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
