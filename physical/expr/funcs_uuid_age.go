package expr

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// gen_random_uuid() and age(a, b).

func init() {
	funcArity["gen_random_uuid"] = [2]int{0, 0}
	funcArity["age"] = [2]int{2, 2}
	opFuncs["gen_random_uuid"] = genRandomUUID
	opFuncs["age"] = ageKernel
}

// genRandomUUID is gen_random_uuid(): a version 4 (random) UUID per row,
// as text in the canonical 8-4-4-4-12 form (sluice has no UUID type).
func genRandomUUID(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	raw := make([]byte, 16*n)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	b := newStringBuilder(mem, n, 36*n)
	var s [36]byte
	for i := 0; i < n; i++ {
		u := raw[16*i : 16*i+16]
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
		hex.Encode(s[0:8], u[0:4])
		s[8] = '-'
		hex.Encode(s[9:13], u[4:6])
		s[13] = '-'
		hex.Encode(s[14:18], u[6:8])
		s[18] = '-'
		hex.Encode(s[19:23], u[8:10])
		s[23] = '-'
		hex.Encode(s[24:36], u[10:16])
		b.b.BinaryBuilder.Append(s[:])
	}
	return b.finish(), nil
}

// ageKernel is age(a, b) of two timestamps: a - b as years, months and
// days counted on the calendar plus a time of day, as PostgreSQL's
// timestamp_age computes it (age('2001-04-10', '1957-06-13') is 43 years
// 9 months 27 days).
func ageKernel(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	a, as, err := i64View(ops[0])
	if err != nil {
		return nil, err
	}
	b, bs, err := i64View(ops[1])
	if err != nil {
		return nil, err
	}
	return fixedRows(plan.Interval, ops, n, mem, func(i int) (arrow.MonthDayNanoInterval, error) {
		return timestampAge(a[i*as], b[i*bs]), nil
	})
}

// timestampAge is the symbolic difference of two timestamps in
// microseconds: each field is subtracted, then negative fields borrow
// from the next larger one, a day borrowing the length of a month of the
// earlier timestamp (of the later one when a < b, where the fields were
// negated first and are negated back at the end).
func timestampAge(a, b int64) arrow.MonthDayNanoInterval {
	type fields struct{ year, mon, mday, hour, min, sec, usec int64 }
	split := func(ts int64) fields {
		days, us := ts/86400_000_000, ts%86400_000_000
		if us < 0 {
			days, us = days-1, us+86400_000_000
		}
		y, m, d := civilFromDays(days)
		return fields{y, int64(m), int64(d), us / 3600_000_000, us / 60_000_000 % 60, us / 1_000_000 % 60, us % 1_000_000}
	}
	t1, t2 := split(a), split(b)
	f := fields{t1.year - t2.year, t1.mon - t2.mon, t1.mday - t2.mday, t1.hour - t2.hour, t1.min - t2.min, t1.sec - t2.sec, t1.usec - t2.usec}
	neg := func() {
		f = fields{-f.year, -f.mon, -f.mday, -f.hour, -f.min, -f.sec, -f.usec}
	}
	before := a < b
	if before {
		neg()
	}
	for f.usec < 0 {
		f.usec += 1_000_000
		f.sec--
	}
	for f.sec < 0 {
		f.sec += 60
		f.min--
	}
	for f.min < 0 {
		f.min += 60
		f.hour--
	}
	for f.hour < 0 {
		f.hour += 24
		f.mday--
	}
	for f.mday < 0 {
		if before {
			f.mday += int64(daysInMonth(t1.year, int(t1.mon)))
		} else {
			f.mday += int64(daysInMonth(t2.year, int(t2.mon)))
		}
		f.mon--
	}
	for f.mon < 0 {
		f.mon += 12
		f.year--
	}
	if before {
		neg()
	}
	us := ((f.hour*60+f.min)*60+f.sec)*1_000_000 + f.usec
	return arrow.MonthDayNanoInterval{Months: int32(f.year*12 + f.mon), Days: int32(f.mday), Nanoseconds: us * 1000}
}
