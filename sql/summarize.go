package sql

import (
	"fmt"
	"strings"

	"sluice/plan"
)

// summarize is DuckDB's SUMMARIZE table (or query): one row per column of
// a table, view or query with its type, min, max, distinct count, mean, standard deviation,
// quartiles, row count and share of NULLs. It binds as the query of those
// aggregates, one SELECT per column under UNION ALL, ordered by the
// columns' positions, so it runs like any query (on the cluster too).
type summarize struct {
	name  string // a table or view
	query string // or a query's text,
	// described is the query as DESCRIBE query parsed it (for its
	// columns, with errors positioned in the user's text).
	described *Describe
}

func (*summarize) bound() {}

// bindSummarize writes SUMMARIZE's query for the table's columns as they
// are now and binds it.
func (b *Binder) bindSummarize(sm *summarize) (Bound, error) {
	st := &binder{cat: b.Catalog, ids: &plan.IDGen{}, clock: &stmtClock{now: b.Now}, views: new(int)}
	from := quoteIdent(sm.name)
	var cols []plan.Column
	if sm.query != "" {
		q, err := b.describedQuery(sm.described)
		if err != nil {
			return nil, err
		}
		for i, c := range q.Plan.Schema() {
			c.Name = q.Names[i]
			cols = append(cols, c)
		}
		from = "(" + sm.query + "\n) AS summarized" // a trailing -- comment ends at the newline
	} else {
		if err := b.checkRelation(sm.name); err != nil {
			return nil, err
		}
		var err error
		if cols, err = st.tableColumns(sm.name); err != nil {
			return nil, err
		}
	}
	if len(cols) == 0 {
		return nil, &Error{Kind: "bind", Msg: "SUMMARIZE: nothing to summarize (no columns)"}
	}
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	var parts []string
	for i, c := range cols {
		col := quoteIdent(c.Name)
		minMax := fmt.Sprintf("min(%[1]s)::varchar, max(%[1]s)::varchar", col)
		distinct := fmt.Sprintf("count(DISTINCT %s)", col)
		if plan.IsArray(c.Type) {
			// Arrays are not compared: no min, max or distinct count.
			minMax, distinct = "NULL::varchar, NULL::varchar", "NULL::bigint"
		}
		stats := "NULL::double, NULL::double, NULL::double, NULL::double, NULL::double"
		if plan.IsNumeric(c.Type) {
			stats = fmt.Sprintf("avg(%[1]s)::double, stddev(%[1]s), quantile_cont(%[1]s, 0.25), quantile_cont(%[1]s, 0.5), quantile_cont(%[1]s, 0.75)", col)
		}
		parts = append(parts, fmt.Sprintf("SELECT %d AS ord, %s AS column_name, %s AS column_type, %s, %s, %s, count(*) AS count, "+
			"round(100.0 * (count(*) - count(%s)) / nullif(count(*), 0), 2)::double AS null_percentage FROM %s",
			i, lit(c.Name), lit(plan.TypeName(c.Type)), minMax, distinct, stats, col, from))
	}
	text := "SELECT column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75, count, null_percentage FROM (" +
		strings.Join(parts, " UNION ALL ") + ") AS s(ord, column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75, count, null_percentage) ORDER BY ord"
	stmts, err := Parse(text)
	if err != nil {
		return nil, fmt.Errorf("internal: SUMMARIZE's query: %w", err)
	}
	return b.Bind(stmts[0])
}
