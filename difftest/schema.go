// Package difftest generates random SQL queries over the TPC-DS tables (or
// the TPC-H tables, Schema TPCH) for differential testing: the same query runs on sluice (in process and on a
// cluster) and on a reference engine, and the answers are compared. The
// generator aims at sluice's newer SQL (window functions, grouping sets,
// set operations, subqueries anywhere, LATERAL, FILTER, statistical
// aggregates, string_agg) and at NULL handling, and it keeps every query
// deterministic so that any difference between engines is a finding:
// window ORDER BYs that matter end in unique keys, LIMIT comes only after a
// total ORDER BY, and no double is summed in an order-dependent way.
package difftest

import (
	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/plan"
)

// Kind is a column's value domain as the generator sees it.
type Kind int

// Column kinds.
const (
	Int Kind = iota
	Dec
	Str
	Date
)

// Column is one column the generator may reference.
type Column struct {
	Name string
	Kind Kind
	// Lits are literals (SQL text) that hit real values of the column, for
	// predicates that select some rows but not all.
	Lits []string
	// Group marks a low-cardinality column, good for GROUP BY, PARTITION
	// BY and set operations.
	Group bool
}

// Table is one table with the columns the generator uses (a subset of the
// table's real columns) and the columns that make a row unique.
type Table struct {
	Name string
	Cols []Column
	Key  []string
	// Fact tables are the big ones; subqueries and LATERAL read them
	// inside, dimensions outside.
	Fact bool
}

// Col returns the column named name; it panics on a name not in the table,
// which is a bug in the schema below.
func (t *Table) Col(name string) Column {
	for _, c := range t.Cols {
		if c.Name == name {
			return c
		}
	}
	panic("difftest: no column " + name + " in " + t.Name)
}

// Edge is a join path: From.FromCol references To.ToCol.
type Edge struct {
	From, FromCol, To, ToCol string
}

// Schema is a set of tables the generator writes queries over.
type Schema struct {
	Name   string
	Tables []Table
	// Edges are the foreign keys the generator joins along.
	Edges []Edge
	// SetPairs are column lists ("table:col,col") of the same types in
	// different tables, for set operations.
	SetPairs [][]string
	// Lookup is the dimension the innermost level of a nested subquery
	// reads by its key, joined on any column whose name ends in RefSuffix.
	Lookup struct{ Table, Key, RefSuffix string }
	// IntType and DecType are the types of Int and Dec columns in the
	// data files.
	IntType, DecType arrow.DataType
}

// TableNamed returns the table named name; it panics on a name not in the
// schema, which is a bug in the schema.
func (s *Schema) TableNamed(name string) *Table {
	for i := range s.Tables {
		if s.Tables[i].Name == name {
			return &s.Tables[i]
		}
	}
	panic("difftest: no table " + name + " in " + s.Name)
}

// ArrowType is the type a column of kind k has in the schema's files.
func (s *Schema) ArrowType(k Kind) arrow.DataType {
	switch k {
	case Int:
		return s.IntType
	case Dec:
		return s.DecType
	case Date:
		return plan.Date32
	default:
		return plan.Utf8
	}
}

// EmptyCatalog holds every table of the schema, empty and with the
// generator's columns only, so that generated SQL can be bound (and
// planned) without the data files.
func (s *Schema) EmptyCatalog() *catalog.Catalog {
	cat := catalog.New()
	for _, t := range s.Tables {
		fields := make([]arrow.Field, len(t.Cols))
		for i, c := range t.Cols {
			fields[i] = arrow.Field{Name: c.Name, Type: s.ArrowType(c.Kind), Nullable: true}
		}
		if err := cat.RegisterTable(t.Name, catalog.NewMemTable(arrow.NewSchema(fields, nil), nil), false); err != nil {
			panic(err)
		}
	}
	return cat
}

func ints(lo, hi int) []string {
	var out []string
	step := (hi - lo) / 6
	if step == 0 {
		step = 1
	}
	for v := lo; v <= hi; v += step {
		out = append(out, itoa(v))
	}
	return out
}

