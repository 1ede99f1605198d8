package sql

import (
	"fmt"
	"strings"
)

// Error is a user-facing error: a syntax error from the parser, a name
// resolution error from the binder ("bind") or a type error ("type").
type Error struct {
	Kind   string // "syntax", "bind", "type"
	Msg    string
	Line   int    // 1-based; 0 if unknown
	Column int    // 1-based; 0 if unknown
	Near   string // offending text
	Hint   string
}

// Error renders the error as "<kind> error at line L, column C near "x": msg (hint)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind)
	b.WriteString(" error")
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d, column %d", e.Line, e.Column)
	}
	if e.Near != "" {
		fmt.Fprintf(&b, " near %q", e.Near)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// position locates byte offsets of one statement in the original input, so
// errors can point at the user's text rather than at the split-off piece.
type position struct {
	line, col int // 1-based line and column of the statement's first byte
}

// at converts a byte offset inside text (the statement) to an input
// line/column. Columns count runes.
func (p position) at(text string, off int) (line, col int) {
	if off < 0 {
		return 0, 0
	}
	if off > len(text) {
		off = len(text)
	}
	prefix := text[:off]
	nl := strings.Count(prefix, "\n")
	if nl == 0 {
		return p.line, p.col + len([]rune(prefix))
	}
	last := strings.LastIndexByte(prefix, '\n')
	return p.line + nl, len([]rune(prefix[last+1:])) + 1
}

// tokenAt returns the token starting at byte offset off of text, for the
// Near field of errors.
func tokenAt(text string, off int) string {
	if off < 0 || off >= len(text) {
		return ""
	}
	s := text[off:]
	switch c := s[0]; {
	case c == '\'' || c == '"':
		for i := 1; i < len(s); i++ {
			if s[i] == c {
				if i+1 < len(s) && s[i+1] == c {
					i++
					continue
				}
				return s[:i+1]
			}
		}
		return s
	case isIdentByte(c):
		i := 0
		for i < len(s) && (isIdentByte(s[i]) || s[i] == '.') {
			i++
		}
		return s[:i]
	}
	// Operators: take a run of operator characters.
	i := 0
	for i < len(s) && strings.IndexByte("+-*/<>=~!@#%^&|`?", s[i]) >= 0 {
		i++
	}
	if i == 0 {
		i = 1
	}
	return s[:i]
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// levenshtein is the edit distance between a and b, for "did you mean".
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// closest returns the candidate nearest to name, if near enough to be a
// plausible typo (distance at most a third of the length, at least 2).
func closest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(name), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(name)/3) {
		return ""
	}
	return best
}
