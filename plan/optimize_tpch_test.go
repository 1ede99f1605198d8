package plan

// tpchQueries are hand-bound plans shaped like the binder's output for the
// TPC-H queries that exercise decorrelation and join ordering (select lists
// trimmed to what matters).
var tpchQueries = []struct {
	name  string
	build func(b *tb) Node
}{
	{"q2_correlated_min", tpchQ2},
	{"q11_having_uncorrelated_scalar", tpchQ11},
	{"q4_exists", tpchQ4},
	{"q5_six_way_comma_join", tpchQ5},
	{"q13_left_join_on_filter", tpchQ13},
	{"q16_not_in", tpchQ16},
	{"q17_correlated_avg", tpchQ17},
	{"q20_nested_in_correlated_sum", tpchQ20},
	{"q21_exists_not_exists", tpchQ21},
	{"q22_scalar_avg_not_exists", tpchQ22},
}

func tpchQ2(b *tb) Node {
	p, s, ps, n, r := b.scan("part", ""), b.scan("supplier", ""), b.scan("partsupp", ""), b.scan("nation", ""), b.scan("region", "")
	from := cross(p, s, ps, n, r)
	// Subquery: select min(ps_supplycost) from partsupp, supplier, nation, region where ...
	ps2, s2, n2, r2 := b.scan("partsupp", ""), b.scan("supplier", ""), b.scan("nation", ""), b.scan("region", "")
	sfrom := cross(ps2, s2, n2, r2)
	swhere := filter(sfrom,
		eq(col(p, "p_partkey"), col(ps2, "ps_partkey")),
		eq(col(s2, "s_suppkey"), col(ps2, "ps_suppkey")),
		eq(col(s2, "s_nationkey"), col(n2, "n_nationkey")),
		eq(col(n2, "n_regionkey"), col(r2, "r_regionkey")),
		eq(col(r2, "r_name"), str("EUROPE")))
	sub := b.agg(swhere, nil, minOf(col(ps2, "ps_supplycost")))
	where := filter(from,
		eq(col(p, "p_partkey"), col(ps, "ps_partkey")),
		eq(col(s, "s_suppkey"), col(ps, "ps_suppkey")),
		eq(col(p, "p_size"), i32(15)),
		like(col(p, "p_type"), "%BRASS"),
		eq(col(s, "s_nationkey"), col(n, "n_nationkey")),
		eq(col(n, "n_regionkey"), col(r, "r_regionkey")),
		eq(col(r, "r_name"), str("EUROPE")),
		eq(col(ps, "ps_supplycost"), scalar(sub)))
	proj := b.project(where, nil, col(s, "s_acctbal"), col(s, "s_name"), col(n, "n_name"), col(p, "p_partkey"), col(p, "p_mfgr"))
	return &Limit{Input: sortBy(proj, col(s, "s_acctbal")), Count: 100}
}

func tpchQ4(b *tb) Node {
	o := b.scan("orders", "")
	l := b.scan("lineitem", "")
	sub := b.star(filter(l,
		eq(col(l, "l_orderkey"), col(o, "o_orderkey")),
		lt(col(l, "l_commitdate"), col(l, "l_receiptdate"))))
	where := filter(o,
		ge(col(o, "o_orderdate"), date("1993-07-01")),
		lt(col(o, "o_orderdate"), bin(OpAdd, date("1993-07-01"), months(3))),
		exists(sub))
	a := b.agg(where, []Expr{col(o, "o_orderpriority")}, countStar())
	return sortBy(b.project(a, []string{"", "order_count"}, a.Cols[0].Ref(), a.Cols[1].Ref()), a.Cols[0].Ref())
}

func tpchQ5(b *tb) Node {
	c, o, l, s, n, r := b.scan("customer", ""), b.scan("orders", ""), b.scan("lineitem", ""), b.scan("supplier", ""), b.scan("nation", ""), b.scan("region", "")
	where := filter(cross(c, o, l, s, n, r),
		eq(col(c, "c_custkey"), col(o, "o_custkey")),
		eq(col(l, "l_orderkey"), col(o, "o_orderkey")),
		eq(col(l, "l_suppkey"), col(s, "s_suppkey")),
		eq(col(c, "c_nationkey"), col(s, "s_nationkey")),
		eq(col(s, "s_nationkey"), col(n, "n_nationkey")),
		eq(col(n, "n_regionkey"), col(r, "r_regionkey")),
		eq(col(r, "r_name"), str("ASIA")),
		ge(col(o, "o_orderdate"), date("1994-01-01")),
		lt(col(o, "o_orderdate"), bin(OpAdd, date("1994-01-01"), months(12))))
	rev := bin(OpMul, col(l, "l_extendedprice"), bin(OpSub, cast(i64(1), money), col(l, "l_discount")))
	a := b.agg(where, []Expr{col(n, "n_name")}, sum(rev))
	p := b.project(a, []string{"", "revenue"}, a.Cols[0].Ref(), a.Cols[1].Ref())
	return &Sort{Input: p, Keys: []SortKey{{Expr: p.Cols[1].Ref(), Desc: true}}}
}

