package physical

import (
	"fmt"

	"sluice/physical/expr"
	"sluice/plan"
)

// SortKey is one sort key of Sort, TopK and SortPreservingMerge.
type SortKey struct {
	Expr       expr.Expr
	Desc       bool
	NullsFirst bool
}

func (k SortKey) String() string {
	s := k.Expr.String()
	if k.Desc {
		s += " DESC"
	} else {
		s += " ASC"
	}
	if k.NullsFirst {
		s += " NULLS FIRST"
	} else {
		s += " NULLS LAST"
	}
	return s
}

// ColumnPredicate is a simple predicate `column Op Value` on a scanned
// table's column (an index into the table's full schema), used only to skip
// row groups or files whose statistics prove no row can match. Op is a
// comparison operator; Value has the column's type.
type ColumnPredicate struct {
	Column int
	Op     plan.BinaryOp
	Value  plan.Literal
}

func (p ColumnPredicate) String() string {
	return fmt.Sprintf("#%d %s %s", p.Column, p.Op, p.Value.String())
}

// JoinType is the kind of a physical join. The left input is always the
// build side (hashed, or buffered by the nested-loop join); the right input is
// probed. Semi and anti joins output only the named side's columns; the other
// kinds output left columns then right columns.
type JoinType int

// Join types.
const (
	JoinInner JoinType = iota
	JoinLeft
	JoinRight
	JoinFull
	JoinLeftSemi
	JoinLeftAnti
	JoinRightSemi
	JoinRightAnti
)

var joinTypeNames = [...]string{"Inner", "Left", "Right", "Full", "LeftSemi", "LeftAnti", "RightSemi", "RightAnti"}

func (t JoinType) String() string { return joinTypeNames[t] }

// EmitsUnmatchedBuild reports whether the join must see every probe
// partition before it can finish (it outputs build rows based on whether any
// probe row matched them).
func (t JoinType) EmitsUnmatchedBuild() bool {
	return t == JoinLeft || t == JoinFull || t == JoinLeftSemi || t == JoinLeftAnti
}
