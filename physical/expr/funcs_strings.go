package expr

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// More text functions, row by row like those of funcs_text.go. Positions
// and lengths count characters, not bytes, except octet_length and
// bit_length.

// stringArity lists these functions with their argument counts.
var stringArity = map[string][2]int{
	"replace": {3, 3}, "left": {2, 2}, "right": {2, 2}, "reverse": {1, 1}, "strpos": {2, 2},
	"translate": {3, 3}, "initcap": {1, 1}, "md5": {1, 1}, "sha256": {1, 1}, "ends_with": {2, 2},
	"contains": {2, 2}, "octet_length": {1, 1}, "bit_length": {1, 1}, "to_hex": {1, 1},
	"regexp_extract": {2, 3}, "format": {1, 1 << 16},
}

func init() {
	for name, ar := range stringArity {
		funcArity[name] = ar
	}
	for name, f := range map[string]rowKernel{
		"replace":        replaceArgs,
		"left":           leftRight(true),
		"right":          leftRight(false),
		"reverse":        reverseArgs,
		"strpos":         strposArgs,
		"translate":      translateArgs,
		"initcap":        initcapArgs,
		"md5":            hashArgs(func(b []byte) []byte { h := md5.Sum(b); return h[:] }),
		"sha256":         hashArgs(func(b []byte) []byte { h := sha256.Sum256(b); return h[:] }),
		"ends_with":      boolRows(bytes.HasSuffix),
		"contains":       boolRows(bytes.Contains),
		"octet_length":   lengthRows(func(b []byte) int32 { return int32(len(b)) }),
		"bit_length":     lengthRows(func(b []byte) int32 { return int32(8 * len(b)) }),
		"regexp_extract": regexpExtract,
		"format":         formatArgs,
	} {
		rowFuncs[name] = f
	}
	opFuncs["to_hex"] = toHex
	nonStrict["format"] = true
}

// replaceArgs is replace(s, from, to): every occurrence of from replaced;
// an empty from leaves s as it is.
func replaceArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		s, from, to := args[0].str(i), args[1].str(i), args[2].str(i)
		if len(from) == 0 {
			return append(dst, s...), nil
		}
		for {
			k := bytes.Index(s, from)
			if k < 0 {
				break
			}
			dst = append(append(dst, s[:k]...), to...)
			s = s[k+len(from):]
			if len(dst) > maxTextLen {
				return nil, errTooLong
			}
		}
		return append(dst, s...), nil
	})
}

// runeOffset returns the byte offset of character k of s (len(s) past the
// end).
func runeOffset(s []byte, k int64) int {
	off := 0
	for ; k > 0 && off < len(s); k-- {
		_, size := utf8.DecodeRune(s[off:])
		off += size
	}
	return off
}

// leftRight is left(s, n) and right(s, n): the first (last) n characters;
// a negative n gives all but the last (first) |n|.
func leftRight(left bool) rowKernel {
	return func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
		return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
			s, k := args[0].str(i), args[1].int(i)
			chars := int64(utf8.RuneCount(s))
			var from, to int64 // in characters
			switch {
			case left && k >= 0:
				from, to = 0, min(k, chars)
			case left:
				from, to = 0, max(chars+k, 0)
			case k >= 0:
				from, to = max(chars-k, 0), chars
			default:
				from, to = min(-k, chars), chars
			}
			a := runeOffset(s, from)
			b := a + runeOffset(s[a:], to-from)
			return append(dst, s[a:b]...), nil
		})
	}
}

// reverseArgs is reverse(s), character by character.
func reverseArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		s := args[0].str(i)
		for len(s) > 0 {
			_, size := utf8.DecodeLastRune(s)
			dst = append(dst, s[len(s)-size:]...)
			s = s[:len(s)-size]
		}
		return dst, nil
	})
}

// intRows builds an INT result: NULL where an argument is NULL.
func intRows(args []rowArg, n int, mem memory.Allocator, f func(i int) int32) arrow.Array {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if !allValid(args, i) {
			b.AppendNull()
			continue
		}
		b.Append(f(i))
	}
	return b.NewArray()
}

// strposArgs is strpos(s, sub) and position(sub IN s): the character
// position of sub's first occurrence, 0 when there is none (1 for an
// empty sub).
func strposArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return intRows(args, n, mem, func(i int) int32 {
		s := args[0].str(i)
		k := bytes.Index(s, args[1].str(i))
		if k < 0 {
			return 0
		}
		return int32(utf8.RuneCount(s[:k])) + 1
	}), nil
}

func lengthRows(f func([]byte) int32) rowKernel {
	return func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
		return intRows(args, n, mem, func(i int) int32 { return f(args[0].str(i)) }), nil
	}
}

// boolRows makes a BOOLEAN function of two text arguments.
func boolRows(f func(s, x []byte) bool) rowKernel {
	return func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			if !allValid(args, i) {
				b.AppendNull()
				continue
			}
			b.Append(f(args[0].str(i), args[1].str(i)))
		}
		return b.NewArray(), nil
	}
}

// translateArgs is translate(s, from, to): each character of s found in
// from (its first occurrence there) becomes the character at the same
// place in to, or is dropped when to is shorter.
func translateArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		from := []rune(string(args[1].str(i)))
		to := []rune(string(args[2].str(i)))
		for _, r := range string(args[0].str(i)) {
			k := -1
			for j, f := range from {
				if f == r {
					k = j
					break
				}
			}
			switch {
			case k < 0:
				dst = utf8.AppendRune(dst, r)
			case k < len(to):
				dst = utf8.AppendRune(dst, to[k])
			}
		}
		return dst, nil
	})
}

