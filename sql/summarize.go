package sql

import (
	"fmt"
	"strings"

	"sluice/plan"
)

// summarize is DuckDB's SUMMARIZE table: one row per column of a table or
// view with its type, min, max, distinct count, mean, standard deviation,
// quartiles, row count and share of NULLs. It binds as the query of those
// aggregates, one SELECT per column under UNION ALL, ordered by the
// columns' positions, so it runs like any query (on the cluster too).
type summarize struct{ name string }

func (*summarize) bound() {}

// bindSummarize writes SUMMARIZE's query for the table's columns as they
// are now and binds it.
func (b *Binder) bindSummarize(sm *summarize) (Bound, error) {
	if err := b.checkRelation(sm.name); err != nil {
		return nil, err
	}
	st := &binder{cat: b.Catalog, ids: &plan.IDGen{}, clock: &stmtClock{now: b.Now}, views: new(int)}
	cols, err := st.tableColumns(sm.name)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("SUMMARIZE: %q has no columns", sm.name)}
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
			i, lit(c.Name), lit(plan.TypeName(c.Type)), minMax, distinct, stats, col, quoteIdent(sm.name)))
	}
	text := "SELECT column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75, count, null_percentage FROM (" +
		strings.Join(parts, " UNION ALL ") + ") AS s(ord, column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75, count, null_percentage) ORDER BY ord"
	stmts, err := Parse(text)
	if err != nil {
		return nil, fmt.Errorf("internal: SUMMARIZE's query: %w", err)
	}
	return b.Bind(stmts[0])
}
