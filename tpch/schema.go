// Package tpch generates the TPC-H benchmark tables as Parquet, and checks
// query results against the official TPC-H answers.
//
// Data comes from github.com/pingcap/go-tpc/tpch/dbgen, a Go port of the
// official dbgen that reproduces its output byte for byte at integer scale
// factors. Every value is converted from the generator's own integer form
// (money is kept in cents there), so no float round trip can alter it.
package tpch

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// TableNames lists the eight TPC-H tables in an order where every table comes
// after the tables its foreign keys point to.
var TableNames = []string{"nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"}

// money is the TPC-H DECIMAL(15,2) type used for prices, quantities,
// discounts, taxes and balances.
var money = &arrow.Decimal128Type{Precision: 15, Scale: 2}

func col(name string, t arrow.DataType) arrow.Field {
	// Every TPC-H column is NOT NULL; dbgen never produces a null.
	return arrow.Field{Name: name, Type: t, Nullable: false}
}

var (
	i64  = arrow.PrimitiveTypes.Int64
	str  = arrow.BinaryTypes.String
	date = arrow.FixedWidthTypes.Date32
)

var schemas = map[string]*arrow.Schema{
	"nation": arrow.NewSchema([]arrow.Field{
		col("n_nationkey", i64), col("n_name", str), col("n_regionkey", i64), col("n_comment", str),
	}, nil),
	"region": arrow.NewSchema([]arrow.Field{
		col("r_regionkey", i64), col("r_name", str), col("r_comment", str),
	}, nil),
	"part": arrow.NewSchema([]arrow.Field{
		col("p_partkey", i64), col("p_name", str), col("p_mfgr", str), col("p_brand", str),
		col("p_type", str), col("p_size", i64), col("p_container", str), col("p_retailprice", money),
		col("p_comment", str),
	}, nil),
	"supplier": arrow.NewSchema([]arrow.Field{
		col("s_suppkey", i64), col("s_name", str), col("s_address", str), col("s_nationkey", i64),
		col("s_phone", str), col("s_acctbal", money), col("s_comment", str),
	}, nil),
	"partsupp": arrow.NewSchema([]arrow.Field{
		col("ps_partkey", i64), col("ps_suppkey", i64), col("ps_availqty", i64),
		col("ps_supplycost", money), col("ps_comment", str),
	}, nil),
	"customer": arrow.NewSchema([]arrow.Field{
		col("c_custkey", i64), col("c_name", str), col("c_address", str), col("c_nationkey", i64),
		col("c_phone", str), col("c_acctbal", money), col("c_mktsegment", str), col("c_comment", str),
	}, nil),
	"orders": arrow.NewSchema([]arrow.Field{
		col("o_orderkey", i64), col("o_custkey", i64), col("o_orderstatus", str), col("o_totalprice", money),
		col("o_orderdate", date), col("o_orderpriority", str), col("o_clerk", str), col("o_shippriority", i64),
		col("o_comment", str),
	}, nil),
	"lineitem": arrow.NewSchema([]arrow.Field{
		col("l_orderkey", i64), col("l_partkey", i64), col("l_suppkey", i64), col("l_linenumber", i64),
		col("l_quantity", money), col("l_extendedprice", money), col("l_discount", money), col("l_tax", money),
		col("l_returnflag", str), col("l_linestatus", str), col("l_shipdate", date), col("l_commitdate", date),
		col("l_receiptdate", date), col("l_shipinstruct", str), col("l_shipmode", str), col("l_comment", str),
	}, nil),
}

// Schema returns the Arrow schema of a TPC-H table, or nil when table is not
// one of TableNames. Integer columns are int64, DECIMAL(15,2) columns are
// decimal128(15,2), dates are date32 and everything else is utf8.
func Schema(table string) *arrow.Schema {
	return schemas[table]
}

func mustSchema(table string) *arrow.Schema {
	s := Schema(table)
	if s == nil {
		panic(fmt.Sprintf("tpch: unknown table %q", table))
	}
	return s
}
