package plan

import "testing"

func TestSubtreeKeys(t *testing.T) {
	values := func(b *tb, vs ...int64) *Values {
		v := &Values{Cols: Schema{{ID: b.ids.Next(), Name: "x", Table: "v", Type: Int64}}}
		for _, x := range vs {
			v.Rows = append(v.Rows, []Expr{i64(x)})
		}
		return v
	}
	sumOf := func(b *tb, n Node, i int) *Aggregate {
		return b.agg(n, nil, sum(n.Schema()[i].Ref()))
	}
	// sum over one side of a self join, its column reference named alike
	// on both sides as unqualified columns print.
	sumOfSide := func(b *tb, right bool) *Aggregate {
		l, r := values(b, 1, 2), values(b, 1, 2)
		j := &Join{Kind: JoinInner, Left: l, Right: r, Cond: eq(l.Cols[0].Ref(), r.Cols[0].Ref())}
		c := l.Cols[0]
		if right {
			c = r.Cols[0]
		}
		return b.agg(j, nil, sum(&ColRef{ID: c.ID, Name: "x", Typ: c.Type}))
	}
	work := func(b *tb) Node {
		return &WorkTable{Name: "r", Cols: Schema{{ID: b.ids.Next(), Name: "x", Type: Int64}}}
	}
	cases := []struct {
		name string
		a, b func(*tb) Node
		same bool
	}{
		{"a view expanded twice gets fresh column IDs", func(b *tb) Node { return sumOf(b, b.scan("t", ""), 0) }, func(b *tb) Node { return sumOf(b, b.scan("t", ""), 0) }, true},
		{"another column", func(b *tb) Node { return sumOf(b, b.scan("t", ""), 0) }, func(b *tb) Node { return sumOf(b, b.scan("t", ""), 1) }, false},
		{"another table", func(b *tb) Node { return sumOf(b, b.scan("t", ""), 0) }, func(b *tb) Node { return sumOf(b, b.scan("u", ""), 0) }, false},
		{"equal VALUES", func(b *tb) Node { return sumOf(b, values(b, 1, 2), 0) }, func(b *tb) Node { return sumOf(b, values(b, 1, 2), 0) }, true},
		{"VALUES with as many rows but others", func(b *tb) Node { return sumOf(b, values(b, 1, 2), 0) }, func(b *tb) Node { return sumOf(b, values(b, 3, 4), 0) }, false},
		{"a join's left or right column of the same name", func(b *tb) Node { return sumOfSide(b, false) }, func(b *tb) Node { return sumOfSide(b, true) }, false},
		{"a recursive CTE's work table differs in every iteration", func(b *tb) Node { return sumOf(b, work(b), 0) }, func(b *tb) Node { return sumOf(b, work(b), 0) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, k := newTB(), NewSubtreeKeys()
			ka, kb := k.Key(c.a(b)), k.Key(c.b(b))
			if (ka == kb) != c.same {
				t.Errorf("same key: %v, want %v\n%s\n%s", ka == kb, c.same, ka, kb)
			}
		})
	}
}

// TestSubtreeKeysDeepChain checks that a key does not grow with the depth
// of the subtree: keying each aggregate of a chain of them (2000 nested
// UNIONs) by formatting its whole subtree took memory cubic in the depth.
func TestSubtreeKeysDeepChain(t *testing.T) {
	b := newTB()
	var n Node = b.scan("t", "")
	for range 2000 {
		n = b.agg(n, []Expr{n.Schema()[0].Ref()})
	}
	k := NewSubtreeKeys()
	occurs := map[string]int{}
	k.CountAggregates(n, occurs)
	if len(occurs) != 2000 {
		t.Fatalf("%d distinct aggregates, want 2000", len(occurs))
	}
	for key := range occurs {
		if len(key) > 500 {
			t.Fatalf("a key of %d bytes: %.200s...", len(key), key)
		}
	}
}
