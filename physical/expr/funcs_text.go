package expr

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The text functions below are computed row by row over typed views of
// their arguments: their per-row work (scanning, splitting, padding) dwarfs
// a loop's overhead, so there is no columnar shortcut to take.

// maxTextLen bounds a string a function builds (repeat, lpad, rpad), so
// that repeat('x', 2000000000) fails with a clear error instead of
// exhausting memory. PostgreSQL's own limit is 1 GB.
const maxTextLen = 256 << 20

var errTooLong = NewDataError("requested length too large")

// rowArg gives row-wise access to one evaluated argument.
type rowArg struct {
	s      strs
	ints   []int64
	stride int
	v      validity
}

// rowArgsOf views ops: text arguments as strings, integer ones as int64.
// A NULL constant is an argument that is NULL on every row.
func rowArgsOf(ops []operand, n int) ([]rowArg, error) {
	out := make([]rowArg, len(ops))
	for k, o := range ops {
		if o.isNullScalar() || (o.arr != nil && o.arr.DataType().ID() == arrow.NULL) {
			out[k].v = validity{bits: allZero(n)}
			continue
		}
		if o.arr != nil {
			out[k].v = validityOf(o.arr)
		}
		var err error
		switch id := operandType(o).ID(); id {
		case arrow.STRING:
			out[k].s, err = strsOf(o)
		case arrow.INT32, arrow.INT64:
			out[k].ints, out[k].stride, err = i64View(o)
		default:
			err = fmt.Errorf("internal: unexpected %s argument", operandType(o))
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (a rowArg) valid(i int) bool { return a.v.valid(i) }
func (a rowArg) str(i int) []byte { return a.s.at(i) }
func (a rowArg) int(i int) int64  { return a.ints[i*a.stride] }

func allValid(args []rowArg, i int) bool {
	for _, a := range args {
		if !a.valid(i) {
			return false
		}
	}
	return true
}

// textRows builds a utf8 result: rows where strict is set and an argument
// is NULL are NULL; otherwise f appends the row's value to dst.
func textRows(n int, args []rowArg, strict bool, mem memory.Allocator, f func(i int, dst []byte) ([]byte, error)) (arrow.Array, error) {
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	var err error
	for i := 0; i < n; i++ {
		if strict && !allValid(args, i) {
			b.b.AppendNull()
			continue
		}
		if tmp, err = f(i, tmp[:0]); err != nil {
			b.b.Release()
			return nil, err
		}
		if err := b.append(tmp); err != nil {
			return nil, err
		}
	}
	return b.finish(), nil
}

// concatArgs is concat(a, b, ...): NULL arguments are skipped, so the
// result is never NULL.
func concatArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, false, mem, func(i int, dst []byte) ([]byte, error) {
		for _, a := range args {
			if a.valid(i) {
				dst = append(dst, a.str(i)...)
			}
		}
		return dst, nil
	})
}

// concatWS is concat_ws(sep, a, b, ...): NULL when sep is NULL, otherwise
// the non-NULL arguments joined by sep.
func concatWS(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	for i := 0; i < n; i++ {
		if !args[0].valid(i) {
			b.b.AppendNull()
			continue
		}
		tmp = tmp[:0]
		first := true
		for _, a := range args[1:] {
			if !a.valid(i) {
				continue
			}
			if !first {
				tmp = append(tmp, args[0].str(i)...)
			}
			first = false
			tmp = append(tmp, a.str(i)...)
		}
		b.b.BinaryBuilder.Append(tmp)
	}
	return b.finish(), nil
}

// trimArgs is btrim/ltrim/rtrim(s[, characters]): removes the longest run
// of characters in the set (default a space) from the start, end or both.
func trimArgs(name string, args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		set := " "
		if len(args) > 1 {
			set = string(args[1].str(i))
		}
		s := args[0].str(i)
		switch name {
		case "ltrim":
			s = bytes.TrimLeft(s, set)
		case "rtrim":
			s = bytes.TrimRight(s, set)
		default:
			s = bytes.Trim(s, set)
		}
		return append(dst, s...), nil
	})
}

