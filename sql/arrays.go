package sql

import (
	"fmt"

	"sluice/plan"
)

// checkArrayUse rejects arrays where a query would compare, hash or order
// them: grouping and DISTINCT keys, sort keys, window partitions and
// orders, set operations, and aggregates other than count. Arrays are
// values to look at, index and cast to text; the hint says how to use one
// as a key. Comparisons are refused where they are bound (compare).
func checkArrayUse(n plan.Node) error {
	if err := checkArrayNode(n); err != nil {
		return err
	}
	for _, e := range plan.Exprs(n) {
		var err error
		plan.Walk(e, func(x plan.Expr) bool {
			if s, ok := x.(*plan.Subquery); ok && err == nil {
				err = checkArrayUse(s.Plan)
			}
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	for _, c := range n.Children() {
		if err := checkArrayUse(c); err != nil {
			return err
		}
	}
	return nil
}

func checkArrayNode(n plan.Node) error {
	switch n := n.(type) {
	case *plan.Aggregate:
		for _, g := range n.GroupBy {
			if err := arrayKey(g, "GROUP BY or DISTINCT"); err != nil {
				return err
			}
		}
		for _, a := range n.Aggs {
			if err := arrayAggArg(a.Func, a.Distinct, a.Arg); err != nil {
				return err
			}
		}
	case *plan.Expand:
		for _, k := range n.Keys {
			if err := arrayKey(k, "GROUP BY"); err != nil {
				return err
			}
		}
	case *plan.Sort:
		for _, k := range n.Keys {
			if err := arrayKey(k.Expr, "ORDER BY"); err != nil {
				return err
			}
		}
	case *plan.SetOp:
		for _, c := range n.Cols {
			if plan.IsArray(c.Type) {
				return arrayErr(fmt.Sprintf("%s cannot compare %s values (column %s)", n.Kind, plan.TypeName(c.Type), c.Name))
			}
		}
	case *plan.Window:
		for _, w := range n.Calls {
			for _, k := range w.PartitionBy {
				if err := arrayKey(k, "PARTITION BY"); err != nil {
					return err
				}
			}
			for _, k := range w.OrderBy {
				if err := arrayKey(k.Expr, "a window's ORDER BY"); err != nil {
					return err
				}
			}
			for _, a := range w.Args {
				if !plan.IsArray(a.Type()) {
					continue
				}
				if w.Func != plan.WinAggregate || w.Agg != plan.AggCount {
					return arrayErr(fmt.Sprintf("window function %s cannot take %s values", w.Func, plan.TypeName(a.Type())))
				}
			}
		}
	}
	return nil
}

func arrayKey(e plan.Expr, clause string) error {
	if !plan.IsArray(e.Type()) {
		return nil
	}
	what := e.String()
	if c, ok := e.(*plan.ColRef); ok && c.Name == "?column?" {
		what = "an unnamed column"
	}
	return arrayErr(fmt.Sprintf("%s cannot use %s values (%s)", clause, plan.TypeName(e.Type()), what))
}

func arrayAggArg(f plan.AggFunc, distinct bool, arg plan.Expr) error {
	if arg == nil || !plan.IsArray(arg.Type()) || f == plan.AggCount && !distinct {
		return nil
	}
	return arrayErr(fmt.Sprintf("aggregate %s cannot take %s values (%s)", f, plan.TypeName(arg.Type()), arg))
}

func arrayErr(msg string) error {
	return &Error{Kind: "type", Msg: msg, Hint: "take an element with a[n], or cast the array to text with a::text"}
}

// arrayCompareErr refuses a comparison (=, <, IN, ...) of arrays at loc.
func (b *binder) arrayCompareErr(t arrowType, loc int32) error {
	e := b.errAt("type", loc, "comparing %s values is not supported", plan.TypeName(t))
	e.Hint = "compare elements (a[n]) or the arrays' text (a::text)"
	return e
}
