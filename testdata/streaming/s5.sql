-- s5: LIMIT: the first 1000 matches of a LIKE scan over lineitem comments
select
	l_orderkey,
	l_linenumber,
	l_comment
from
	lineitem
where
	l_comment like '%special%'
limit 1000;
