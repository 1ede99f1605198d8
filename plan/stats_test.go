package plan

import (
	"math"
	"strings"
	"testing"
)

func TestEstimateRows(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *tb) Node
		want  float64
	}{
		{"scan uses statistics", func(b *tb) Node { return b.scan("orders", "") }, 1500000},
		{"unknown statistics default", func(b *tb) Node { return b.scan("t", "") }, defaultTableRows},
		{"scan filters", func(b *tb) Node {
			s := b.scan("orders", "")
			s.Filters = []Expr{eq(col(s, "o_orderstatus"), str("F"))}
			return s
		}, 150000},
		{"range and like", func(b *tb) Node {
			s := b.scan("part", "")
			return filter(s, lt(col(s, "p_size"), i32(5)), like(col(s, "p_type"), "%BRASS"))
		}, 200000 * 0.33 * 0.25},
		{"or", func(b *tb) Node {
			s := b.scan("part", "")
			return filter(s, or(eq(col(s, "p_size"), i32(1)), eq(col(s, "p_size"), i32(2))))
		}, 200000 * 0.19},
		{"floor of one", func(b *tb) Node {
			s := b.scan("region", "")
			return filter(s, eq(col(s, "r_name"), str("ASIA")))
		}, 1},
		{"global aggregate", func(b *tb) Node { return b.agg(b.scan("lineitem", ""), nil, countStar()) }, 1},
		{"grouped aggregate", func(b *tb) Node {
			l := b.scan("lineitem", "")
			return b.agg(l, []Expr{col(l, "l_orderkey")}, countStar())
		}, 600000},
		{"cross join", func(b *tb) Node { return cross(b.scan("region", ""), b.scan("nation", "")) }, 125},
		{"fk-pk join keeps larger side", func(b *tb) Node {
			o, l := b.scan("orders", ""), b.scan("lineitem", "")
			return &Join{Kind: JoinInner, Left: o, Right: l, Cond: eq(col(o, "o_orderkey"), col(l, "l_orderkey"))}
		}, 6000000},
		{"join thinned by filtered side", func(b *tb) Node {
			r, n := b.scan("region", ""), b.scan("nation", "")
			r.Filters = []Expr{eq(col(r, "r_name"), str("ASIA"))}
			return &Join{Kind: JoinInner, Left: r, Right: n, Cond: eq(col(r, "r_regionkey"), col(n, "n_regionkey"))}
		}, 5},
		{"limit", func(b *tb) Node { return &Limit{Input: b.scan("nation", ""), Count: 10} }, 10},
		{"semi join", func(b *tb) Node {
			o, l := b.scan("orders", ""), b.scan("lineitem", "")
			return &Join{Kind: JoinSemi, Left: o, Right: l, Cond: eq(col(o, "o_orderkey"), col(l, "l_orderkey"))}
		}, 750000},
		{"semi join keeps the share of keys the right side can hold", func(b *tb) Node {
			// A million distinct u_keys; the right side, facts grouped by
			// key, is estimated at 100,000 rows: a tenth of the keys.
			u, f := b.scanStats("unique"), b.scanStats("fact")
			g := b.agg(f, []Expr{col(f, "f_key")}, countStar())
			return &Join{Kind: JoinSemi, Left: u, Right: g, Cond: eq(col(u, "u_key"), g.Cols[0].Ref())}
		}, 100000},
		{"semi join right side larger than the keys", func(b *tb) Node {
			d, f := b.scanStats("dim"), b.scanStats("fact")
			return &Join{Kind: JoinSemi, Left: d, Right: f, Cond: eq(col(d, "d_key"), col(f, "f_key"))}
		}, 1000},
		{"values", func(b *tb) Node { return &Values{Rows: [][]Expr{{i64(1)}, {i64(2)}}} }, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EstimateRows(tc.build(newTB()))
			if math.Abs(got-tc.want) > 1e-6*math.Max(1, tc.want) {
				t.Fatalf("EstimateRows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDefaultRulesOrder(t *testing.T) {
	var names []string
	for _, r := range DefaultRules() {
		if r.Apply == nil {
			t.Fatalf("rule %s has no Apply", r.Name)
		}
		names = append(names, r.Name)
	}
	got := strings.Join(names, ",")
	want := "decorrelate,fold,factor-or,pushdown,fold-again,semi-joins-down,pre-aggregate-grouping-sets,eager-aggregate,merge-global-aggregates,reorder-joins,build-side,reduce-aggregates,split-distinct-aggregates,compute-keys-below-joins,prune"
	if got != want {
		t.Fatalf("DefaultRules = %s, want %s", got, want)
	}
}

func TestOptimizeWrapsRuleErrors(t *testing.T) {
	b := newTB()
	tt, u := b.tu()
	n := filter(tt, or(eq(col(tt, "a"), i64(1)), exists(filter(u, or(lt(col(u, "x"), col(tt, "a")), &IsNull{X: col(tt, "a")})))))
	_, err := Optimize(n, b.ids)
	if err == nil || !strings.Contains(err.Error(), "optimizer rule decorrelate:") {
		t.Fatalf("error = %v", err)
	}
}

// One Estimates asked about every subtree of a plan, in whatever order,
// answers what a fresh one answers for each: what it remembers of one
// subtree (rows, base rows) never leaks into another's estimate.
func TestEstimatesRemembersPerSubtree(t *testing.T) {
	for _, q := range tpchQueries {
		t.Run(q.name, func(t *testing.T) {
			b := newTB()
			n, err := Optimize(q.build(b), b.ids)
			if err != nil {
				t.Fatal(err)
			}
			var nodes []Node
			var walk func(Node)
			walk = func(n Node) {
				nodes = append(nodes, n)
				for _, c := range n.Children() {
					walk(c)
				}
			}
			walk(n)
			// Top-down first (each asks for its whole subtree), then
			// bottom-up.
			shared := NewEstimates()
			for pass := 0; pass < 2; pass++ {
				for i := range nodes {
					m := nodes[i]
					if pass == 1 {
						m = nodes[len(nodes)-1-i]
					}
					if got, want := shared.Rows(m), NewEstimates().Rows(m); got != want {
						t.Fatalf("pass %d: shared estimate of %s = %v, fresh %v", pass, m, got, want)
					}
				}
			}
		})
	}
}
