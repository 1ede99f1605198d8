package dplan_test

import (
	"strings"
	"testing"

	"sluice/engine"
	"sluice/physical"
	"sluice/scheduler/dplan"
	"sluice/scheduler/internal/testdb"
)

// TestDynamicFiltersGolden plans the SQL of testdata/dplan-dynfilter/*.txt
// with cross-stage dynamic filters added and compares the stage DAG with
// the expected text.
//
// Command: "filters [partitions=N] [broadcast=BYTES]" (default 3
// partitions and a broadcast threshold of 1 byte, so that joins are
// partitioned), the SQL, "----", then dplan.Format of the graph.
func TestDynamicFiltersGolden(t *testing.T) {
	eng := engine.New(testdb.Catalog(t))
	runGolden(t, "../../testdata/dplan-dynfilter/*.txt", func(t *testing.T, c *goldenCase) string {
		fields := strings.Fields(c.command)
		if fields[0] != "filters" {
			t.Fatalf("%s: unknown command %q", c.pos, fields[0])
		}
		settings := engine.NewSettings()
		set := map[string]string{"partitions": "3", "broadcast": "1"}
		for _, arg := range fields[1:] {
			k, v, _ := strings.Cut(arg, "=")
			if _, ok := set[k]; !ok {
				t.Fatalf("%s: unknown argument %q", c.pos, arg)
			}
			set[k] = v
		}
		if err := settings.Set("execution.target_partitions", set["partitions"]); err != nil {
			t.Fatal(err)
		}
		if err := settings.Set("optimizer.broadcast_join_threshold_bytes", set["broadcast"]); err != nil {
			t.Fatal(err)
		}
		out, err := eng.Prepare(c.input, settings)
		if err != nil {
			return "error: " + err.Error()
		}
		g, err := dplan.Plan(out.Query.Physical)
		if err != nil {
			return "error: " + err.Error()
		}
		if err := dplan.AddDynamicFilters(g); err != nil {
			return "error: " + err.Error()
		}
		if err := checkGraph(g, out.Query.Physical); err != nil {
			t.Errorf("%s: %v\n%s", c.pos, err, dplan.Format(g))
		}
		for _, f := range g.Filters {
			if f.Build >= f.Probe {
				t.Errorf("%s: filter %d built by stage %d for stage %d: a blocking job could not wait", c.pos, f.ID, f.Build, f.Probe)
			}
			scans := physical.ParquetScans(g.Stages[f.Probe-1].Body)
			if f.Scan >= len(scans) || scans[f.Scan].Schema().Field(f.Column).Name != f.ColumnName {
				t.Errorf("%s: filter %d names scan %d column %d, not %s", c.pos, f.ID, f.Scan, f.Column, f.ColumnName)
			}
		}
		return dplan.Format(g)
	})
}
