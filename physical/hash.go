package physical

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cespare/xxhash/v2"

	"sluice/physical/expr"
)

// nullHash is what a NULL contributes to a row hash.
const nullHash = 0x9e3779b97f4a7c15

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb53ca5a8ef5d
	h ^= h >> 33
	return h
}

func combine(acc, h uint64) uint64 { return mix(acc*31 + h) }

// HashRows writes into hashes (len = rows) a hash of each row's values in
// cols. Equal values hash equally whatever array they come from, and the
// hash is the same in every process (hash partitioning depends on it).
// Values of different types never need to match: callers hash key columns
// already cast to a common type.
func HashRows(cols []arrow.Array, hashes []uint64) error {
	for i := range hashes {
		hashes[i] = 0
	}
	for _, col := range cols {
		if err := hashColumn(col, hashes); err != nil {
			return err
		}
	}
	return nil
}

func hashColumn(col arrow.Array, hashes []uint64) error {
	n := len(hashes)
	nulls := col.NullN() > 0
	switch a := col.(type) {
	case *array.Int32:
		v := a.Int32Values()
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				hashes[i] = combine(hashes[i], uint64(int64(v[i])))
			}
		}
	case *array.Date32:
		v := a.Date32Values()
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				hashes[i] = combine(hashes[i], uint64(int64(v[i])))
			}
		}
	case *array.Int64:
		v := a.Int64Values()
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				hashes[i] = combine(hashes[i], uint64(v[i]))
			}
		}
	case *array.Timestamp:
		v := a.TimestampValues()
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				hashes[i] = combine(hashes[i], uint64(v[i]))
			}
		}
	case *array.Float64:
		v := a.Float64Values()
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				// -0 and 0 are equal, and so are all NaNs.
				hashes[i] = combine(hashes[i], expr.FloatKey(v[i]))
			}
		}
	case *array.Decimal128:
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				d := a.Value(i)
				hashes[i] = combine(combine(hashes[i], d.LowBits()), uint64(d.HighBits()))
			}
		}
	case *array.String:
		offs := a.ValueOffsets()
		var data []byte
		if buf := a.Data().Buffers()[2]; buf != nil {
			data = buf.Bytes()
		}
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				hashes[i] = combine(hashes[i], hashString(data, int(offs[i]), int(offs[i+1])))
			}
		}
	case *array.Boolean:
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else if a.Value(i) {
				hashes[i] = combine(hashes[i], 1)
			} else {
				hashes[i] = combine(hashes[i], 2)
			}
		}
	case *array.MonthDayNanoInterval:
		for i := 0; i < n; i++ {
			if nulls && a.IsNull(i) {
				hashes[i] = combine(hashes[i], nullHash)
			} else {
				// Equal intervals ('1 mon', '30 days') hash alike.
				k := expr.IntervalKey(a.Value(i))
				hashes[i] = combine(combine(hashes[i], k.LowBits()), uint64(k.HighBits()))
			}
		}
	case *array.Null:
		for i := 0; i < n; i++ {
			hashes[i] = combine(hashes[i], nullHash)
		}
	default:
		return fmt.Errorf("hashing %s values is not supported", col.DataType())
	}
	return nil
}

// hashString hashes data[b:e]. Strings of up to 8 bytes (flags, codes,
// modes: the usual grouping keys) are loaded as one word and mixed with
// their length, several times cheaper than a call to xxhash; longer ones
// go through xxhash. Either way the hash depends only on the bytes.
func hashString(data []byte, b, e int) uint64 {
	l := e - b
	if l > 8 {
		return xxhash.Sum64(data[b:e])
	}
	return mix(shortWord(data, b, e) ^ uint64(l)*0x9e3779b97f4a7c15)
}

// shortWord returns the bytes data[b:e] (at most 8) as one little-endian
// word, zero above them: one load when the buffer has 8 bytes from b on,
// byte by byte at its very end.
func shortWord(data []byte, b, e int) uint64 {
	if b+8 <= len(data) {
		return binary.LittleEndian.Uint64(data[b:]) & (^uint64(0) >> (64 - 8*uint(e-b)))
	}
	var w uint64
	for k := e - 1; k >= b; k-- {
		w = w<<8 | uint64(data[k])
	}
	return w
}
