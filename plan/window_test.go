package plan

import "testing"

// window puts a Window computing calls over n.
func (b *tb) window(n Node, calls ...*WindowCall) *Window {
	w := &Window{Input: n, Calls: calls}
	for _, c := range calls {
		w.Cols = append(w.Cols, Column{ID: b.ids.Next(), Name: c.FuncString(), Type: c.Typ, Nullable: true})
	}
	return w
}

func rowNumber(partition []Expr, order ...Expr) *WindowCall {
	c := &WindowCall{Func: WinRowNumber, PartitionBy: partition, Frame: DefaultFrame, Typ: Int64}
	for _, o := range order {
		c.OrderBy = append(c.OrderBy, SortKey{Expr: o})
	}
	return c
}

func runningSum(x Expr, partition []Expr, order Expr) *WindowCall {
	return &WindowCall{Func: WinAggregate, Agg: AggSum, Args: []Expr{x}, PartitionBy: partition,
		OrderBy: []SortKey{{Expr: order, Desc: true, NullsFirst: true}}, Frame: DefaultFrame, Typ: SumType(x.Type())}
}

func TestWindowGolden(t *testing.T) {
	runGolden(t, "window.txt", []goldenCase{
		{name: "pushdown_only_partition_key_predicates", apply: PushDownPredicates, build: func(b *tb) Node {
			t := b.scan("t", "")
			w := b.window(t, rowNumber([]Expr{col(t, "c")}, col(t, "a")), runningSum(col(t, "b"), []Expr{col(t, "c"), col(t, "a")}, col(t, "b")))
			return filter(w, eq(col(t, "c"), str("x")), gt(col(t, "a"), i64(1)), eq(w.Cols[0].Ref(), i64(1)))
		}},
		{name: "pushdown_nothing_without_partition_keys", apply: PushDownPredicates, build: func(b *tb) Node {
			t := b.scan("t", "")
			w := b.window(t, rowNumber(nil, col(t, "a")))
			return filter(w, eq(col(t, "c"), str("x")))
		}},
		{name: "prune_unused_calls_and_columns", apply: PruneColumns, build: func(b *tb) Node {
			t := b.scan("t", "")
			w := b.window(t, rowNumber([]Expr{col(t, "c")}, col(t, "a")), runningSum(col(t, "b"), nil, col(t, "b")))
			return b.project(w, []string{"a", "rn"}, col(t, "a"), w.Cols[0].Ref())
		}},
		{name: "prune_window_nobody_reads", apply: PruneColumns, build: func(b *tb) Node {
			t := b.scan("t", "")
			w := b.window(t, rowNumber([]Expr{col(t, "c")}, col(t, "b")))
			return b.project(w, []string{"a"}, col(t, "a"))
		}},
		{name: "decorrelate_through_window_on_partition_key", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			w := b.window(filter(t, eq(col(t, "c"), col(u, "z"))), rowNumber([]Expr{col(t, "c")}, col(t, "a")))
			return b.star(filter(u, exists(filter(w, eq(w.Cols[0].Ref(), i64(2))))))
		}},
		{name: "decorrelate_not_through_window_on_other_keys", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			w := b.window(filter(t, eq(col(t, "c"), col(u, "z"))), rowNumber(nil, col(t, "a")))
			return b.star(filter(u, exists(filter(w, eq(w.Cols[0].Ref(), i64(2))))))
		}},
		{name: "window_over_aggregate_whole_optimizer", apply: optimizeAll, build: func(b *tb) Node {
			t, u := b.tu()
			a := b.agg(filter(cross(t, u), eq(col(t, "a"), col(u, "x"))), []Expr{col(u, "z")}, sum(col(t, "b")))
			w := b.window(a, &WindowCall{Func: WinRank, OrderBy: []SortKey{{Expr: a.Cols[1].Ref(), Desc: true, NullsFirst: true}}, Frame: DefaultFrame, Typ: Int64})
			return b.project(filter(w, eq(a.Cols[0].Ref(), str("k"))), []string{"z", "rank"}, a.Cols[0].Ref(), w.Cols[0].Ref())
		}},
	})
}

func TestWindowCallExprRoundTrip(t *testing.T) {
	b := newTB()
	tt := b.scan("t", "")
	c := runningSum(col(tt, "b"), []Expr{col(tt, "c")}, col(tt, "a"))
	c.Frame = WindowFrame{Rows: true, Start: FrameBound{Kind: BoundPreceding, Offset: &Literal{Typ: Int64, Val: int64(2)}}, End: FrameBound{Kind: BoundCurrentRow}}
	out := c.WithChildren(c.Children()).(*WindowCall)
	if out.String() != c.String() || out == c {
		t.Fatalf("WithChildren: got %s, want a copy of %s", out, c)
	}
	if want := "sum(t.b) OVER (PARTITION BY t.c ORDER BY t.a DESC ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)"; c.String() != want {
		t.Fatalf("String = %s, want %s", c, want)
	}
}
