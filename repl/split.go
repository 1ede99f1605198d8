// Package repl is sluice's front end: statement splitting, scripts (-c, -f,
// piped stdin) and, on a terminal, the interactive shell.
package repl

import (
	"fmt"
	"strings"

	"sluice/sql"
)

// Piece is one complete statement and the 1-based line it starts on.
type Piece struct {
	SQL  string
	Line int
}

// Splitter accumulates input and cuts it into statements at `;` outside
// string literals, quoted identifiers and comments. It refuses, rather than
// silently mangles, input the server could not take whole: a NUL byte (the
// C parser would end the text there) and a statement longer than
// sql.MaxStatementBytes (a script of one endless line, such as /dev/zero,
// must not grow the shell's memory without bound). After an error the
// splitter's state is undefined; Reset it or stop.
type Splitter struct {
	buf  strings.Builder
	line int // line of the next byte fed
	col  int // column (in characters) of the next byte fed
	// scanning state carried across Feed calls
	inSingle, inDouble, inLine bool
	blockDepth                 int
	start                      int // line where the pending statement started (0: none yet)
	// hold is a final '-', '/' or '*' whose meaning depends on the byte
	// after it, kept for the next Feed when text is fed in arbitrary chunks.
	hold string
}

// NewSplitter returns a splitter whose first line is 1.
func NewSplitter() *Splitter { return &Splitter{line: 1, col: 1} }

// Feed adds text and returns the statements it completed. The error, if
// any, names the line and column of the offending input; the statements
// returned before it are complete and may run.
func (s *Splitter) Feed(text string) ([]Piece, error) {
	var out []Piece
	if s.hold != "" {
		text, s.hold = s.hold+text, ""
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == 0 {
			return out, fmt.Errorf("NUL byte at line %d column %d", s.line, s.col)
		}
		var next byte
		if i+1 < len(text) {
			next = text[i+1]
		} else if (c == '-' || c == '/' || c == '*') && !s.inSingle && !s.inDouble && !s.inLine {
			s.hold = string(c)
			break
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
				s.write(c)
				c = next
				i++
			} else if c == '/' && next == '*' {
				s.blockDepth++
				s.write(c)
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
			s.write(c)
			c = next
			i++
		case c == ';':
			stmt := strings.TrimSpace(s.buf.String())
			s.buf.Reset()
			if stmt != "" && !onlyComments(stmt) {
				out = append(out, Piece{SQL: stmt, Line: s.start})
			}
			s.start = 0
			s.col++
			continue
		}
		s.write(c)
		if s.buf.Len() > sql.MaxStatementBytes {
			return out, fmt.Errorf("statement starting at line %d is too large: more than %d bytes (the limit is 1 MiB)", s.start, sql.MaxStatementBytes)
		}
	}
	return out, nil
}

// write appends one byte of the pending statement and advances the
// position past it.
func (s *Splitter) write(c byte) {
	s.buf.WriteByte(c)
	switch {
	case c == '\n':
		s.line++
		s.col = 1
	case c&0xC0 != 0x80: // not a UTF-8 continuation byte
		s.col++
	}
}

// Pending returns the incomplete statement text, if any (not only comments
// and blanks).
func (s *Splitter) Pending() (Piece, bool) {
	stmt := strings.TrimSpace(s.buf.String() + s.hold)
	if stmt == "" || onlyComments(stmt) {
		return Piece{}, false
	}
	return Piece{SQL: stmt, Line: s.start}, true
}

// Reset drops pending input.
func (s *Splitter) Reset() {
	s.buf.Reset()
	s.inSingle, s.inDouble, s.inLine, s.blockDepth, s.start, s.hold = false, false, false, 0, 0, ""
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
