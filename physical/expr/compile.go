package expr

import (
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/plan"
)

// Compile builds the physical form of e over rows shaped like input: column
// references become positions, and every node's DataType equals the
// logical e.Type(). Aggregates and subqueries must have been planned away.
func Compile(e plan.Expr, input plan.Schema) (Expr, error) {
	out, err := compile(e, input)
	if err != nil {
		return nil, err
	}
	if !arrow.TypeEqual(out.DataType(), e.Type()) {
		return nil, fmt.Errorf("internal: %s compiles to %s, not %s", e, out.DataType(), e.Type())
	}
	return out, nil
}

func compileAll(es []plan.Expr, input plan.Schema) ([]Expr, error) {
	out := make([]Expr, len(es))
	for i, x := range es {
		c, err := Compile(x, input)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

func compile(e plan.Expr, input plan.Schema) (Expr, error) {
	switch e := e.(type) {
	case *plan.ColRef:
		idx := input.IndexOf(e.ID)
		if idx < 0 {
			return nil, fmt.Errorf("internal: column %s not in input", e.Name)
		}
		return &Column{Index: idx, Name: e.Name, Type: e.Typ}, nil
	case *plan.Literal:
		if err := checkLiteral(e); err != nil {
			return nil, err
		}
		return &Literal{Value: *e}, nil
	case *plan.Binary:
		l, err := Compile(e.L, input)
		if err != nil {
			return nil, err
		}
		r, err := Compile(e.R, input)
		if err != nil {
			return nil, err
		}
		return &Binary{Op: e.Op, L: l, R: r, Type: e.Typ}, nil
	case *plan.Not:
		x, err := Compile(e.X, input)
		if err != nil {
			return nil, err
		}
		return &Not{X: x}, nil
	case *plan.Negate:
		x, err := Compile(e.X, input)
		if err != nil {
			return nil, err
		}
		return &Negate{X: x}, nil
	case *plan.IsNull:
		x, err := Compile(e.X, input)
		if err != nil {
			return nil, err
		}
		return &IsNull{X: x, Negated: e.Negated}, nil
	case *plan.DistinctFrom:
		l, err := Compile(e.L, input)
		if err != nil {
			return nil, err
		}
		r, err := Compile(e.R, input)
		if err != nil {
			return nil, err
		}
		if err := checkDistinctFrom(l, r); err != nil {
			return nil, err
		}
		return &DistinctFrom{L: l, R: r, Negated: e.Negated}, nil
	case *plan.Cast:
		x, err := Compile(e.X, input)
		if err != nil {
			return nil, err
		}
		if !castSupported(x.DataType(), e.To) {
			return nil, fmt.Errorf("cannot cast %s to %s", plan.TypeName(x.DataType()), plan.TypeName(e.To))
		}
		return &Cast{X: x, To: e.To, Try: e.Try}, nil
	case *plan.Case:
		out := &Case{Type: e.Typ, Whens: make([]When, len(e.Whens))}
		for i, w := range e.Whens {
			c, err := Compile(w.Cond, input)
			if err != nil {
				return nil, err
			}
			t, err := Compile(w.Then, input)
			if err != nil {
				return nil, err
			}
			out.Whens[i] = When{Cond: c, Then: t}
		}
		if e.Else != nil {
			x, err := Compile(e.Else, input)
			if err != nil {
				return nil, err
			}
			out.Else = x
		}
		return out, nil
	case *plan.Like:
		x, err := Compile(e.X, input)
		if err != nil {
			return nil, err
		}
		p, err := Compile(e.Pattern, input)
		if err != nil {
			return nil, err
		}
		if l, ok := p.(*Literal); ok && l.Value.Val != nil {
			// Reject a malformed constant pattern now rather than per batch.
			if s, ok := l.Value.Val.(string); ok {
				if _, err := compileLike([]byte(s)); err != nil {
					return nil, fmt.Errorf("%s: %w", e, err)
				}
			}
		}
		return &Like{X: x, Pattern: p, Negated: e.Negated}, nil
	case *plan.InList:
		x, err := Compile(e.X, input)
		if err != nil {
			return nil, err
		}
		list, err := compileAll(e.List, input)
		if err != nil {
			return nil, err
		}
		return &InList{X: x, List: list, Negated: e.Negated}, nil
	case *plan.Func:
		args, err := compileAll(e.Args, input)
		if err != nil {
			return nil, err
		}
		switch e.Name {
		case "coalesce":
			if len(args) == 0 {
				return nil, fmt.Errorf("coalesce needs at least one argument")
			}
			return &Coalesce{Args: args, Type: e.Typ}, nil
		case "nullif":
			if len(args) != 2 {
				return nil, fmt.Errorf("nullif takes 2 arguments, got %d", len(args))
			}
			return &NullIf{A: args[0], B: args[1], Type: e.Typ}, nil
		}
		ar, ok := funcArity[e.Name]
		if !ok {
			return nil, fmt.Errorf("unknown function %s", e.Name)
		}
		if len(args) < ar[0] || len(args) > ar[1] {
			return nil, fmt.Errorf("%s: wrong number of arguments (%d)", e.Name, len(args))
		}
		return &Func{Name: e.Name, Args: args, Type: e.Typ}, nil
	case *plan.AggCall:
		return nil, fmt.Errorf("internal: aggregate %s must be planned before compile", e)
	case *plan.Subquery:
		return nil, fmt.Errorf("internal: subquery %s must be planned before compile", e)
	case nil:
		return nil, fmt.Errorf("internal: nil expression")
	}
	return nil, fmt.Errorf("internal: cannot compile %T", e)
}

// checkLiteral verifies that a literal's Go value matches its type, so that
// kernels can type-assert without panicking.
func checkLiteral(l *plan.Literal) error {
	if l.Val == nil {
		return nil
	}
	ok := false
	switch l.Typ.ID() {
	case arrow.BOOL:
		_, ok = l.Val.(bool)
	case arrow.INT32, arrow.DATE32:
		_, ok = l.Val.(int32)
	case arrow.INT64, arrow.TIMESTAMP:
		_, ok = l.Val.(int64)
	case arrow.FLOAT64:
		_, ok = l.Val.(float64)
	case arrow.DECIMAL128:
		_, ok = l.Val.(interface{ Sign() int })
	case arrow.STRING:
		_, ok = l.Val.(string)
	case arrow.INTERVAL_MONTH_DAY_NANO:
		_, ok = l.Val.(arrow.MonthDayNanoInterval)
	}
	if !ok {
		return fmt.Errorf("internal: literal %v (%T) does not match type %s", l.Val, l.Val, plan.TypeName(l.Typ))
	}
	return nil
}

// ColumnIndexes returns the sorted, distinct input column positions e reads.
func ColumnIndexes(e Expr) []int {
	seen := map[int]bool{}
	walkColumns(e, func(c *Column) bool {
		seen[c.Index] = true
		return true
	})
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// walkColumns calls f on every Column in e, depth first, until f returns
// false. It is the one place that knows each node's children.
func walkColumns(e Expr, f func(*Column) bool) bool {
	switch e := e.(type) {
	case nil:
		return true
	case *Column:
		return f(e)
	case *Binary:
		return walkColumns(e.L, f) && walkColumns(e.R, f)
	case *Not:
		return walkColumns(e.X, f)
	case *Negate:
		return walkColumns(e.X, f)
	case *IsNull:
		return walkColumns(e.X, f)
	case *DistinctFrom:
		return walkColumns(e.L, f) && walkColumns(e.R, f)
	case *Cast:
		return walkColumns(e.X, f)
	case *Case:
		for _, w := range e.Whens {
			if !walkColumns(w.Cond, f) || !walkColumns(w.Then, f) {
				return false
			}
		}
		if e.Else != nil {
			return walkColumns(e.Else, f)
		}
	case *Like:
		return walkColumns(e.X, f) && walkColumns(e.Pattern, f)
	case *InList:
		if !walkColumns(e.X, f) {
			return false
		}
		return walkAll(e.List, f)
	case *Func:
		return walkAll(e.Args, f)
	case *Coalesce:
		return walkAll(e.Args, f)
	case *NullIf:
		return walkColumns(e.A, f) && walkColumns(e.B, f)
	}
	return true
}

func walkAll(es []Expr, f func(*Column) bool) bool {
	for _, x := range es {
		if !walkColumns(x, f) {
			return false
		}
	}
	return true
}
