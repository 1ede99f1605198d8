package expr

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Like is X [NOT] LIKE Pattern: '%' matches any run of characters, '_'
// exactly one character, '\' makes the next character literal.
type Like struct {
	X, Pattern Expr
	Negated    bool
}

// DataType implements Expr.
func (e *Like) DataType() arrow.DataType { return plan.Bool }

func (e *Like) String() string {
	if e.Negated {
		return e.X.String() + " NOT LIKE " + e.Pattern.String()
	}
	return e.X.String() + " LIKE " + e.Pattern.String()
}

// Eval implements Expr.
func (e *Like) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	x, err := e.X.Eval(batch, mem)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	p, err := evalOperand(e.Pattern, batch, mem)
	if err != nil {
		return nil, err
	}
	defer p.release()
	if x.DataType().ID() == arrow.NULL || p.allNull() {
		return nullArray(plan.Bool, n, mem), nil
	}
	xs, err := strsOf(operand{arr: x})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	ps, err := strsOf(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	valid, nulls := andValidity(mem, n, x, p.arr)
	buf, out := allocBitmap(mem, n)
	var want byte = 1
	if e.Negated {
		want = 0
	}
	if p.isScalar() {
		m, err := compileLike(ps.scalar)
		if err != nil {
			buf.Release()
			releaseBuf(valid)
			return nil, fmt.Errorf("%s: %w", e, err)
		}
		m.matchAll(xs, n, want, out)
		return makeArray(plan.Bool, n, valid, nulls, buf), nil
	}
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	var m *likeMatcher
	var last []byte
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			continue
		}
		pat := ps.at(i)
		if m == nil || !bytes.Equal(pat, last) {
			if m, err = compileLike(pat); err != nil {
				buf.Release()
				releaseBuf(valid)
				return nil, fmt.Errorf("%s: %w", e, err)
			}
			last = pat
		}
		out[i>>3] |= (b2u(m.match(xs.at(i))) ^ want ^ 1) << (i & 7)
	}
	return makeArray(plan.Bool, n, valid, nulls, buf), nil
}

type likeKind int

const (
	likeExact    likeKind = iota // no wildcards
	likePrefix                   // abc%
	likeSuffix                   // %abc
	likeContains                 // %abc%
	likeAll                      // %
	likeGeneral                  // anything else
)

// likeItem is a literal byte run, or (lit == nil) `anyN` '_' wildcards.
type likeItem struct {
	lit  []byte
	anyN int
}

// likeSeg is the part of a pattern between two '%'.
type likeSeg []likeItem

// likeMatcher is a compiled LIKE pattern.
type likeMatcher struct {
	kind likeKind
	lit  []byte    // for the fast kinds
	segs []likeSeg // for likeGeneral: split on '%'
}

// errLikeEscape reports a pattern ending in a lone escape character.
var errLikeEscape = NewDataError("LIKE pattern must not end with escape character")

// compileLike parses pattern into a matcher, choosing a fast path when the
// pattern has one of the common shapes.
func compileLike(pattern []byte) (*likeMatcher, error) {
	segs := []likeSeg{nil}
	var cur []byte
	hasUnderscore := false
	flushLit := func() {
		if len(cur) > 0 {
			s := &segs[len(segs)-1]
			*s = append(*s, likeItem{lit: cur})
			cur = nil
		}
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '\\':
			if i+1 >= len(pattern) {
				return nil, errLikeEscape
			}
			i++
			cur = append(cur, pattern[i])
		case '%':
			flushLit()
			segs = append(segs, nil)
		case '_':
			flushLit()
			hasUnderscore = true
			s := &segs[len(segs)-1]
			if k := len(*s); k > 0 && (*s)[k-1].lit == nil {
				(*s)[k-1].anyN++
			} else {
				*s = append(*s, likeItem{anyN: 1})
			}
		default:
			cur = append(cur, c)
		}
	}
	flushLit()
	m := &likeMatcher{kind: likeGeneral, segs: segs}
	if hasUnderscore {
		return m, nil
	}
	// Without '_' every segment is empty or one literal.
	lit := func(s likeSeg) []byte {
		if len(s) == 0 {
			return []byte{}
		}
		return s[0].lit
	}
	switch {
	case len(segs) == 1:
		m.kind, m.lit = likeExact, lit(segs[0])
	case len(segs) == 2 && len(segs[1]) == 0 && len(segs[0]) == 0:
		m.kind = likeAll
	case len(segs) == 2 && len(segs[1]) == 0:
		m.kind, m.lit = likePrefix, lit(segs[0])
	case len(segs) == 2 && len(segs[0]) == 0:
		m.kind, m.lit = likeSuffix, lit(segs[1])
	case len(segs) == 3 && len(segs[0]) == 0 && len(segs[2]) == 0:
		m.kind, m.lit = likeContains, lit(segs[1])
	}
	return m, nil
}

