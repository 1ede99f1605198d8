package sql

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Limits on the SQL text the parser accepts. They exist because the parser
// is PostgreSQL's, compiled into this process through cgo: PostgreSQL's own
// guard (check_stack_depth, max_stack_depth) is inert in pg_query, which
// never sets the stack base it measures from, and pg_query serializes the
// parse tree with protobuf-c, whose packing recurses once per tree level.
// A left-associative chain such as 1+1+...+1 or 'a'||'a'||... is parsed by
// bison without growing its own stack, so nothing stops a tree deep enough
// to overflow the C thread stack: with an 8 MiB stack about 23,000 terms
// (350 bytes of C stack per level) crash the whole process with SIGSEGV,
// and from about 4,500 levels Go's protobuf decoder refuses the tree.
// Right-nested forms ((((1)))), f(f(f(1))), CASE in CASE, subqueries) are
// bounded by bison's YYMAXDEPTH (10,000 entries) and fail with "memory
// exhausted" instead. So the text is checked before the C parser sees it.
const (
	// MaxStatementBytes is the largest statement text accepted (1 MiB).
	// The shell's statement splitter enforces the same limit.
	MaxStatementBytes = 1 << 20
	// MaxExprDepth bounds a statement's estimated expression nesting depth
	// (DuckDB's default max_expression_depth is the same 1000). At that
	// depth the C parser needs about 350 KiB of stack, and the plan's
	// expression trees stay well inside protobuf's recursion limit when
	// they travel to executors.
	MaxExprDepth = 1000
)

// checkSize refuses text larger than MaxStatementBytes and text containing
// a NUL byte: the C parser reads a NUL-terminated string, so everything
// after a NUL would be silently dropped.
func checkSize(text string) error {
	if len(text) > MaxStatementBytes {
		return &Error{
			Kind: "syntax",
			Msg:  fmt.Sprintf("statement too large: %d bytes exceeds the limit of %d bytes (1 MiB)", len(text), MaxStatementBytes),
			Hint: "load large data from a file with CREATE EXTERNAL TABLE instead of writing it into the statement",
		}
	}
	if i := strings.IndexByte(text, 0); i >= 0 {
		e := &Error{Kind: "syntax", Msg: "NUL byte in statement text"}
		e.Line, e.Column = position{line: 1, col: 1}.at(text, i)
		e.Msg = fmt.Sprintf("NUL byte at line %d column %d", e.Line, e.Column)
		return e
	}
	return nil
}

// depthFrame is one open parenthesis, bracket or CASE while estimating.
type depthFrame struct {
	ops    int // operator tokens in the current segment
	child  int // deepest nested group in the current segment
	best   int // deepest finished segment
	setops int // UNION/EXCEPT/INTERSECT/JOIN in this group (never reset)
	start  int32
}

// finish closes the current segment.
func (f *depthFrame) finish() {
	f.best = max(f.best, f.ops+f.child)
	f.ops, f.child = 0, 0
}

// depth is the group's estimated depth.
func (f *depthFrame) depth() int {
	f.finish()
	return f.best + f.setops
}

// checkDepth estimates the parse tree depth of one statement from its
// tokens and refuses statements deeper than MaxExprDepth. The estimate is
// an upper bound: within a segment (the text between commas, AND, OR,
// WHEN/THEN/ELSE and clause keywords, which all build flat lists or
// sibling nodes) every operator may nest one level deeper than the last,
// and each parenthesis, bracket or CASE adds a level to the deepest
// segment inside it. Chains of set operations and joins nest too and are
// counted per group. tokens are the statement's tokens, offsets relative
// to text.
func checkDepth(text string, tokens []*pg.ScanToken, p position) error {
	stack := []depthFrame{{}}
	fail := func(at int32, d int) error {
		e := &Error{
			Kind: "syntax",
			Msg:  fmt.Sprintf("statement too complex: expressions nest about %d levels deep, more than the limit of %d", d, MaxExprDepth),
			Hint: "split long operator chains, for example sum terms in a subquery, or build long lists with IN (...) or VALUES",
		}
		e.Line, e.Column = p.at(text, int(at))
		return e
	}
	for _, t := range tokens {
		top := &stack[len(stack)-1]
		switch t.Token {
		case pg.Token_ASCII_40, pg.Token_ASCII_91, pg.Token_CASE:
			stack = append(stack, depthFrame{start: t.Start})
		case pg.Token_ASCII_41, pg.Token_ASCII_93, pg.Token_END_P:
			if len(stack) == 1 {
				continue // unbalanced: the parser reports it
			}
			d := top.depth() + 1
			if d > MaxExprDepth {
				return fail(top.start, d)
			}
			stack = stack[:len(stack)-1]
			parent := &stack[len(stack)-1]
			parent.child = max(parent.child, d)
		case pg.Token_ASCII_44, pg.Token_AND, pg.Token_OR, pg.Token_WHEN, pg.Token_THEN, pg.Token_ELSE,
			pg.Token_SELECT, pg.Token_FROM, pg.Token_WHERE, pg.Token_GROUP_P, pg.Token_HAVING,
			pg.Token_ORDER, pg.Token_LIMIT, pg.Token_OFFSET, pg.Token_ON, pg.Token_USING,
			pg.Token_WINDOW, pg.Token_VALUES:
			top.finish()
		case pg.Token_UNION, pg.Token_EXCEPT, pg.Token_INTERSECT, pg.Token_JOIN:
			top.setops++
		case pg.Token_ASCII_37, pg.Token_ASCII_42, pg.Token_ASCII_43, pg.Token_ASCII_45, pg.Token_ASCII_47,
			pg.Token_ASCII_60, pg.Token_ASCII_61, pg.Token_ASCII_62, pg.Token_ASCII_94,
			pg.Token_Op, pg.Token_TYPECAST, pg.Token_LESS_EQUALS, pg.Token_GREATER_EQUALS, pg.Token_NOT_EQUALS,
			pg.Token_NOT, pg.Token_NOT_LA, pg.Token_IS, pg.Token_ISNULL, pg.Token_NOTNULL,
			pg.Token_LIKE, pg.Token_ILIKE, pg.Token_SIMILAR, pg.Token_BETWEEN, pg.Token_IN_P,
			pg.Token_COLLATE, pg.Token_AT, pg.Token_OPERATOR:
			top.ops++
		default:
			continue
		}
		top = &stack[len(stack)-1]
		// A segment or group that is already too deep is refused without
		// waiting for it to close (an unclosed one is never closed).
		if d := top.ops + top.child + top.setops + len(stack) - 1; d > MaxExprDepth {
			return fail(t.Start, d)
		}
	}
	if d := stack[0].depth(); d > MaxExprDepth {
		return fail(0, d)
	}
	return nil
}