func itoa(v int) string {
	if v < 0 {
		return "-" + itoa(-v)
	}
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}

// Tables is the TPC-DS subset the generator queries. Types are those of
// the kit's DDL as DuckDB writes them to Parquet: INTEGER, DECIMAL(p,2),
// CHAR/VARCHAR as strings, DATE.
var Tables = []Table{
	{Name: "store_sales", Fact: true, Key: []string{"ss_item_sk", "ss_ticket_number"}, Cols: []Column{
		{Name: "ss_sold_date_sk", Kind: Int, Lits: []string{"2451000", "2451500", "2452000", "2452500"}},
		{Name: "ss_item_sk", Kind: Int, Lits: ints(1, 120)},
		{Name: "ss_customer_sk", Kind: Int, Lits: ints(1000, 90000)},
		{Name: "ss_store_sk", Kind: Int, Lits: ints(1, 12), Group: true},
		{Name: "ss_promo_sk", Kind: Int, Lits: ints(1, 300)},
		{Name: "ss_ticket_number", Kind: Int, Lits: ints(1000, 240000)},
		{Name: "ss_quantity", Kind: Int, Lits: ints(1, 100)},
		{Name: "ss_list_price", Kind: Dec, Lits: []string{"10.00", "50.50", "100.00", "150.25"}},
		{Name: "ss_sales_price", Kind: Dec, Lits: []string{"5.00", "25.00", "75.00", "120.00"}},
		{Name: "ss_net_profit", Kind: Dec, Lits: []string{"-1000.00", "-100.00", "0", "100.00", "1000.00"}},
	}},
	{Name: "store_returns", Fact: true, Key: []string{"sr_item_sk", "sr_ticket_number"}, Cols: []Column{
		{Name: "sr_returned_date_sk", Kind: Int, Lits: []string{"2451000", "2451500", "2452000", "2452500"}},
		{Name: "sr_item_sk", Kind: Int, Lits: ints(1, 120)},
		{Name: "sr_customer_sk", Kind: Int, Lits: ints(1000, 90000)},
		{Name: "sr_ticket_number", Kind: Int, Lits: ints(1000, 240000)},
		{Name: "sr_reason_sk", Kind: Int, Lits: ints(1, 35), Group: true},
		{Name: "sr_return_quantity", Kind: Int, Lits: ints(1, 100)},
		{Name: "sr_return_amt", Kind: Dec, Lits: []string{"10.00", "100.00", "500.00", "2000.00"}},
	}},
	{Name: "web_sales", Fact: true, Key: []string{"ws_item_sk", "ws_order_number"}, Cols: []Column{
		{Name: "ws_sold_date_sk", Kind: Int, Lits: []string{"2451000", "2451500", "2452000", "2452500"}},
		{Name: "ws_item_sk", Kind: Int, Lits: ints(1, 120)},
		{Name: "ws_bill_customer_sk", Kind: Int, Lits: ints(1000, 90000)},
		{Name: "ws_order_number", Kind: Int, Lits: ints(1, 60000)},
		{Name: "ws_warehouse_sk", Kind: Int, Lits: ints(1, 5), Group: true},
		{Name: "ws_quantity", Kind: Int, Lits: ints(1, 100)},
		{Name: "ws_sales_price", Kind: Dec, Lits: []string{"5.00", "25.00", "75.00", "120.00"}},
		{Name: "ws_net_profit", Kind: Dec, Lits: []string{"-1000.00", "-100.00", "0", "100.00", "1000.00"}},
	}},
	{Name: "item", Key: []string{"i_item_sk"}, Cols: []Column{
		{Name: "i_item_sk", Kind: Int, Lits: ints(1, 120)},
		{Name: "i_item_id", Kind: Str, Lits: []string{"'AAAAAAAABAAAAAAA'", "'AAAAAAAAOAAAAAAA'", "'AAAAAAAAKBAAAAAA'"}},
		{Name: "i_brand", Kind: Str, Lits: []string{"'amalgamalg #1'", "'exportiunivamalg #9'", "'importoamalg #1'"}},
		{Name: "i_class", Kind: Str, Lits: []string{"'dresses'", "'pants'", "'shirts'", "'fiction'", "'football'"}},
		{Name: "i_category", Kind: Str, Group: true, Lits: []string{"'Books'", "'Electronics'", "'Home'", "'Jewelry'", "'Men'", "'Music'", "'Shoes'", "'Sports'", "'Women'", "'Children'"}},
		{Name: "i_current_price", Kind: Dec, Lits: []string{"1.00", "5.00", "20.00", "50.00"}},
		{Name: "i_manufact_id", Kind: Int, Lits: ints(1, 1000)},
		{Name: "i_color", Kind: Str, Lits: []string{"'red'", "'blue'", "'green'", "'white'", "'black'", "'pink'"}},
		{Name: "i_size", Kind: Str, Group: true, Lits: []string{"'small'", "'medium'", "'large'", "'extra large'", "'N/A'", "'petite'"}},
	}},
	{Name: "customer", Key: []string{"c_customer_sk"}, Cols: []Column{
		{Name: "c_customer_sk", Kind: Int, Lits: ints(1000, 90000)},
		{Name: "c_customer_id", Kind: Str, Lits: []string{"'AAAAAAAAAAAAAAAA'", "'AAAAAAAAMAAAAAAA'"}},
		{Name: "c_first_name", Kind: Str, Lits: []string{"'John'", "'Mary'", "'James'", "'David'"}},
		{Name: "c_last_name", Kind: Str, Lits: []string{"'Smith'", "'Johnson'", "'Brown'", "'Jones'"}},
		{Name: "c_birth_year", Kind: Int, Lits: ints(1924, 1992)},
		{Name: "c_birth_month", Kind: Int, Lits: ints(1, 12), Group: true},
		{Name: "c_current_addr_sk", Kind: Int, Lits: ints(1, 50000)},
		{Name: "c_preferred_cust_flag", Kind: Str, Group: true, Lits: []string{"'Y'", "'N'"}},
	}},
	{Name: "customer_address", Key: []string{"ca_address_sk"}, Cols: []Column{
		{Name: "ca_address_sk", Kind: Int, Lits: ints(1, 50000)},
		{Name: "ca_state", Kind: Str, Group: true, Lits: []string{"'CA'", "'TX'", "'GA'", "'KY'", "'VA'", "'NY'"}},
		{Name: "ca_city", Kind: Str, Lits: []string{"'Midway'", "'Fairview'", "'Oak Grove'", "'Pleasant Hill'"}},
		{Name: "ca_gmt_offset", Kind: Dec, Group: true, Lits: []string{"-5.00", "-6.00", "-7.00", "-8.00"}},
		{Name: "ca_location_type", Kind: Str, Group: true, Lits: []string{"'apartment'", "'condo'", "'single family'"}},
	}},
	{Name: "date_dim", Key: []string{"d_date_sk"}, Cols: []Column{
		{Name: "d_date_sk", Kind: Int, Lits: []string{"2451000", "2451500", "2452000", "2452500"}},
		{Name: "d_date", Kind: Date, Lits: []string{"DATE '1998-06-01'", "DATE '1999-12-31'", "DATE '2000-02-29'", "DATE '2001-07-15'"}},
		{Name: "d_year", Kind: Int, Group: true, Lits: ints(1998, 2002)},
		{Name: "d_moy", Kind: Int, Group: true, Lits: ints(1, 12)},
		{Name: "d_dom", Kind: Int, Lits: ints(1, 31)},
		{Name: "d_qoy", Kind: Int, Group: true, Lits: ints(1, 4)},
		{Name: "d_day_name", Kind: Str, Group: true, Lits: []string{"'Monday'", "'Friday'", "'Sunday'"}},
	}},
	{Name: "store", Key: []string{"s_store_sk"}, Cols: []Column{
		{Name: "s_store_sk", Kind: Int, Lits: ints(1, 12)},
		{Name: "s_store_name", Kind: Str, Group: true, Lits: []string{"'ought'", "'able'", "'ese'", "'bar'"}},
		{Name: "s_state", Kind: Str, Group: true, Lits: []string{"'TN'"}},
		{Name: "s_number_employees", Kind: Int, Lits: ints(200, 300)},
		{Name: "s_tax_precentage", Kind: Dec, Lits: []string{"0.00", "0.03", "0.07", "0.11"}},
	}},
	{Name: "promotion", Key: []string{"p_promo_sk"}, Cols: []Column{
		{Name: "p_promo_sk", Kind: Int, Lits: ints(1, 300)},
		{Name: "p_channel_email", Kind: Str, Group: true, Lits: []string{"'N'", "'Y'"}},
		{Name: "p_channel_tv", Kind: Str, Group: true, Lits: []string{"'N'", "'Y'"}},
		{Name: "p_cost", Kind: Dec, Lits: []string{"1000.00"}},
		{Name: "p_response_target", Kind: Int, Group: true, Lits: []string{"1"}},
	}},
}