// repeatArgs is repeat(s, n); n ≤ 0 gives ”.
func repeatArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		s, k := args[0].str(i), args[1].int(i)
		if k <= 0 || len(s) == 0 {
			return dst, nil
		}
		if k > maxTextLen/int64(len(s)) {
			return nil, errTooLong
		}
		for ; k > 0; k-- {
			dst = append(dst, s...)
		}
		return dst, nil
	})
}

// chrArgs is chr(code): the character with that Unicode code point.
func chrArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		c := args[0].int(i)
		switch {
		case c == 0:
			return nil, NewDataError("null character not permitted")
		case c < 0:
			return nil, NewDataError("character number must be positive")
		case c > utf8.MaxRune:
			return nil, dataErrorf("requested character too large for encoding: %d", c)
		case c >= 0xD800 && c <= 0xDFFF:
			return nil, dataErrorf("requested character not valid for encoding: %d", c)
		}
		return utf8.AppendRune(dst, rune(c)), nil
	})
}

// asciiArgs is ascii(s): the code point of the first character, 0 for ”.
func asciiArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if !args[0].valid(i) {
			b.AppendNull()
			continue
		}
		s := args[0].str(i)
		if len(s) == 0 {
			b.Append(0)
			continue
		}
		r, _ := utf8.DecodeRune(s)
		b.Append(int32(r))
	}
	return b.NewArray(), nil
}

// padArgs is lpad/rpad(s, length[, fill]): s filled on the left (right)
// with repetitions of fill (default a space) up to length characters, or
// truncated to length characters when longer. An empty fill leaves s
// as it is, apart from the truncation.
func padArgs(left bool, args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		s, want := args[0].str(i), args[1].int(i)
		fill := []byte(" ")
		if len(args) > 2 {
			fill = args[2].str(i)
		}
		if want <= 0 {
			return dst, nil
		}
		if want > maxTextLen {
			return nil, errTooLong
		}
		have := int64(runeLen(s))
		if have >= want {
			return append(dst, prefixRunes(s, want)...), nil
		}
		if len(fill) == 0 {
			return append(dst, s...), nil
		}
		if !left {
			dst = append(dst, s...)
		}
		for k, need := 0, want-have; need > 0; need-- {
			r, size := utf8.DecodeRune(fill[k:])
			dst = utf8.AppendRune(dst, r)
			if k += size; k >= len(fill) {
				k = 0
			}
		}
		if left {
			dst = append(dst, s...)
		}
		return dst, nil
	})
}

// prefixRunes returns the first k characters of s.
func prefixRunes(s []byte, k int64) []byte {
	if isASCII(s) {
		return s[:min(int64(len(s)), k)]
	}
	for bi := range string(s) {
		if k == 0 {
			return s[:bi]
		}
		k--
	}
	return s
}

// splitPart is split_part(s, delimiter, n): the n-th field (1-based;
// negative counts from the end), ” when there are fewer fields.
func splitPart(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		s, sep, k := args[0].str(i), args[1].str(i), args[2].int(i)
		if k == 0 {
			return nil, NewDataError("field position must not be zero")
		}
		if len(sep) == 0 {
			// The whole string is the only field.
			if k == 1 || k == -1 {
				return append(dst, s...), nil
			}
			return dst, nil
		}
		fields := bytes.Split(s, sep)
		if k < 0 {
			k += int64(len(fields)) + 1
		}
		if k < 1 || k > int64(len(fields)) {
			return dst, nil
		}
		return append(dst, fields[k-1]...), nil
	})
}

// startsWith is starts_with(s, prefix).
func startsWith(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if !allValid(args, i) {
			b.AppendNull()
			continue
		}
		b.Append(bytes.HasPrefix(args[0].str(i), args[1].str(i)))
	}
	return b.NewArray(), nil
}