// matchAll sets bit i of out when (match(row i) == want) for every row.
func (m *likeMatcher) matchAll(xs strs, n int, want byte, out []byte) {
	flip := want ^ 1
	if lit := m.requiredLiteral(); lit != nil && xs.stride == 1 {
		m.matchByLiteral(xs, n, lit, flip, out)
		return
	}
	switch m.kind {
	case likeExact:
		for i := 0; i < n; i++ {
			out[i>>3] |= (b2u(bytes.Equal(xs.at(i), m.lit)) ^ flip) << (i & 7)
		}
	case likePrefix:
		for i := 0; i < n; i++ {
			out[i>>3] |= (b2u(bytes.HasPrefix(xs.at(i), m.lit)) ^ flip) << (i & 7)
		}
	case likeSuffix:
		for i := 0; i < n; i++ {
			out[i>>3] |= (b2u(bytes.HasSuffix(xs.at(i), m.lit)) ^ flip) << (i & 7)
		}
	case likeContains:
		for i := 0; i < n; i++ {
			out[i>>3] |= (b2u(bytes.Contains(xs.at(i), m.lit)) ^ flip) << (i & 7)
		}
	case likeAll:
		for i := 0; i < n; i++ {
			out[i>>3] |= (1 ^ flip) << (i & 7)
		}
	default:
		for i := 0; i < n; i++ {
			out[i>>3] |= (b2u(m.matchGeneral(xs.at(i))) ^ flip) << (i & 7)
		}
	}
}

// requiredLiteral returns, for a pattern that starts with '%', a literal
// every matching string contains: the contained literal, or the literal
// the general pattern's second segment starts with. Nil for other
// patterns.
func (m *likeMatcher) requiredLiteral() []byte {
	switch m.kind {
	case likeContains:
		if len(m.lit) > 0 {
			return m.lit
		}
	case likeGeneral:
		if len(m.segs) >= 3 && len(m.segs[0]) == 0 && len(m.segs[1]) > 0 && len(m.segs[1][0].lit) > 0 {
			return m.segs[1][0].lit
		}
	}
	return nil
}

// matchByLiteral is matchAll for patterns whose matching rows all contain
// lit: one search over the bytes of all rows at once (literalFinder) finds
// the rows that hold it, only those are matched in full, and every other
// row fails.
func (m *likeMatcher) matchByLiteral(xs strs, n int, lit []byte, flip byte, out []byte) {
	if n == 0 {
		return
	}
	if flip == 1 {
		// NOT LIKE: every row is true until it matches.
		for i := range n {
			out[i>>3] |= 1 << (i & 7)
		}
	}
	offs, data := xs.offs, xs.data
	pos, end := int(offs[0]), int(offs[n])
	row := 0
	finder := newLiteralFinder(lit, data[pos:min(end, pos+sampleBytes)])
	for pos < end {
		k := finder.index(data[pos:end])
		if k < 0 {
			break
		}
		at := pos + k
		for int(offs[row+1]) <= at {
			row++
		}
		rowEnd := int(offs[row+1])
		if at+len(lit) > rowEnd {
			// The occurrence runs into the next row, and so would any
			// later one starting in this row.
			pos = rowEnd
			continue
		}
		if m.match(data[offs[row]:rowEnd]) {
			out[row>>3] ^= 1 << (row & 7)
		}
		pos = rowEnd
	}
}