// Edges are the foreign keys the generator joins along.
var Edges = []Edge{
	{"store_sales", "ss_item_sk", "item", "i_item_sk"},
	{"store_sales", "ss_customer_sk", "customer", "c_customer_sk"},
	{"store_sales", "ss_sold_date_sk", "date_dim", "d_date_sk"},
	{"store_sales", "ss_store_sk", "store", "s_store_sk"},
	{"store_sales", "ss_promo_sk", "promotion", "p_promo_sk"},
	{"store_returns", "sr_item_sk", "item", "i_item_sk"},
	{"store_returns", "sr_customer_sk", "customer", "c_customer_sk"},
	{"store_returns", "sr_returned_date_sk", "date_dim", "d_date_sk"},
	{"web_sales", "ws_item_sk", "item", "i_item_sk"},
	{"web_sales", "ws_bill_customer_sk", "customer", "c_customer_sk"},
	{"web_sales", "ws_sold_date_sk", "date_dim", "d_date_sk"},
	{"customer", "c_current_addr_sk", "customer_address", "ca_address_sk"},
	{"store_returns", "sr_item_sk", "store_sales", "ss_item_sk"},
	{"web_sales", "ws_item_sk", "store_sales", "ss_item_sk"},
	{"web_sales", "ws_bill_customer_sk", "store_sales", "ss_customer_sk"},
}

