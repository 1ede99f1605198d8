package plan

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
)

// Rules shared by the binder (which checks constant arguments when it
// binds) and the executors (which check the values they meet), so both
// accept the same inputs.

// truncUnits are the units date_trunc accepts.
var truncUnits = map[string]bool{
	"microseconds": true, "milliseconds": true, "second": true, "minute": true, "hour": true,
	"day": true, "week": true, "month": true, "quarter": true, "year": true,
	"decade": true, "century": true, "millennium": true,
}

// diffUnits maps the part names date_diff accepts, DuckDB's spellings
// included, to the unit counted.
var diffUnits = map[string]string{
	"year": "year", "years": "year", "yr": "year", "yrs": "year", "y": "year",
	"quarter": "quarter", "quarters": "quarter",
	"month": "month", "months": "month", "mon": "month", "mons": "month",
	"week": "week", "weeks": "week", "w": "week",
	"day": "day", "days": "day", "d": "day",
	"hour": "hour", "hours": "hour", "hr": "hour", "hrs": "hour", "h": "hour",
	"minute": "minute", "minutes": "minute", "min": "minute", "mins": "minute", "m": "minute",
	"second": "second", "seconds": "second", "sec": "second", "secs": "second", "s": "second",
	"millisecond": "millisecond", "milliseconds": "millisecond", "ms": "millisecond",
	"microsecond": "microsecond", "microseconds": "microsecond", "us": "microsecond",
}

// DiffUnit returns the unit a date_diff part (lower case) counts, and
// whether it is one.
func DiffUnit(part string) (string, bool) {
	u, ok := diffUnits[part]
	return u, ok
}

// CheckTruncUnit reports whether unit (lower case) is a date_trunc unit.
func CheckTruncUnit(unit string) error {
	if !truncUnits[unit] {
		return fmt.Errorf("unit %q not recognized for type TIMESTAMP", unit)
	}
	return nil
}

// CompileRegex compiles a PostgreSQL pattern with regexp_replace's flags:
// 'g' (every match; reported as global, the caller's business), 'i' (case
// insensitive) and 'c' (case sensitive, the default). Patterns run on Go's
// RE2 engine, which covers the common subset of PostgreSQL's advanced
// regular expressions (it has no backreferences in patterns and no
// lookaround). As in PostgreSQL, '.' matches a newline.
func CompileRegex(pat, flags string) (re *regexp.Regexp, global bool, err error) {
	prefix := "(?s)"
	for _, f := range flags {
		switch f {
		case 'g':
			global = true
		case 'i':
			prefix = "(?si)"
		case 'c':
			prefix = "(?s)"
		default:
			return nil, false, fmt.Errorf("invalid regular expression option: %q", f)
		}
	}
	if re, err = regexp.Compile(prefix + pat); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			// Report the user's pattern, not the one with our flag prefix.
			return nil, false, fmt.Errorf("invalid regular expression %q: %s", pat, se.Code)
		}
		return nil, false, fmt.Errorf("invalid regular expression %q: %w", pat, err)
	}
	return re, global, nil
}
