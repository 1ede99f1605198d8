package expr

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// strs reads utf8 values of an array or a scalar without per-row
// allocation.
type strs struct {
	offs   []int32
	data   []byte
	scalar []byte
	stride int
}

func strsOf(o operand) (strs, error) {
	if o.isScalar() {
		s, ok := o.lit.Val.(string)
		if !ok && o.lit.Val != nil {
			return strs{}, fmt.Errorf("internal: %T constant where a string was expected", o.lit.Val)
		}
		return strs{scalar: []byte(s)}, nil
	}
	a, ok := o.arr.(*array.String)
	if !ok {
		return strs{}, fmt.Errorf("internal: %s operand where a string was expected", o.arr.DataType())
	}
	return strs{offs: a.ValueOffsets(), data: fullStringData(a), stride: 1}, nil
}

// at returns row i's bytes, aliasing the input buffer.
func (s strs) at(i int) []byte {
	if s.stride == 0 {
		return s.scalar
	}
	return s.data[s.offs[i]:s.offs[i+1]]
}

// stringBuilder accumulates a utf8 result with a validity mask.
type stringBuilder struct {
	b *array.StringBuilder
}

func newStringBuilder(mem memory.Allocator, n, dataHint int) stringBuilder {
	b := array.NewStringBuilder(mem)
	b.Reserve(n)
	if dataHint > 0 {
		b.ReserveData(dataHint)
	}
	return stringBuilder{b: b}
}

// maxBatchText bounds the bytes of the strings of one result array: a
// short string repeated by a function over every row of a batch
// (repeat('x', 100000000) over 100 rows) would otherwise allocate its
// way past the memory the process has, before any reservation sees it,
// and past the 2 GiB a utf8 array's int32 offsets address.
// (A variable so that tests can lower it.)
var maxBatchText = 1 << 30

var errBatchTooLong = NewDataError("result too large: the strings of one batch would exceed 1 GiB (a smaller execution.batch_size may help)")

// append adds v, or fails with errBatchTooLong (releasing the builder)
// when the array would grow past maxBatchText.
func (s stringBuilder) append(v []byte) error {
	if s.b.DataLen()+len(v) > maxBatchText {
		s.b.Release()
		return errBatchTooLong
	}
	s.b.BinaryBuilder.Append(v)
	return nil
}

func (s stringBuilder) finish() arrow.Array {
	defer s.b.Release()
	return s.b.NewArray()
}

// concat evaluates l || r; NULL if either side is NULL.
func concat(l, r operand, n int, mem memory.Allocator) (arrow.Array, error) {
	ls, err := strsOf(l)
	if err != nil {
		return nil, err
	}
	rs, err := strsOf(r)
	if err != nil {
		return nil, err
	}
	lv, rv := validity{}, validity{}
	if l.arr != nil {
		lv = validityOf(l.arr)
	}
	if r.arr != nil {
		rv = validityOf(r.arr)
	}
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	for i := 0; i < n; i++ {
		if !lv.valid(i) || !rv.valid(i) {
			b.b.AppendNull()
			continue
		}
		tmp = append(append(tmp[:0], ls.at(i)...), rs.at(i)...)
		if err := b.append(tmp); err != nil {
			return nil, err
		}
	}
	return b.finish(), nil
}

// stringMap applies f to every non-NULL value of a utf8 array.
func stringMap(a arrow.Array, mem memory.Allocator, f func(dst, src []byte) []byte) (arrow.Array, error) {
	s, err := strsOf(operand{arr: a})
	if err != nil {
		return nil, err
	}
	v := validityOf(a)
	n := a.Len()
	b := newStringBuilder(mem, n, len(s.data))
	var tmp []byte
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			b.b.AppendNull()
			continue
		}
		tmp = f(tmp[:0], s.at(i))
		if err := b.append(tmp); err != nil {
			return nil, err
		}
	}
	return b.finish(), nil
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func upperBytes(dst, src []byte) []byte {
	if isASCII(src) {
		for _, c := range src {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
		}
		return dst
	}
	return append(dst, bytes.ToUpper(src)...)
}

func lowerBytes(dst, src []byte) []byte {
	if isASCII(src) {
		for _, c := range src {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
		return dst
	}
	return append(dst, bytes.ToLower(src)...)
}

func trimBytes(dst, src []byte) []byte {
	return append(dst, bytes.Trim(src, " ")...)
}

// substringBytes implements SQL substring(s FROM start FOR length) on
// characters: positions are 1-based and the window [start, start+length)
// is clipped to the string, so start may be ≤ 0. hasLen false means "to the
// end". A negative length is an error.
func substringBytes(dst, src []byte, start, length int64, hasLen bool) ([]byte, error) {
	end := int64(1) << 62
	if hasLen {
		if length < 0 {
			return nil, NewDataError("negative substring length not allowed")
		}
		end = start + length
	}
	if start < 1 {
		start = 1
	}
	if end <= start {
		return dst, nil
	}
	// Characters before end are bytes when those bytes are ASCII (a
	// multi-byte character cannot begin inside an ASCII prefix), so the
	// rest of the string, however long, need not be looked at.
	if n := int64(len(src)); isASCII(src[:min(end-1, n)]) {
		if start > n {
			return dst, nil
		}
		return append(dst, src[start-1:min(end-1, n)]...), nil
	}
	// Walk runes: character k (1-based) starts at byte bi.
	k := int64(1)
	from, to := -1, len(src)
	for bi := range string(src) {
		if k == start {
			from = bi
		}
		if k == end {
			to = bi
			break
		}
		k++
	}
	if from < 0 {
		return dst, nil
	}
	return append(dst, src[from:to]...), nil
}

// runeLen counts characters.
func runeLen(b []byte) int32 {
	if isASCII(b) {
		return int32(len(b))
	}
	return int32(utf8.RuneCount(b))
}