// TPCDS is the TPC-DS subset the generator queries by default.
var TPCDS = &Schema{
	Name: "tpcds", Tables: Tables, Edges: Edges,
	SetPairs: [][]string{
		{"store_sales:ss_item_sk,ss_customer_sk", "store_returns:sr_item_sk,sr_customer_sk", "web_sales:ws_item_sk,ws_bill_customer_sk"},
		{"store_sales:ss_item_sk,ss_quantity", "store_returns:sr_item_sk,sr_return_quantity", "web_sales:ws_item_sk,ws_quantity"},
		{"store_sales:ss_store_sk,ss_sold_date_sk", "store_returns:sr_reason_sk,sr_returned_date_sk", "web_sales:ws_warehouse_sk,ws_sold_date_sk"},
		{"store_sales:ss_sales_price", "web_sales:ws_sales_price", "item:i_current_price"},
		{"item:i_category,i_size", "item:i_class,i_color"},
		{"customer:c_birth_month,c_preferred_cust_flag", "date_dim:d_moy,d_day_name"},
	},
	Lookup:  struct{ Table, Key, RefSuffix string }{"item", "i_item_sk", "item_sk"},
	IntType: plan.Int32, DecType: plan.Decimal(7, 2),
}

// TableNamed returns the TPC-DS table named name.
func TableNamed(name string) *Table { return TPCDS.TableNamed(name) }

// ArrowType is the type a TPC-DS column of kind k has in the Parquet files.
func ArrowType(k Kind) arrow.DataType { return TPCDS.ArrowType(k) }

// EmptyCatalog is TPCDS.EmptyCatalog.
func EmptyCatalog() *catalog.Catalog { return TPCDS.EmptyCatalog() }