// literalFinder finds a literal in long text by jumping between
// occurrences of its rarest byte (bytes.IndexByte is vectorized), then
// comparing the whole literal: bytes.Index steps through every occurrence
// of the literal's first byte, often a common letter.
type literalFinder struct {
	lit  []byte
	rare int // position in lit of its rarest byte
}

// sampleBytes is how much of the text newLiteralFinder counts bytes in.
const sampleBytes = 4096

// newLiteralFinder picks the byte of lit that is rarest in sample (a piece
// of the text to search), the earliest on ties.
func newLiteralFinder(lit, sample []byte) literalFinder {
	var count [256]int
	for _, c := range sample {
		count[c]++
	}
	f := literalFinder{lit: lit}
	for i, c := range lit {
		if count[c] < count[lit[f.rare]] {
			f.rare = i
		}
	}
	return f
}

// index returns the position of the first occurrence of the literal in s,
// or -1.
func (f literalFinder) index(s []byte) int {
	n := len(f.lit)
	c := f.lit[f.rare]
	for p := f.rare; p+n-f.rare <= len(s); {
		k := bytes.IndexByte(s[p:len(s)-(n-f.rare)+1], c)
		if k < 0 {
			return -1
		}
		start := p + k - f.rare
		if bytes.Equal(s[start:start+n], f.lit) {
			return start
		}
		p += k + 1
	}
	return -1
}

// match reports whether s matches the pattern.
func (m *likeMatcher) match(s []byte) bool {
	switch m.kind {
	case likeExact:
		return bytes.Equal(s, m.lit)
	case likePrefix:
		return bytes.HasPrefix(s, m.lit)
	case likeSuffix:
		return bytes.HasSuffix(s, m.lit)
	case likeContains:
		return bytes.Contains(s, m.lit)
	case likeAll:
		return true
	}
	return m.matchGeneral(s)
}

// matchGeneral anchors the first segment at the start and the last at the
// end, and finds each middle segment at its leftmost position; leftmost is
// optimal because every segment matches a fixed number of characters.
func (m *likeMatcher) matchGeneral(s []byte) bool {
	segs := m.segs
	if len(segs) == 1 {
		end := matchSegAt(segs[0], s, 0)
		return end == len(s)
	}
	pos := matchSegAt(segs[0], s, 0)
	if pos < 0 {
		return false
	}
	for _, seg := range segs[1 : len(segs)-1] {
		if len(seg) == 0 {
			continue
		}
		found := false
		for q := pos; q <= len(s); {
			if seg[0].lit != nil {
				// Jump to the next occurrence of the segment's leading literal.
				k := bytes.Index(s[q:], seg[0].lit)
				if k < 0 {
					return false
				}
				q += k
			}
			if end := matchSegAt(seg, s, q); end >= 0 {
				pos, found = end, true
				break
			}
			if q == len(s) {
				break
			}
			_, w := utf8.DecodeRune(s[q:])
			q += w
		}
		if !found {
			return false
		}
	}
	start := matchSegSuffix(segs[len(segs)-1], s)
	return start >= pos
}

// matchSegAt matches seg at byte position p and returns the end position,
// or -1.
func matchSegAt(seg likeSeg, s []byte, p int) int {
	for _, it := range seg {
		if it.lit != nil {
			if !bytes.HasPrefix(s[p:], it.lit) {
				return -1
			}
			p += len(it.lit)
			continue
		}
		for k := 0; k < it.anyN; k++ {
			if p >= len(s) {
				return -1
			}
			if s[p] < utf8.RuneSelf {
				p++
			} else {
				_, w := utf8.DecodeRune(s[p:])
				p += w
			}
		}
	}
	return p
}

// matchSegSuffix matches seg against the end of s and returns where the
// match starts, or -1.
func matchSegSuffix(seg likeSeg, s []byte) int {
	p := len(s)
	for j := len(seg) - 1; j >= 0; j-- {
		it := seg[j]
		if it.lit != nil {
			if !bytes.HasSuffix(s[:p], it.lit) {
				return -1
			}
			p -= len(it.lit)
			continue
		}
		for k := 0; k < it.anyN; k++ {
			if p <= 0 {
				return -1
			}
			_, w := utf8.DecodeLastRune(s[:p])
			p -= w
		}
	}
	return p
}
