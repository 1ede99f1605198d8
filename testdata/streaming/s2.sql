-- s2: filter scan on two dictionary columns: urgent finished orders (146K rows)
select
	o_orderkey,
	o_custkey,
	o_totalprice,
	o_orderdate
from
	orders
where
	o_orderpriority = '1-URGENT'
	and o_orderstatus = 'F';
