package plan

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// AppendIntervalText appends iv as PostgreSQL prints an interval in its
// default style: "1 year 2 mons 3 days 04:05:06.5", each non-zero part
// with its own sign, the time of day as [-]HH:MM:SS[.ffffff], "00:00:00"
// for zero. Nanoseconds below a microsecond are dropped, as PostgreSQL
// keeps microseconds.
func AppendIntervalText(dst []byte, iv arrow.MonthDayNanoInterval) []byte {
	zero, before := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !zero {
			dst = append(dst, ' ')
		}
		if before && v > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 {
			dst = append(dst, 's')
		}
		before, zero = v < 0, false
	}
	part(int64(iv.Months/12), "year")
	part(int64(iv.Months%12), "mon")
	part(int64(iv.Days), "day")
	us := iv.Nanoseconds / 1000
	if zero || us != 0 {
		if !zero {
			dst = append(dst, ' ')
		}
		switch {
		case us < 0:
			dst = append(dst, '-')
			us = -us
		case before:
			dst = append(dst, '+')
		}
		h, m, s, f := us/3600_000_000, us/60_000_000%60, us/1_000_000%60, us%1_000_000
		dst = append2(dst, h)
		dst = append(dst, ':')
		dst = append2(dst, m)
		dst = append(dst, ':')
		dst = append2(dst, s)
		if f != 0 {
			frac := strconv.AppendInt(nil, 1_000_000+f, 10)[1:]
			for len(frac) > 0 && frac[len(frac)-1] == '0' {
				frac = frac[:len(frac)-1]
			}
			dst = append(dst, '.')
			dst = append(dst, frac...)
		}
	}
	return dst
}

// append2 appends v with at least two digits.
func append2(dst []byte, v int64) []byte {
	if v < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, v, 10)
}

// AppendFloatText appends x as text the way sluice casts a DOUBLE to
// text: without an exponent in the usual range (1e-4 up to 1e15), with one
// beyond it, and the infinities as PostgreSQL spells them (Infinity,
// -Infinity). The binder folds constant casts with it, and the cast kernel
// uses it per row, so a cast gives the same text either way.
func AppendFloatText(dst []byte, x float64) []byte {
	if math.IsInf(x, 0) {
		if x < 0 {
			dst = append(dst, '-')
		}
		return append(dst, "Infinity"...)
	}
	if ax := math.Abs(x); ax == 0 || (ax >= 1e-4 && ax < 1e15) {
		return strconv.AppendFloat(dst, x, 'f', -1, 64)
	}
	return strconv.AppendFloat(dst, x, 'g', -1, 64)
}
