-- s3: broadcast join, rows streamed through the probe: lineitem of small boxed parts (27K rows)
select
	l_orderkey,
	l_quantity,
	p_name
from
	lineitem,
	part
where
	l_partkey = p_partkey
	and p_container = 'MED BOX'
	and p_size < 10;
