package plan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// DistinctFrom is L IS DISTINCT FROM R, or L IS NOT DISTINCT FROM R when
// Negated: comparison that treats NULL as an ordinary value, so the result
// is never NULL (two NULLs are not distinct, a NULL and a value are). The
// binder casts both operands to their common type.
type DistinctFrom struct {
	L, R    Expr
	Negated bool
}

// Type implements Expr.
func (e *DistinctFrom) Type() arrow.DataType { return Bool }

// Children implements Expr.
func (e *DistinctFrom) Children() []Expr { return []Expr{e.L, e.R} }

// WithChildren implements Expr.
func (e *DistinctFrom) WithChildren(c []Expr) Expr {
	return &DistinctFrom{L: c[0], R: c[1], Negated: e.Negated}
}

func (e *DistinctFrom) String() string {
	if e.Negated {
		return "(" + e.L.String() + " IS NOT DISTINCT FROM " + e.R.String() + ")"
	}
	return "(" + e.L.String() + " IS DISTINCT FROM " + e.R.String() + ")"
}

// NullSafeKeys splits L IS NOT DISTINCT FROM R into two equalities that a
// hash join can use as keys, neither side of which is ever NULL: (L IS
// NULL) = (R IS NULL) and coalesce(L, z) = coalesce(R, z), with z any
// value of the operands' type. Two rows then match exactly when both
// operands are NULL or both are equal values. ok is false for a type
// without such a value.
func NullSafeKeys(l, r Expr) (lk, rk []Expr, ok bool) {
	z, ok := zeroLiteral(l.Type())
	if !ok {
		return nil, nil, false
	}
	co := func(x Expr) Expr {
		return &Func{Name: "coalesce", Args: []Expr{x, z}, Typ: x.Type()}
	}
	return []Expr{&IsNull{X: l}, co(l)}, []Expr{&IsNull{X: r}, co(r)}, true
}

// zeroLiteral is a non-NULL constant of type t.
func zeroLiteral(t arrow.DataType) (*Literal, bool) {
	switch t.ID() {
	case arrow.BOOL:
		return &Literal{Typ: t, Val: false}, true
	case arrow.INT32, arrow.DATE32:
		return &Literal{Typ: t, Val: int32(0)}, true
	case arrow.INT64, arrow.TIMESTAMP:
		return &Literal{Typ: t, Val: int64(0)}, true
	case arrow.FLOAT64:
		return &Literal{Typ: t, Val: float64(0)}, true
	case arrow.STRING:
		return &Literal{Typ: t, Val: ""}, true
	case arrow.DECIMAL128:
		return &Literal{Typ: t, Val: decimal128.Num{}}, true
	}
	return nil, false
}

// foldDistinctFrom folds a test of two literals, or of a NULL literal and
// anything (x IS DISTINCT FROM NULL is x IS NOT NULL).
func foldDistinctFrom(x *DistinctFrom) Expr {
	l, lok := isLit(x.L)
	r, rok := isLit(x.R)
	switch {
	case lok && rok:
		if l.Val == nil || r.Val == nil {
			return boolLit((l.Val == nil && r.Val == nil) == x.Negated)
		}
		if fmt.Sprintf("%T", l.Val) != fmt.Sprintf("%T", r.Val) {
			return x
		}
		return boolLit((l.Val == r.Val) == x.Negated)
	case lok && l.Val == nil:
		return &IsNull{X: x.R, Negated: !x.Negated}
	case rok && r.Val == nil:
		return &IsNull{X: x.L, Negated: !x.Negated}
	}
	return x
}