// initcapArgs is initcap(s): the first letter of each word upper case, the
// rest lower case; words are runs of letters and digits.
func initcapArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		inWord := false
		for _, r := range string(args[0].str(i)) {
			if inWord {
				r = unicode.ToLower(r)
			} else {
				r = unicode.ToUpper(r)
			}
			inWord = unicode.IsLetter(r) || unicode.IsDigit(r)
			dst = utf8.AppendRune(dst, r)
		}
		return dst, nil
	})
}

// hashArgs makes md5(s) and sha256(s): the digest as lower-case hex.
func hashArgs(sum func([]byte) []byte) rowKernel {
	return func(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
		return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
			return hex.AppendEncode(dst, sum(args[0].str(i))), nil
		})
	}
}

// regexpExtract is DuckDB's regexp_extract(s, pattern [, group]): the
// group (0: the whole match) of the first match, an empty string when nothing matches.
func regexpExtract(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	cache := regexCache{}
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		re, _, err := cache.compile(string(args[1].str(i)), "")
		if err != nil {
			return nil, err
		}
		g := int64(0)
		if len(args) > 2 {
			g = args[2].int(i)
		}
		if g < 0 || g > int64(re.NumSubexp()) {
			return nil, dataErrorf("regexp_extract: group %d does not exist in the pattern (it has %d)", g, re.NumSubexp())
		}
		s := args[0].str(i)
		m := re.FindSubmatchIndex(s)
		if m == nil || m[2*g] < 0 {
			return dst, nil
		}
		return append(dst, s[m[2*g]:m[2*g+1]]...), nil
	})
}

// toHex is to_hex(x): x in hexadecimal, negative numbers in two's
// complement of their type's width, as PostgreSQL prints them.
func toHex(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	x, xs, err := i64View(ops[0])
	if err != nil {
		return nil, err
	}
	narrow := operandType(ops[0]).ID() == arrow.INT32
	var v validity
	if ops[0].arr != nil {
		v = validityOf(ops[0].arr)
	}
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			b.b.AppendNull()
			continue
		}
		u := uint64(x[i*xs])
		if narrow {
			u = uint64(uint32(x[i*xs]))
		}
		tmp = strconv.AppendUint(tmp[:0], u, 16)
		b.b.BinaryBuilder.Append(tmp)
	}
	return castResult(b.finish(), plan.Utf8, mem)
}

// formatArgs is format(fmt, args...): %s inserts an argument as text (a
// NULL as nothing), %L as a quoted SQL literal (a NULL as NULL), %% a
// percent sign. A conversion may name its argument (%2$s) and give a
// width (%10s, %-10s: padded on the left, or the right with -). A NULL
// fmt gives NULL.
func formatArgs(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	var err error
	for i := 0; i < n; i++ {
		if !args[0].valid(i) {
			b.b.AppendNull()
			continue
		}
		if tmp, err = formatRow(tmp[:0], args, i); err != nil {
			b.b.Release()
			return nil, err
		}
		b.b.BinaryBuilder.Append(tmp)
	}
	return b.finish(), nil
}

func formatRow(dst []byte, args []rowArg, row int) ([]byte, error) {
	f := args[0].str(row)
	next := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			dst = append(dst, f[i])
			continue
		}
		i++
		if i == len(f) {
			return nil, NewDataError("unterminated format() type specifier")
		}
		if f[i] == '%' {
			dst = append(dst, '%')
			continue
		}
		// [position$][-][width]type
		num := func() (int, bool) {
			start, v := i, 0
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				v = v*10 + int(f[i]-'0')
				if v > maxTextLen {
					return 0, false
				}
				i++
			}
			return v, i > start
		}
		arg, save := next, i
		if v, ok := num(); ok && i < len(f) && f[i] == '$' {
			if v == 0 {
				return nil, NewDataError("format specifies argument 0, but arguments are numbered from 1")
			}
			arg = v
			i++
		} else {
			i = save // no position: the digits are a width, read below
		}
		left := false
		if i < len(f) && f[i] == '-' {
			left = true
			i++
		}
		width, _ := num()
		if i == len(f) {
			return nil, NewDataError("unterminated format() type specifier")
		}
		if arg >= len(args) {
			return nil, NewDataError("too few arguments for format()")
		}
		next = arg + 1
		a := args[arg]
		var val []byte
		switch f[i] {
		case 's':
			if a.valid(row) {
				val = a.str(row)
			}
		case 'L':
			if a.valid(row) {
				val = quoteLiteral(a.str(row))
			} else {
				val = []byte("NULL")
			}
		default:
			return nil, dataErrorf("unrecognized format() type specifier \"%c\"", f[i])
		}
		pad := width - utf8.RuneCount(val)
		if !left {
			for ; pad > 0; pad-- {
				dst = append(dst, ' ')
			}
		}
		dst = append(dst, val...)
		for ; pad > 0; pad-- {
			dst = append(dst, ' ')
		}
		if len(dst) > maxTextLen {
			return nil, errTooLong
		}
	}
	return dst, nil
}

// quoteLiteral is PostgreSQL's quote_literal: single quotes doubled, and
// an E-prefixed string with doubled backslashes when there are any.
func quoteLiteral(s []byte) []byte {
	out := make([]byte, 0, len(s)+3)
	if bytes.IndexByte(s, '\\') >= 0 {
		out = append(out, 'E')
	}
	out = append(out, '\'')
	for _, c := range s {
		if c == '\'' || c == '\\' {
			out = append(out, c)
		}
		out = append(out, c)
	}
	return append(out, '\'')
}