func tpchQ16(b *tb) Node {
	ps, p := b.scan("partsupp", ""), b.scan("part", "")
	s := b.scan("supplier", "")
	sub := b.project(filter(s, like(col(s, "s_comment"), "%Customer%Complaints%")), nil, col(s, "s_suppkey"))
	where := filter(cross(ps, p),
		eq(col(p, "p_partkey"), col(ps, "ps_partkey")),
		ne(col(p, "p_brand"), str("Brand#45")),
		notLike(col(p, "p_type"), "MEDIUM POLISHED%"),
		inList(col(p, "p_size"), i32(49), i32(14), i32(23), i32(45), i32(19), i32(3), i32(36), i32(9)),
		notIn(col(ps, "ps_suppkey"), sub))
	a := b.agg(where, []Expr{col(p, "p_brand"), col(p, "p_type"), col(p, "p_size")}, countDistinct(col(ps, "ps_suppkey")))
	return sortBy(a, a.Cols[3].Ref())
}

func tpchQ17(b *tb) Node {
	l, p := b.scan("lineitem", ""), b.scan("part", "")
	l2 := b.scan("lineitem", "")
	sa := b.agg(filter(l2, eq(col(l2, "l_partkey"), col(p, "p_partkey"))), nil, avg(col(l2, "l_quantity")))
	sub := b.project(sa, nil, bin(OpMul, dec("0.2", 2, 1), sa.Cols[0].Ref()))
	subT := sub.Cols[0].Type
	where := filter(cross(l, p),
		eq(col(p, "p_partkey"), col(l, "l_partkey")),
		eq(col(p, "p_brand"), str("Brand#23")),
		eq(col(p, "p_container"), str("MED BOX")),
		lt(cast(col(l, "l_quantity"), subT), scalar(sub)))
	a := b.agg(where, nil, sum(col(l, "l_extendedprice")))
	return b.project(a, []string{"avg_yearly"}, bin(OpDiv, a.Cols[0].Ref(), dec("7.0", 2, 1)))
}

func tpchQ20(b *tb) Node {
	s, n := b.scan("supplier", ""), b.scan("nation", "")
	ps := b.scan("partsupp", "")
	p := b.scan("part", "")
	partIn := b.project(filter(p, like(col(p, "p_name"), "forest%")), nil, col(p, "p_partkey"))
	l := b.scan("lineitem", "")
	la := b.agg(filter(l,
		eq(col(l, "l_partkey"), col(ps, "ps_partkey")),
		eq(col(l, "l_suppkey"), col(ps, "ps_suppkey")),
		ge(col(l, "l_shipdate"), date("1994-01-01"))), nil, sum(col(l, "l_quantity")))
	half := b.project(la, nil, bin(OpMul, dec("0.5", 2, 1), la.Cols[0].Ref()))
	psIn := b.project(filter(ps,
		in(col(ps, "ps_partkey"), partIn),
		gt(cast(col(ps, "ps_availqty"), half.Cols[0].Type), scalar(half))), nil, col(ps, "ps_suppkey"))
	where := filter(cross(s, n),
		in(col(s, "s_suppkey"), psIn),
		eq(col(s, "s_nationkey"), col(n, "n_nationkey")),
		eq(col(n, "n_name"), str("CANADA")))
	return sortBy(b.project(where, nil, col(s, "s_name"), col(s, "s_address")), col(s, "s_name"))
}

