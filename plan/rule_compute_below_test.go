package plan

import "testing"

func TestComputeKeysBelowJoinsGolden(t *testing.T) {
	// dimFact joins the thousand-row dimension (left, the build side) with
	// the million facts, as ChooseBuildSide leaves it.
	dimFact := func(b *tb) (*Join, *Scan, *Scan) {
		d, f := b.scanStats("dim"), b.scanStats("fact")
		return &Join{Kind: JoinInner, Left: d, Right: f, Cond: eq(col(d, "d_key"), col(f, "f_key"))}, d, f
	}
	substr := func(x, from, n Expr) Expr {
		return &Func{Name: "substring", Args: []Expr{x, from, n}, Typ: Utf8}
	}
	runGolden(t, "compute_below.txt", []goldenCase{
		{name: "substring_of_the_build_side", apply: ComputeKeysBelowJoins, build: func(b *tb) Node {
			j, d, f := dimFact(b)
			return b.agg(j, []Expr{substr2(col(d, "d_name")), col(f, "f_cat")}, sum(col(f, "f_amount")))
		}},
		{name: "through_the_probe_side_to_a_deeper_build_side", apply: ComputeKeysBelowJoins, build: func(b *tb) Node {
			// The q23 shape: the key's dimension is joined below a
			// Filter and a Project on the probe side of another join.
			j, d, f := dimFact(b)
			u := b.scanStats("unique")
			p := b.project(filter(j, gt(col(f, "f_qty"), i64(3))), nil, col(d, "d_name"), col(f, "f_cat"), col(f, "f_amount"))
			top := &Join{Kind: JoinInner, Left: u, Right: p, Cond: eq(col(u, "u_key"), col(p, "f_cat"))}
			return b.agg(top, []Expr{&Func{Name: "upper", Args: []Expr{col(p, "d_name")}, Typ: Utf8}}, sum(col(p, "f_amount")))
		}},
		{name: "not_onto_the_probe_side", apply: ComputeKeysBelowJoins, build: func(b *tb) Node {
			d, f := b.scanStats("dim"), b.scanStats("fact")
			j := &Join{Kind: JoinInner, Left: f, Right: d, Cond: eq(col(d, "d_key"), col(f, "f_key"))}
			return b.agg(j, []Expr{substr2(col(d, "d_name"))}, countStar())
		}},
		{name: "not_when_it_could_fail", apply: ComputeKeysBelowJoins, build: func(b *tb) Node {
			// A length that is not a constant may be negative, an error
			// on rows the join would have dropped; a cast may fail.
			j, d, _ := dimFact(b)
			return b.agg(j, []Expr{
				substr(col(d, "d_name"), i64(1), col(d, "d_region")),
				substr(col(d, "d_name"), i64(1), i64(-1)),
				cast(col(d, "d_name"), Int64),
			}, countStar())
		}},
		{name: "not_below_an_outer_join", apply: ComputeKeysBelowJoins, build: func(b *tb) Node {
			j, d, _ := dimFact(b)
			j.Kind = JoinLeft
			return b.agg(j, []Expr{substr2(col(d, "d_name"))}, countStar())
		}},
		{name: "not_when_the_side_is_larger_than_the_join", apply: ComputeKeysBelowJoins, build: func(b *tb) Node {
			// One unique row meets one dimension row: the substring
			// is cheaper after the join.
			d, u := b.scanStats("dim"), b.scanStats("unique")
			u.Filters = []Expr{eq(col(u, "u_key"), i64(7))}
			j := &Join{Kind: JoinInner, Left: d, Right: u, Cond: eq(col(d, "d_key"), col(u, "u_key"))}
			return b.agg(j, []Expr{substr2(col(d, "d_name"))}, countStar())
		}},
	})
}
