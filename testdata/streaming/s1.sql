-- s1: filter scan: lineitem rows with the largest quantity (120K rows)
select
	l_orderkey,
	l_partkey,
	l_suppkey,
	l_quantity,
	l_extendedprice
from
	lineitem
where
	l_quantity > 49;
