-- s4: join of the two largest tables: late air shipments of urgent orders (109K rows)
select
	o_orderkey,
	o_orderdate,
	l_linenumber,
	l_receiptdate
from
	orders,
	lineitem
where
	o_orderkey = l_orderkey
	and o_orderpriority = '1-URGENT'
	and l_shipmode = 'AIR'
	and l_commitdate < l_receiptdate;
