package plan

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Interval text input, shared by the binder (INTERVAL '...' literals) and
// the executors (casts of strings), following PostgreSQL's: a list of
// numbers with units ('1 year 2 mons', '1.5 hours', '3d'), a time of day
// ('10:00', '-1:30:15.5'), a bare number of seconds, a leading '@' and a
// trailing 'ago' (which negates), or ISO 8601's 'P1Y2M3DT4H5M6S'.
// Fractions cascade down as PostgreSQL's do: a fraction of a year becomes
// whole months, of a month 30-day days, of a day 24-hour time.

var errIntervalSyntax = errors.New("invalid interval syntax")

// errIntervalRange is returned for a field that does not fit.
var errIntervalRange = errors.New("interval field value out of range")

// intervalUnits maps PostgreSQL's unit spellings to months, days or
// microseconds per unit.
var intervalUnits = map[string]struct {
	months, days float64
	micros       float64
}{}

func init() {
	add := func(m, d, us float64, names ...string) {
		for _, n := range names {
			intervalUnits[n] = struct {
				months, days float64
				micros       float64
			}{m, d, us}
		}
	}
	add(12000, 0, 0, "millennium", "millennia", "millenniums", "mil", "mils")
	add(1200, 0, 0, "century", "centuries", "cent", "c")
	add(120, 0, 0, "decade", "decades", "dec", "decs")
	add(12, 0, 0, "year", "years", "yr", "yrs", "y")
	add(1, 0, 0, "month", "months", "mon", "mons")
	add(0, 7, 0, "week", "weeks", "w")
	add(0, 1, 0, "day", "days", "d")
	add(0, 0, 3600e6, "hour", "hours", "hr", "hrs", "h")
	add(0, 0, 60e6, "minute", "minutes", "min", "mins", "m")
	add(0, 0, 1e6, "second", "seconds", "sec", "secs", "s")
	add(0, 0, 1e3, "millisecond", "milliseconds", "ms", "msec", "msecs")
	add(0, 0, 1, "microsecond", "microseconds", "us", "usec", "usecs")
}

// intervalSum accumulates an interval's fields before they are checked.
type intervalSum struct {
	months, days, micros float64
}

// add adds n units, cascading n's fraction down.
func (s *intervalSum) add(n float64, months, days, micros float64) {
	switch {
	case months >= 12:
		// A fraction of a year (decade, ...) is whole months.
		whole := math.Trunc(n)
		s.months += whole * months
		s.months += math.RoundToEven((n - whole) * months)
	case months > 0:
		whole := math.Trunc(n)
		s.months += whole
		s.addDays((n - whole) * 30)
	case days > 0:
		s.addDays(n * days)
	default:
		s.micros += n * micros
	}
}

// addDays adds d days, its fraction as time.
func (s *intervalSum) addDays(d float64) {
	whole := math.Trunc(d)
	s.days += whole
	s.micros += math.RoundToEven((d - whole) * 86400e6)
}

// ParseInterval parses an interval as PostgreSQL reads interval text.
func ParseInterval(text string) (arrow.MonthDayNanoInterval, error) {
	s := strings.ToLower(strings.TrimSpace(text))
	if strings.HasPrefix(s, "p") {
		return parseISOInterval(s[1:])
	}
	s = strings.TrimSpace(strings.TrimPrefix(s, "@"))
	neg := false
	if rest, ok := strings.CutSuffix(s, "ago"); ok {
		s, neg = strings.TrimSpace(rest), true
	}
	toks := intervalTokens(s)
	if len(toks) == 0 {
		return arrow.MonthDayNanoInterval{}, errIntervalSyntax
	}
	var sum intervalSum
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		if strings.Contains(tok, ":") {
			us, err := parseIntervalTime(tok)
			if err != nil {
				return arrow.MonthDayNanoInterval{}, err
			}
			sum.micros += us
			continue
		}
		if k := strings.LastIndexByte(tok, '-'); k > 0 {
			// The SQL standard's year-month: '1-2' is 1 year 2 months.
			y, err1 := strconv.ParseInt(tok[:k], 10, 32)
			m, err2 := strconv.ParseUint(tok[k+1:], 10, 8)
			if err1 != nil || err2 != nil || m > 11 {
				return arrow.MonthDayNanoInterval{}, errIntervalSyntax
			}
			sign := float64(1)
			if strings.HasPrefix(tok, "-") {
				sign = -1
			}
			sum.months += float64(y)*12 + sign*float64(m)
			continue
		}
		n, err := strconv.ParseFloat(tok, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return arrow.MonthDayNanoInterval{}, errIntervalSyntax
		}
		unit := "second" // a bare number is seconds
		if i+1 < len(toks) {
			if _, ok := intervalUnits[toks[i+1]]; ok {
				unit = toks[i+1]
				i++
			} else if strings.Contains(toks[i+1], ":") {
				unit = "day" // '1 10:00' is a day and ten hours
			} else {
				return arrow.MonthDayNanoInterval{}, errIntervalSyntax
			}
		}
		u := intervalUnits[unit]
		sum.add(n, u.months, u.days, u.micros)
	}
	if neg {
		sum = intervalSum{-sum.months, -sum.days, -sum.micros}
	}
	return sum.interval()
}

