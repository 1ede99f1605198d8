package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// distinctFrom binds l IS [NOT] DISTINCT FROM r. The operands are typed as
// for l = r (same literal adaptation, same common type, same refusals), so
// whatever can be compared can be compared NULL-safely.
func (b *binder) distinctFrom(x *pg.A_Expr, c ectx) (plan.Expr, error) {
	l, err := b.expr(x.Lexpr, c)
	if err != nil {
		return nil, err
	}
	r, err := b.expr(x.Rexpr, c)
	if err != nil {
		return nil, err
	}
	eq, err := b.compare(plan.OpEq, l, r, x.Location)
	if err != nil {
		return nil, err
	}
	bin := eq.(*plan.Binary)
	return &plan.DistinctFrom{L: bin.L, R: bin.R, Negated: x.Kind == pg.A_Expr_Kind_AEXPR_NOT_DISTINCT}, nil
}
