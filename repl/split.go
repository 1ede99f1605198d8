// Package repl is sluice's front end: statement splitting, scripts (-c, -f,
// piped stdin) and, on a terminal, the interactive shell.
package repl

import "strings"

// Piece is one complete statement and the 1-based line it starts on.
type Piece struct {
	SQL  string
	Line int
}

// Splitter accumulates input and cuts it into statements at `;` outside
// string literals, quoted identifiers and comments.
type Splitter struct {
	buf  strings.Builder
	line int // line of the next byte fed
	// scanning state carried across Feed calls
	inSingle, inDouble, inLine bool
	blockDepth                 int
	start                      int // line where the pending statement started (0: none yet)
}

// NewSplitter returns a splitter whose first line is 1.
func NewSplitter() *Splitter { return &Splitter{line: 1} }

// Feed adds text and returns the statements it completed.
func (s *Splitter) Feed(text string) []Piece {
	var out []Piece
	for i := 0; i < len(text); i++ {
		c := text[i]
		var next byte
		if i+1 < len(text) {
			next = text[i+1]
		}
		if s.start == 0 && !isSpace(c) && c != ';' {
			s.start = s.line
		}
		switch {
		case s.inLine:
			if c == '\n' {
				s.inLine = false
			}
		case s.blockDepth > 0:
			if c == '*' && next == '/' {
				s.blockDepth--
				s.buf.WriteByte(c)
				c = next
				i++
			} else if c == '/' && next == '*' {
				s.blockDepth++
				s.buf.WriteByte(c)
				c = next
				i++
			}
		case s.inSingle:
			if c == '\'' {
				s.inSingle = false
			}
		case s.inDouble:
			if c == '"' {
				s.inDouble = false
			}
		case c == '\'':
			s.inSingle = true
		case c == '"':
			s.inDouble = true
		case c == '-' && next == '-':
			s.inLine = true
		case c == '/' && next == '*':
			s.blockDepth++
			s.buf.WriteByte(c)
			c = next
			i++
		case c == ';':
			stmt := strings.TrimSpace(s.buf.String())
			s.buf.Reset()
			if stmt != "" && !onlyComments(stmt) {
				out = append(out, Piece{SQL: stmt, Line: s.start})
			}
			s.start = 0
			continue
		}
		if c == '\n' {
			s.line++
		}
		s.buf.WriteByte(c)
	}
	return out
}

// Pending returns the incomplete statement text, if any (not only comments
// and blanks).
func (s *Splitter) Pending() (Piece, bool) {
	stmt := strings.TrimSpace(s.buf.String())
	if stmt == "" || onlyComments(stmt) {
		return Piece{}, false
	}
	return Piece{SQL: stmt, Line: s.start}, true
}

// Reset drops pending input.
func (s *Splitter) Reset() {
	s.buf.Reset()
	s.inSingle, s.inDouble, s.inLine, s.blockDepth, s.start = false, false, false, 0, 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// onlyComments reports whether stmt holds nothing but comments.
func onlyComments(stmt string) bool {
	sp := &Splitter{line: 1}
	depth := 0
	for i := 0; i < len(stmt); i++ {
		c := stmt[i]
		switch {
		case sp.inLine:
			if c == '\n' {
				sp.inLine = false
			}
		case depth > 0:
			if c == '*' && i+1 < len(stmt) && stmt[i+1] == '/' {
				depth--
				i++
			} else if c == '/' && i+1 < len(stmt) && stmt[i+1] == '*' {
				depth++
				i++
			}
		case c == '-' && i+1 < len(stmt) && stmt[i+1] == '-':
			sp.inLine = true
		case c == '/' && i+1 < len(stmt) && stmt[i+1] == '*':
			depth++
			i++
		case !isSpace(c):
			return false
		}
	}
	return true
}
