package testutil

import (
	"cmp"

	"sluice/plan"
)

// CompareOps are the six comparison operators.
var CompareOps = []plan.BinaryOp{plan.OpEq, plan.OpNotEq, plan.OpLt, plan.OpLtEq, plan.OpGt, plan.OpGtEq}

// Compare applies comparison op to x and y the obvious way, the reference
// the comparison kernels' tests check against.
func Compare[T cmp.Ordered](op plan.BinaryOp, x, y T) bool {
	switch op {
	case plan.OpEq:
		return x == y
	case plan.OpNotEq:
		return x != y
	case plan.OpLt:
		return x < y
	case plan.OpLtEq:
		return x <= y
	case plan.OpGt:
		return x > y
	default:
		return x >= y
	}
}
