package expr

import "math"

// PostgreSQL's (and DuckDB's) order of DOUBLE values, which every
// comparison, sort, grouping, join and min/max follows: NaN equals NaN
// and is greater than every other value, infinity included; -0 equals 0.
// IEEE comparison (NaN unequal to everything, even itself) would put each
// NaN in a group of its own and make x = 'NaN' false.

// FloatsEqual reports whether a and b are equal in that order.
func FloatsEqual(a, b float64) bool {
	return a == b || (a != a && b != b)
}

// CompareFloats returns -1, 0 or 1 as a is before, equal to or after b
// in that order.
func CompareFloats(a, b float64) int {
	switch an, bn := a != a, b != b; {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FloatKey is f's key for hashing and grouping: equal in that order means
// equal keys (every NaN one key, -0 the key of 0).
func FloatKey(f float64) uint64 {
	switch {
	case f != f:
		return math.Float64bits(math.NaN())
	case f == 0:
		return 0
	}
	return math.Float64bits(f)
}
