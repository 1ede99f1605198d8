package sql

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/plan"
)

// fakeTable is a catalog.Table with a schema and statistics only.
type fakeTable struct {
	schema *arrow.Schema
	rows   int64
}

func (t *fakeTable) Schema() *arrow.Schema { return t.schema }
func (t *fakeTable) Statistics() catalog.Statistics {
	return catalog.Statistics{NumRows: t.rows, TotalBytes: -1}
}

// table builds a fakeTable from "name type[?]" column specs; a trailing ?
// marks the column nullable. Types: int, bigint, money, dec, str, date, bool, double.
func table(rows int64, cols ...string) *fakeTable {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		name, typ, _ := strings.Cut(c, " ")
		nullable := strings.HasSuffix(typ, "?")
		typ = strings.TrimSuffix(typ, "?")
		var t arrow.DataType
		switch typ {
		case "int":
			t = plan.Int32
		case "bigint":
			t = plan.Int64
		case "money":
			t = plan.Decimal(15, 2)
		case "str":
			t = plan.Utf8
		case "date":
			t = plan.Date32
		case "ts":
			t = plan.Timestamp
		case "bool":
			t = plan.Bool
		case "double":
			t = plan.Float64
		default:
			panic("unknown test type " + typ)
		}
		fields[i] = arrow.Field{Name: name, Type: t, Nullable: nullable}
	}
	return &fakeTable{schema: arrow.NewSchema(fields, nil), rows: rows}
}

// testCatalog holds the TPC-H schema (keys BIGINT, money DECIMAL(15,2),
// dates DATE, the rest VARCHAR; a few INT columns) plus small tables t and u
// with nullable columns.
func testCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c := catalog.New()
	tables := map[string]*fakeTable{
		"nation":   table(25, "n_nationkey bigint", "n_name str", "n_regionkey bigint", "n_comment str"),
		"region":   table(5, "r_regionkey bigint", "r_name str", "r_comment str"),
		"part":     table(200000, "p_partkey bigint", "p_name str", "p_mfgr str", "p_brand str", "p_type str", "p_size int", "p_container str", "p_retailprice money", "p_comment str"),
		"supplier": table(10000, "s_suppkey bigint", "s_name str", "s_address str", "s_nationkey bigint", "s_phone str", "s_acctbal money", "s_comment str"),
		"partsupp": table(800000, "ps_partkey bigint", "ps_suppkey bigint", "ps_availqty int", "ps_supplycost money", "ps_comment str"),
		"customer": table(150000, "c_custkey bigint", "c_name str", "c_address str", "c_nationkey bigint", "c_phone str", "c_acctbal money", "c_mktsegment str", "c_comment str"),
		"orders":   table(1500000, "o_orderkey bigint", "o_custkey bigint", "o_orderstatus str", "o_totalprice money", "o_orderdate date", "o_orderpriority str", "o_clerk str", "o_shippriority int", "o_comment str"),
		"lineitem": table(6000000, "l_orderkey bigint", "l_partkey bigint", "l_suppkey bigint", "l_linenumber int", "l_quantity money", "l_extendedprice money", "l_discount money", "l_tax money",
			"l_returnflag str", "l_linestatus str", "l_shipdate date", "l_commitdate date", "l_receiptdate date", "l_shipinstruct str", "l_shipmode str", "l_comment str"),
		"t": table(3, "a int?", "b bigint?", "s str?", "d date?", "m money?", "f double?", "ts ts?"),
		"u": table(3, "a int?", "c bigint?", "s str?"),
	}
	for name, tab := range tables {
		if err := c.RegisterTable(name, tab, false); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
