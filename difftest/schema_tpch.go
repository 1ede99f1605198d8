package difftest

import "sluice/plan"

// TPCH is the TPC-H schema as sluice's own generator (package tpch) writes
// it: BIGINT keys and counts, DECIMAL(15,2) money, DATE, strings. The
// literals hit values of the differential test's sample (parts 1 to 400
// with their line items, partsupps and suppliers; a share of the orders
// and customers; every nation and region).
var TPCH = &Schema{
	Name: "tpch",
	Tables: []Table{
		{Name: "lineitem", Fact: true, Key: []string{"l_orderkey", "l_linenumber"}, Cols: []Column{
			{Name: "l_orderkey", Kind: Int, Lits: ints(1, 6000000)},
			{Name: "l_partkey", Kind: Int, Lits: ints(1, 400)},
			{Name: "l_suppkey", Kind: Int, Lits: ints(1, 10000)},
			{Name: "l_linenumber", Kind: Int, Group: true, Lits: ints(1, 7)},
			{Name: "l_quantity", Kind: Dec, Lits: []string{"1.00", "10.00", "25.00", "49.00"}},
			{Name: "l_extendedprice", Kind: Dec, Lits: []string{"1000.00", "20000.00", "50000.00"}},
			{Name: "l_discount", Kind: Dec, Lits: []string{"0.00", "0.05", "0.10"}},
			{Name: "l_returnflag", Kind: Str, Group: true, Lits: []string{"'A'", "'N'", "'R'"}},
			{Name: "l_linestatus", Kind: Str, Group: true, Lits: []string{"'F'", "'O'"}},
			{Name: "l_shipdate", Kind: Date, Lits: []string{"DATE '1993-01-01'", "DATE '1995-06-17'", "DATE '1997-12-31'"}},
			{Name: "l_shipmode", Kind: Str, Group: true, Lits: []string{"'AIR'", "'MAIL'", "'SHIP'", "'TRUCK'", "'RAIL'", "'REG AIR'", "'FOB'"}},
		}},
		{Name: "orders", Fact: true, Key: []string{"o_orderkey"}, Cols: []Column{
			{Name: "o_orderkey", Kind: Int, Lits: ints(1, 6000000)},
			{Name: "o_custkey", Kind: Int, Lits: ints(1, 150000)},
			{Name: "o_orderstatus", Kind: Str, Group: true, Lits: []string{"'F'", "'O'", "'P'"}},
			{Name: "o_totalprice", Kind: Dec, Lits: []string{"1000.00", "100000.00", "250000.00"}},
			{Name: "o_orderdate", Kind: Date, Lits: []string{"DATE '1992-06-01'", "DATE '1995-03-15'", "DATE '1998-01-01'"}},
			{Name: "o_orderpriority", Kind: Str, Group: true, Lits: []string{"'1-URGENT'", "'2-HIGH'", "'3-MEDIUM'", "'4-NOT SPECIFIED'", "'5-LOW'"}},
			{Name: "o_shippriority", Kind: Int, Group: true, Lits: []string{"0"}},
		}},
		{Name: "partsupp", Fact: true, Key: []string{"ps_partkey", "ps_suppkey"}, Cols: []Column{
			{Name: "ps_partkey", Kind: Int, Lits: ints(1, 400)},
			{Name: "ps_suppkey", Kind: Int, Lits: ints(1, 10000)},
			{Name: "ps_availqty", Kind: Int, Lits: ints(1, 9999)},
			{Name: "ps_supplycost", Kind: Dec, Lits: []string{"1.00", "250.00", "500.00", "1000.00"}},
		}},
		{Name: "part", Key: []string{"p_partkey"}, Cols: []Column{
			{Name: "p_partkey", Kind: Int, Lits: ints(1, 400)},
			{Name: "p_mfgr", Kind: Str, Group: true, Lits: []string{"'Manufacturer#1'", "'Manufacturer#3'", "'Manufacturer#5'"}},
			{Name: "p_brand", Kind: Str, Group: true, Lits: []string{"'Brand#11'", "'Brand#23'", "'Brand#34'", "'Brand#55'"}},
			{Name: "p_type", Kind: Str, Lits: []string{"'PROMO BURNISHED COPPER'", "'STANDARD POLISHED TIN'", "'ECONOMY ANODIZED STEEL'"}},
			{Name: "p_size", Kind: Int, Lits: ints(1, 50)},
			{Name: "p_container", Kind: Str, Group: true, Lits: []string{"'SM CASE'", "'LG BOX'", "'MED BAG'", "'JUMBO PKG'", "'WRAP PACK'"}},
			{Name: "p_retailprice", Kind: Dec, Lits: []string{"901.00", "1000.00", "1500.00", "2000.00"}},
		}},
		{Name: "supplier", Key: []string{"s_suppkey"}, Cols: []Column{
			{Name: "s_suppkey", Kind: Int, Lits: ints(1, 10000)},
			{Name: "s_name", Kind: Str, Lits: []string{"'Supplier#000000001'", "'Supplier#000000100'", "'Supplier#000005000'"}},
			{Name: "s_nationkey", Kind: Int, Group: true, Lits: ints(0, 24)},
			{Name: "s_acctbal", Kind: Dec, Lits: []string{"-999.99", "0.00", "4500.00", "9999.99"}},
		}},
		{Name: "customer", Key: []string{"c_custkey"}, Cols: []Column{
			{Name: "c_custkey", Kind: Int, Lits: ints(1, 150000)},
			{Name: "c_name", Kind: Str, Lits: []string{"'Customer#000000001'", "'Customer#000075000'"}},
			{Name: "c_nationkey", Kind: Int, Group: true, Lits: ints(0, 24)},
			{Name: "c_acctbal", Kind: Dec, Lits: []string{"-999.99", "0.00", "4500.00", "9999.99"}},
			{Name: "c_mktsegment", Kind: Str, Group: true, Lits: []string{"'AUTOMOBILE'", "'BUILDING'", "'FURNITURE'", "'HOUSEHOLD'", "'MACHINERY'"}},
		}},
		{Name: "nation", Key: []string{"n_nationkey"}, Cols: []Column{
			{Name: "n_nationkey", Kind: Int, Lits: ints(0, 24)},
			{Name: "n_name", Kind: Str, Lits: []string{"'FRANCE'", "'GERMANY'", "'BRAZIL'", "'CHINA'", "'UNITED STATES'"}},
			{Name: "n_regionkey", Kind: Int, Group: true, Lits: ints(0, 4)},
		}},
		{Name: "region", Key: []string{"r_regionkey"}, Cols: []Column{
			{Name: "r_regionkey", Kind: Int, Lits: ints(0, 4)},
			{Name: "r_name", Kind: Str, Group: true, Lits: []string{"'AFRICA'", "'AMERICA'", "'ASIA'", "'EUROPE'", "'MIDDLE EAST'"}},
		}},
	},
	Edges: []Edge{
		{"lineitem", "l_orderkey", "orders", "o_orderkey"},
		{"lineitem", "l_partkey", "part", "p_partkey"},
		{"lineitem", "l_suppkey", "supplier", "s_suppkey"},
		{"orders", "o_custkey", "customer", "c_custkey"},
		{"partsupp", "ps_partkey", "part", "p_partkey"},
		{"partsupp", "ps_suppkey", "supplier", "s_suppkey"},
		{"customer", "c_nationkey", "nation", "n_nationkey"},
		{"supplier", "s_nationkey", "nation", "n_nationkey"},
		{"nation", "n_regionkey", "region", "r_regionkey"},
		{"lineitem", "l_partkey", "partsupp", "ps_partkey"},
	},
	SetPairs: [][]string{
		{"lineitem:l_partkey,l_suppkey", "partsupp:ps_partkey,ps_suppkey"},
		{"orders:o_custkey,o_totalprice", "customer:c_custkey,c_acctbal", "supplier:s_suppkey,s_acctbal"},
		{"customer:c_nationkey,c_mktsegment", "supplier:s_nationkey,s_name", "nation:n_nationkey,n_name"},
		{"lineitem:l_shipdate", "orders:o_orderdate"},
		{"part:p_brand,p_container", "part:p_type,p_mfgr"},
		{"lineitem:l_returnflag,l_linenumber", "orders:o_orderstatus,o_shippriority"},
	},
	Lookup:  struct{ Table, Key, RefSuffix string }{"part", "p_partkey", "partkey"},
	IntType: plan.Int64, DecType: plan.Decimal(15, 2),
}
