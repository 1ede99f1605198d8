package physical

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/mempool"
)

// Cross-stage dynamic filters. When a hash join's build side and the scan
// its probe keys come from run in different stages (the probe side crosses
// a repartition), the join cannot hand the scan a runtime filter through
// their task context (runtime_filter.go). Instead the stage whose output
// is the join's build side ends in a DynamicFilterBuild, which collects the
// key column's values while it passes the rows on; each task reports its
// keys, the scheduler merges every task's into one set (the union: a probe
// row may meet any build partition) and gives it to the tasks of the probe
// scan's stage, whose scans then drop rows whose key is not in it, as they
// do for a runtime filter (scheduler/dplan/dynamic_filters.go decides
// which joins and scans qualify). A filter that comes late filters less;
// one that never comes filters nothing.

// DynamicFilterBuild passes its input through unchanged and collects the
// values of its key columns, one set per dynamic filter, over all the
// partitions its task runs.
type DynamicFilterBuild struct {
	input Operator
	ids   []int // filter IDs, unique within the job
	cols  []int // the input column each filter's keys are in
}

var _ Operator = (*DynamicFilterBuild)(nil)

// NewDynamicFilterBuild collects, for each filter ids[i], the keys of input
// column cols[i], which must be an integer or string column.
func NewDynamicFilterBuild(input Operator, ids, cols []int) (*DynamicFilterBuild, error) {
	if len(ids) != len(cols) || len(ids) == 0 {
		return nil, fmt.Errorf("dynamic filter build: %d filter ids for %d columns", len(ids), len(cols))
	}
	for _, c := range cols {
		if c < 0 || c >= input.Schema().NumFields() {
			return nil, fmt.Errorf("dynamic filter build: column %d of %d", c, input.Schema().NumFields())
		}
		if !DynamicFilterType(input.Schema().Field(c).Type) {
			return nil, fmt.Errorf("dynamic filter build: column %s of type %s cannot be a filter's key", input.Schema().Field(c).Name, input.Schema().Field(c).Type)
		}
	}
	return &DynamicFilterBuild{input: input, ids: ids, cols: cols}, nil
}

// DynamicFilterType reports whether keys of type t can be collected and
// filtered on: integers (exactly, while their range is narrow) and strings.
func DynamicFilterType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT32, arrow.INT64, arrow.STRING, arrow.LARGE_STRING:
		return true
	}
	return false
}

// Filters returns the filter IDs and their key columns.
func (d *DynamicFilterBuild) Filters() (ids, cols []int) { return d.ids, d.cols }

// Input is the operator whose rows are passed through.
func (d *DynamicFilterBuild) Input() Operator { return d.input }

// Schema implements Operator.
func (d *DynamicFilterBuild) Schema() *arrow.Schema { return d.input.Schema() }

// Children implements Operator.
func (d *DynamicFilterBuild) Children() []Operator { return []Operator{d.input} }

// OutputPartitioning implements Operator.
func (d *DynamicFilterBuild) OutputPartitioning() Partitioning { return d.input.OutputPartitioning() }

func (d *DynamicFilterBuild) String() string {
	fs := make([]string, len(d.ids))
	for i, id := range d.ids {
		fs[i] = fmt.Sprintf("#%d on %s", id, d.input.Schema().Field(d.cols[i]).Name)
	}
	return "DynamicFilterBuild: filters=[" + strings.Join(fs, ", ") + "]"
}

// Execute implements Operator.
func (d *DynamicFilterBuild) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	in, err := ExecuteOp(ctx, d.input, partition, tc)
	if err != nil {
		return nil, err
	}
	st := tc.dynamicFilters()
	builders := make([]*keyBuilder, len(d.ids))
	for i, id := range d.ids {
		builders[i] = st.builder(id, isStringType(d.input.Schema().Field(d.cols[i]).Type), func() *mempool.Reservation {
			return tc.NewReservation(ctx, "DynamicFilterBuild")
		})
	}
	st.started(1)
	return &dynamicFilterBuildStream{in: in, d: d, builders: builders, st: st}, nil
}

