package plan

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrSimilarEscape is the error for an ESCAPE string of more than one
// character.
var ErrSimilarEscape = errors.New("invalid escape string")

// SimilarToRegex translates a SQL regular expression (the pattern of
// SIMILAR TO) into the regular expression that matches the same strings,
// as PostgreSQL's similar_to_escape does: the whole string must match, '%'
// is any string, '_' any character, parentheses do not capture, '.', '^'
// and '$' are literal, and the escape character (esc, "" for none) makes
// the next character literal. Escaped double quotes split the pattern into
// the three parts substring(... SIMILAR ...) returns the middle of; more
// than two are an error. A trailing lone escape character is dropped.
func SimilarToRegex(pat, esc string) (string, error) {
	if utf8.RuneCountInString(esc) > 1 {
		return "", ErrSimilarEscape
	}
	e, _ := utf8.DecodeRuneInString(esc)
	hasEsc := esc != ""
	var b strings.Builder
	b.WriteString("^(?:")
	afterEscape := false
	quotes := 0
	// classDepth counts open brackets of a character class; classStart is
	// 1 just after the class's '[', 2 after a leading '^', 3 past the start:
	// a ']' is literal while it is 1 or 2.
	classDepth, classStart := 0, 0
	for _, c := range pat {
		switch {
		case afterEscape:
			if c == '"' && classDepth < 1 {
				switch quotes {
				case 0:
					b.WriteString("){1,1}?(")
				case 1:
					b.WriteString("){1,1}(?:")
				default:
					return "", errors.New("SQL regular expression may not contain more than two escape-double-quote separators")
				}
				quotes++
			} else {
				b.WriteByte('\\')
				b.WriteRune(c)
			}
			afterEscape = false
		case hasEsc && c == e:
			afterEscape = true
		case classDepth > 0:
			if c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
			if c == ']' && classStart > 2 {
				classDepth--
			} else if c == '[' {
				classDepth++
			}
			if c == '^' {
				classStart++
			} else {
				classStart = 3
			}
		case c == '[':
			b.WriteRune(c)
			classDepth++
			classStart = 1
		case c == '%':
			b.WriteString(".*")
		case c == '_':
			b.WriteByte('.')
		case c == '(':
			b.WriteString("(?:")
		case c == '\\' || c == '.' || c == '^' || c == '$':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteString(")$")
	return b.String(), nil
}
