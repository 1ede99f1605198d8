package dplan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"slices"
	"strings"

	"sluice/physical"
	"sluice/physical/expr"
)

// DynamicFilter is a cross-stage dynamic filter (see physical's
// dynamic_filter.go): the keys that stage Build writes in column
// BuildColumn, merged over all its tasks, filter column Column of the
// Scan-th Parquet scan (physical.ParquetScans order) of stage Probe.
type DynamicFilter struct {
	ID          int
	Build       int
	BuildColumn int
	Probe       int
	Scan        int
	Column      int
	// ColumnName is the scan column's name, for EXPLAIN.
	ColumnName string
}

// AddDynamicFilters finds the hash joins whose build side and probe-side
// scan are in different stages and adds a dynamic filter for each of their
// keys that qualifies: the build stage's body is wrapped in a
// physical.DynamicFilterBuild collecting the key, and g.Filters names the
// scan column the keys filter. A join qualifies when it never outputs a
// probe row without a match (inner, left outer, left semi and anti, right
// semi; not null-aware): only then is dropping a probe row whose key no
// build row has invisible. The probe key must reach the scan unchanged
// (physical.TraceProbeColumn), crossing at least one exchange and no stage
// whose output another reader also reads (a shared or broadcast stage:
// the filter would drop rows that reader needs); the build key must reach
// the build side's stage (physical.TraceBuildColumn), which must come
// before the probe scan's stage, so that a blocking job can run the probe
// stage after it without a cycle.
func AddDynamicFilters(g *Graph) error {
	type key struct{ build, buildCol, probe, scan, col int }
	seen := map[key]bool{}
	builds := map[int][]int{} // stage -> indexes into g.Filters
	for _, s := range g.Stages {
		for _, op := range physical.PreOrder(s.Body) {
			h, ok := op.(*physical.HashJoin)
			if !ok || h.NullAware() {
				continue
			}
			switch h.JoinType() {
			case physical.JoinInner, physical.JoinLeft, physical.JoinLeftSemi, physical.JoinLeftAnti, physical.JoinRightSemi:
			default:
				continue
			}
			for k := range h.RightKeys() {
				f := traceDynamicFilter(g, h, k)
				if f == nil {
					continue
				}
				kk := key{f.Build, f.BuildColumn, f.Probe, f.Scan, f.Column}
				if seen[kk] {
					continue
				}
				seen[kk] = true
				f.ID = len(g.Filters) + 1
				g.Filters = append(g.Filters, f)
				builds[f.Build] = append(builds[f.Build], len(g.Filters)-1)
			}
		}
	}
	for _, s := range g.Stages {
		idx := builds[s.ID]
		if len(idx) == 0 {
			continue
		}
		ids, cols := make([]int, len(idx)), make([]int, len(idx))
		for i, fi := range idx {
			ids[i], cols[i] = g.Filters[fi].ID, g.Filters[fi].BuildColumn
		}
		body, err := physical.NewDynamicFilterBuild(s.Body, ids, cols)
		if err != nil {
			return fmt.Errorf("stage %d: %w", s.ID, err)
		}
		s.Body = body
	}
	return nil
}

// traceDynamicFilter returns the filter for join h's k-th key, or nil when
// it does not qualify.
func traceDynamicFilter(g *Graph, h *physical.HashJoin, k int) *DynamicFilter {
	pc, ok := h.RightKeys()[k].(*expr.Column)
	if !ok {
		return nil
	}
	probe, crossed := 0, true
	scan, col, ok := physical.TraceProbeColumn(h.Children()[1], pc.Index, func(u *physical.UnresolvedExchange) (physical.Operator, bool) {
		st := g.Stages[u.StageID-1]
		if st.Retained() {
			crossed = false
			return nil, false
		}
		probe = u.StageID
		return st.Body, true
	})
	if !ok || !crossed || probe == 0 {
		return nil
	}
	lc, ok := h.LeftKeys()[k].(*expr.Column)
	if !ok {
		return nil
	}
	u, bcol, ok := physical.TraceBuildColumn(h.Children()[0], lc.Index)
	if !ok || u.StageID >= probe {
		return nil
	}
	build := g.Stages[u.StageID-1]
	bt, pt := build.Body.Schema().Field(bcol).Type, scan.Schema().Field(col).Type
	if !physical.DynamicFilterType(bt) || !physical.DynamicFilterType(pt) || isString(bt) != isString(pt) {
		return nil
	}
	scans := physical.ParquetScans(g.Stages[probe-1].Body)
	at := slices.Index(scans, scan)
	if at < 0 || occurrences(g.Stages[probe-1].Body, scan) != 1 {
		return nil // the scan is read twice in its stage: both would be filtered
	}
	return &DynamicFilter{Build: build.ID, BuildColumn: bcol, Probe: probe, Scan: at, Column: col, ColumnName: scan.Schema().Field(col).Name}
}

func isString(t arrow.DataType) bool { return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING }

// occurrences counts how often op appears in the plan under root.
func occurrences(root, op physical.Operator) int {
	n := 0
	for _, o := range physical.PreOrder(root) {
		if o == op {
			n++
		}
	}
	return n
}

// filterHeader is what StageHeader adds for the dynamic filters the
// stage's scans receive.
func filterHeader(g *Graph, stage int) string {
	var fs []string
	for _, f := range g.Filters {
		if f.Probe == stage {
			fs = append(fs, fmt.Sprintf("#%d from stage %d on %s", f.ID, f.Build, f.ColumnName))
		}
	}
	if len(fs) == 0 {
		return ""
	}
	return " dynamic_filters=[" + strings.Join(fs, ", ") + "]"
}