func isStringType(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

type dynamicFilterBuildStream struct {
	in       Stream
	d        *DynamicFilterBuild
	builders []*keyBuilder
	st       *dynamicFilterState
	ended    bool
}

func (s *dynamicFilterBuildStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := s.in.Next(ctx)
	if err == io.EOF && !s.ended {
		s.ended = true
		s.st.ended(1)
	}
	if err != nil {
		return nil, err
	}
	for i, bl := range s.builders {
		bl.add(b.Column(s.d.cols[i]))
	}
	return b, nil
}

func (s *dynamicFilterBuildStream) Close() { s.in.Close() }

// dynamicFilterState is a task's side of its dynamic filters: the keys its
// DynamicFilterBuild collects, and the filters its scans wait for.
type dynamicFilterState struct {
	mu       sync.Mutex
	builders map[int]*keyBuilder
	starts   int // partitions of DynamicFilterBuild executed
	ends     int // ... and read to their end
}

func (tc *TaskContext) dynamicFilters() *dynamicFilterState {
	if s := tc.dynamic.Load(); s != nil {
		return s
	}
	tc.dynamic.CompareAndSwap(nil, &dynamicFilterState{builders: map[int]*keyBuilder{}})
	return tc.dynamic.Load()
}

// builder returns the task's builder of filter id, creating it (with a
// reservation from res) on the first call. Its memory stays reserved until
// the task ends: the task reports the keys at its end.
func (s *dynamicFilterState) builder(id int, strings bool, res func() *mempool.Reservation) *keyBuilder {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.builders[id]
	if b == nil {
		b = &keyBuilder{strings: strings, res: res()}
		s.builders[id] = b
	}
	return b
}

func (s *dynamicFilterState) started(n int) { s.mu.Lock(); s.starts += n; s.mu.Unlock() }
func (s *dynamicFilterState) ended(n int)   { s.mu.Lock(); s.ends += n; s.mu.Unlock() }

// DynamicFilterKeys returns the keys the task's DynamicFilterBuild
// collected, by filter ID, once every partition it executed was read to
// its end (nil before, or when there is none: a task cut short knows only
// some of its keys). A filter whose keys could not be collected is
// missing.
func (tc *TaskContext) DynamicFilterKeys() map[int]*KeySet {
	s := tc.dynamic.Load()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starts == 0 || s.ends != s.starts {
		return nil
	}
	out := map[int]*KeySet{}
	for id, b := range s.builders {
		if k := b.keys(); k != nil {
			out[id] = k
		}
	}
	return out
}

// ParquetScans lists the Parquet scans of the plan under root in
// pre-order: the scheduler names a dynamic filter's scan by its position
// here, and the task finds it again in its decoded stage plan.
func ParquetScans(root Operator) []*ParquetScan {
	var out []*ParquetScan
	seen := map[*ParquetScan]bool{}
	for _, op := range PreOrder(root) {
		if s, ok := op.(*ParquetScan); ok && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// ExpectDynamicFilter makes scan apply dynamic filter id on its output
// column col once the filter is published (PublishDynamicFilter): to every
// batch read after, and to the row groups it has not started. Call it
// before the task executes the scan.
func (tc *TaskContext) ExpectDynamicFilter(scan *ParquetScan, col, id int) error {
	if col < 0 || col >= scan.Schema().NumFields() {
		return fmt.Errorf("dynamic filter %d: column %d of the scan of %s, which has %d", id, col, scan.name, scan.Schema().NumFields())
	}
	if !DynamicFilterType(scan.Schema().Field(col).Type) {
		return fmt.Errorf("dynamic filter %d: column %s of type %s", id, scan.Schema().Field(col).Name, scan.Schema().Field(col).Type)
	}
	var m *opMetrics
	if tc.Analyzer != nil {
		m = tc.Analyzer.metricsOf(scan)
	}
	r := tc.runtimeFilters()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byScan == nil {
		r.byJoin, r.byScan = map[joinKeyRef]*runtimeFilter{}, map[*ParquetScan][]*runtimeFilter{}
	}
	if r.byID == nil {
		r.byID = map[int][]*runtimeFilter{}
	}
	f := &runtimeFilter{col: col, dynamic: true, strings: isStringType(scan.Schema().Field(col).Type), m: m}
	r.byScan[scan] = append(r.byScan[scan], f)
	r.byID[id] = append(r.byID[id], f)
	if m != nil {
		m.dynExpected.Add(1)
	}
	return nil
}

// PublishDynamicFilter hands the task's scans waiting for filter id its
// keys; nil keys end the wait without filtering (the filter is not coming).
// Rows the scans read before are not filtered. Publishing twice changes
// nothing. It reports whether a scan of the task waited for the filter.
func (tc *TaskContext) PublishDynamicFilter(id int, keys *KeySet) bool {
	r := tc.filters.Load()
	if r == nil {
		return false
	}
	r.mu.Lock()
	fs := r.byID[id]
	r.mu.Unlock()
	for _, f := range fs {
		if f.published.Load() {
			continue
		}
		if keys != nil && keys.strings == f.strings {
			f.dyn.Store(keys)
			if f.m != nil {
				f.m.dynReceived.Add(1)
			}
		}
		f.published.Store(true)
	}
	return len(fs) > 0
}