func tpchQ21(b *tb) Node {
	s, l1, o, n := b.scan("supplier", ""), b.scan("lineitem", "l1"), b.scan("orders", ""), b.scan("nation", "")
	l2 := b.scan("lineitem", "l2")
	l3 := b.scan("lineitem", "l3")
	ex := b.star(filter(l2,
		eq(col(l2, "l2.l_orderkey"), col(l1, "l1.l_orderkey")),
		ne(col(l2, "l2.l_suppkey"), col(l1, "l1.l_suppkey"))))
	nex := b.star(filter(l3,
		eq(col(l3, "l3.l_orderkey"), col(l1, "l1.l_orderkey")),
		ne(col(l3, "l3.l_suppkey"), col(l1, "l1.l_suppkey")),
		gt(col(l3, "l3.l_receiptdate"), col(l3, "l3.l_commitdate"))))
	where := filter(cross(s, l1, o, n),
		eq(col(s, "s_suppkey"), col(l1, "l1.l_suppkey")),
		eq(col(o, "o_orderkey"), col(l1, "l1.l_orderkey")),
		eq(col(o, "o_orderstatus"), str("F")),
		gt(col(l1, "l1.l_receiptdate"), col(l1, "l1.l_commitdate")),
		exists(ex),
		notExists(nex),
		eq(col(s, "s_nationkey"), col(n, "n_nationkey")),
		eq(col(n, "n_name"), str("SAUDI ARABIA")))
	a := b.agg(where, []Expr{col(s, "s_name")}, countStar())
	return &Limit{Input: &Sort{Input: a, Keys: []SortKey{{Expr: a.Cols[1].Ref(), Desc: true}, {Expr: a.Cols[0].Ref()}}}, Count: 100}
}

func tpchQ22(b *tb) Node {
	codes := []Expr{str("13"), str("31"), str("23"), str("29"), str("30"), str("18"), str("17")}
	c := b.scan("customer", "")
	c2 := b.scan("customer", "")
	avgBal := b.agg(filter(c2,
		gt(col(c2, "c_acctbal"), dec("0.00", 3, 2)),
		inList(substr2(col(c2, "c_phone")), codes...)), nil, avg(col(c2, "c_acctbal")))
	o := b.scan("orders", "")
	noOrders := b.star(filter(o, eq(col(o, "o_custkey"), col(c, "c_custkey"))))
	where := filter(c,
		inList(substr2(col(c, "c_phone")), codes...),
		gt(cast(col(c, "c_acctbal"), avgBal.Cols[0].Type), scalar(avgBal)),
		notExists(noOrders))
	custsale := b.project(where, []string{"cntrycode", ""}, substr2(col(c, "c_phone")), col(c, "c_acctbal"))
	a := b.agg(custsale, []Expr{custsale.Cols[0].Ref()}, countStar(), sum(custsale.Cols[1].Ref()))
	return sortBy(a, a.Cols[0].Ref())
}

func tpchQ11(b *tb) Node {
	germany := func() (Node, Expr) {
		ps, s, n := b.scan("partsupp", ""), b.scan("supplier", ""), b.scan("nation", "")
		where := filter(cross(ps, s, n),
			eq(col(ps, "ps_suppkey"), col(s, "s_suppkey")),
			eq(col(s, "s_nationkey"), col(n, "n_nationkey")),
			eq(col(n, "n_name"), str("GERMANY")))
		return where, bin(OpMul, col(ps, "ps_supplycost"), cast(col(ps, "ps_availqty"), Decimal(10, 0)))
	}
	inner, v := germany()
	total := b.agg(inner, nil, sum(v))
	threshold := b.project(total, nil, bin(OpMul, total.Cols[0].Ref(), dec("0.0001", 5, 4)))
	outer, v2 := germany()
	a := b.agg(outer, []Expr{col(outer, "ps_partkey")}, sum(v2))
	having := filter(a, gt(cast(a.Cols[1].Ref(), threshold.Cols[0].Type), scalar(threshold)))
	p := b.project(having, []string{"", "value"}, a.Cols[0].Ref(), a.Cols[1].Ref())
	return &Sort{Input: p, Keys: []SortKey{{Expr: p.Cols[1].Ref(), Desc: true}}}
}

func tpchQ13(b *tb) Node {
	c, o := b.scan("customer", ""), b.scan("orders", "")
	j := &Join{Kind: JoinLeft, Left: c, Right: o, Cond: and(
		eq(col(c, "c_custkey"), col(o, "o_custkey")),
		notLike(col(o, "o_orderpriority"), "%special%requests%"))}
	inner := b.agg(j, []Expr{col(c, "c_custkey")}, &AggCall{Func: AggCount, Arg: col(o, "o_orderkey"), Typ: Int64})
	corders := b.project(inner, []string{"", "c_count"}, inner.Cols[0].Ref(), inner.Cols[1].Ref())
	a := b.agg(corders, []Expr{corders.Cols[1].Ref()}, countStar())
	p := b.project(a, []string{"", "custdist"}, a.Cols[0].Ref(), a.Cols[1].Ref())
	return &Sort{Input: p, Keys: []SortKey{{Expr: p.Cols[1].Ref(), Desc: true}, {Expr: p.Cols[0].Ref(), Desc: true}}}
}
