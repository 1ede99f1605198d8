package dplan_test

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical"
	"sluice/physical/expr"
	"sluice/scheduler/dplan"
)

func TestInputPartitions(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	key := []expr.Expr{&expr.Column{Index: 0, Name: "k", Type: arrow.PrimitiveTypes.Int64}}
	stage := func(id, n int) physical.Operator {
		return physical.NewUnresolvedExchange(id, schema, physical.Partitioning{Kind: physical.PartUnknown, Count: n})
	}
	must := func(op physical.Operator, err error) physical.Operator {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	for _, c := range []struct {
		name  string
		body  physical.Operator
		parts []int
		want  map[int][]int
	}{
		{"pass-through", physical.NewFilter(stage(1, 4), nil), []int{1, 3}, map[int][]int{1: {1, 3}}},
		{
			"partitioned join reads both sides' own partitions",
			must(physical.NewHashJoin(stage(1, 4), stage(2, 4), physical.JoinInner, key, key, nil, false, physical.JoinPartitioned)),
			[]int{2}, map[int][]int{1: {2}, 2: {2}},
		},
		{
			"collect-left join reads its whole build side",
			must(physical.NewHashJoin(stage(1, 3), stage(2, 4), physical.JoinInner, key, key, nil, false, physical.JoinCollectLeft)),
			[]int{0, 1}, map[int][]int{1: {0, 1, 2}, 2: {0, 1}},
		},
		{
			"nested loop join reads its whole build side",
			must(physical.NewNestedLoopJoin(stage(1, 2), stage(2, 4), physical.JoinInner, nil)),
			[]int{3}, map[int][]int{1: {0, 1}, 2: {3}},
		},
		{"coalesce reads everything", physical.NewCoalescePartitions(stage(1, 3)), []int{0}, map[int][]int{1: {0, 1, 2}}},
		{"merge reads everything", physical.NewSortPreservingMerge(stage(1, 3), nil, 0), []int{0}, map[int][]int{1: {0, 1, 2}}},
		{"union", physical.NewUnion([]physical.Operator{stage(1, 2), stage(2, 3)}), []int{1, 2}, map[int][]int{1: {1}, 2: {0}}},
		{
			"folded union",
			physical.NewFoldedUnion([]physical.Operator{stage(1, 2), stage(2, 3)}, 2),
			[]int{1}, map[int][]int{1: {1}, 2: {1}},
		},
		{
			"one stage read twice",
			physical.NewUnion([]physical.Operator{stage(1, 2), physical.NewCoalescePartitions(stage(1, 2))}),
			[]int{0}, map[int][]int{1: {0}},
		},
		{"no partitions", physical.NewFilter(stage(1, 4), nil), nil, map[int][]int{1: {}}},
	} {
		got, err := dplan.InputPartitions(c.body, c.parts)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// opaque is an operator InputPartitions does not know.
type opaque struct{ physical.Operator }

func (o opaque) Children() []physical.Operator { return []physical.Operator{o.Operator} }

func TestInputPartitionsRefusesUnknownOperators(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	in := physical.NewUnresolvedExchange(1, schema, physical.Partitioning{Kind: physical.PartUnknown, Count: 2})
	if got, err := dplan.InputPartitions(opaque{in}, []int{0}); err == nil {
		t.Errorf("an unknown operator was mapped: %v", got)
	}
}