// interval checks the sums fit an interval's fields.
func (s intervalSum) interval() (arrow.MonthDayNanoInterval, error) {
	if s.months < math.MinInt32 || s.months > math.MaxInt32 || s.days < math.MinInt32 || s.days > math.MaxInt32 ||
		math.Abs(s.micros) > math.MaxInt64/1000 {
		return arrow.MonthDayNanoInterval{}, errIntervalRange
	}
	return arrow.MonthDayNanoInterval{Months: int32(s.months), Days: int32(s.days), Nanoseconds: int64(math.RoundToEven(s.micros)) * 1000}, nil
}

// intervalTokens splits interval text into numbers, units and times:
// '1day' and '1 day' both give "1", "day"; a sign stays on its number.
func intervalTokens(s string) []string {
	var toks []string
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == ',' || c == '\t':
			i++
		case c >= 'a' && c <= 'z':
			j := i
			for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == ':' ||
				s[j] == '-' && s[j-1] >= '0' && s[j-1] <= '9' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9' ||
				(s[j] == 'e' && j+1 < len(s) && (s[j+1] == '-' || s[j+1] == '+' || s[j+1] >= '0' && s[j+1] <= '9'))) {
				if s[j] == 'e' {
					j++ // the exponent's sign or first digit
				}
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

// parseIntervalTime reads [-]H:MM[:SS[.f]] as microseconds.
func parseIntervalTime(tok string) (float64, error) {
	sign := 1.0
	if strings.HasPrefix(tok, "-") {
		sign, tok = -1, tok[1:]
	} else {
		tok = strings.TrimPrefix(tok, "+")
	}
	parts := strings.Split(tok, ":")
	if len(parts) > 3 {
		return 0, errIntervalSyntax
	}
	h, err := strconv.ParseUint(parts[0], 10, 31)
	if err != nil {
		return 0, errIntervalSyntax
	}
	m, err := strconv.ParseUint(parts[1], 10, 8)
	if err != nil || m > 59 {
		return 0, errIntervalSyntax
	}
	us := float64(h)*3600e6 + float64(m)*60e6
	if len(parts) == 3 {
		sec, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || sec < 0 || sec >= 60 || strings.ContainsAny(parts[2], "eE+-") {
			return 0, errIntervalSyntax
		}
		us += math.RoundToEven(sec * 1e6)
	}
	return sign * us, nil
}

// parseISOInterval reads ISO 8601's format, after its 'P':
// [nY][nM][nW][nD][T[nH][nM][nS]], numbers possibly fractional.
func parseISOInterval(s string) (arrow.MonthDayNanoInterval, error) {
	var sum intervalSum
	inTime, any := false, false
	for s != "" {
		if s[0] == 't' {
			if inTime {
				return arrow.MonthDayNanoInterval{}, errIntervalSyntax
			}
			inTime, s = true, s[1:]
			continue
		}
		j := 0
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == '-' || s[j] == '+') {
			j++
		}
		if j == 0 || j == len(s) {
			return arrow.MonthDayNanoInterval{}, errIntervalSyntax
		}
		n, err := strconv.ParseFloat(s[:j], 64)
		if err != nil {
			return arrow.MonthDayNanoInterval{}, errIntervalSyntax
		}
		unit := map[bool]map[byte]string{
			false: {'y': "year", 'm': "month", 'w': "week", 'd': "day"},
			true:  {'h': "hour", 'm': "minute", 's': "second"},
		}[inTime][s[j]]
		if unit == "" {
			return arrow.MonthDayNanoInterval{}, errIntervalSyntax
		}
		u := intervalUnits[unit]
		sum.add(n, u.months, u.days, u.micros)
		s, any = s[j+1:], true
	}
	if !any {
		return arrow.MonthDayNanoInterval{}, errIntervalSyntax
	}
	return sum.interval()
}
