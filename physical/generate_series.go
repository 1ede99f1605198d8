package physical

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// GenerateSeries produces the rows of generate_series(start, stop, step) in
// a single partition, a batch at a time, so a long series never sits in
// memory whole. Its arguments are expressions without columns, evaluated
// once when the stream starts; a NULL argument gives no rows, as in
// PostgreSQL. The column is INT or BIGINT (integer step) or TIMESTAMP
// (INTERVAL step).
type GenerateSeries struct {
	schema            *arrow.Schema
	start, stop, step expr.Expr
}

var _ Operator = (*GenerateSeries)(nil)

// NewGenerateSeries returns the operator; schema has the one output column.
func NewGenerateSeries(schema *arrow.Schema, start, stop, step expr.Expr) (*GenerateSeries, error) {
	if schema.NumFields() != 1 {
		return nil, fmt.Errorf("generate_series: %d output columns, want 1", schema.NumFields())
	}
	out := schema.Field(0).Type
	for _, a := range []expr.Expr{start, stop} {
		if !arrow.TypeEqual(a.DataType(), out) && a.DataType().ID() != arrow.NULL {
			return nil, fmt.Errorf("generate_series: bound of type %s for a %s series", plan.TypeName(a.DataType()), plan.TypeName(out))
		}
	}
	switch out.ID() {
	case arrow.INT32, arrow.INT64:
		if !arrow.TypeEqual(step.DataType(), out) && step.DataType().ID() != arrow.NULL {
			return nil, fmt.Errorf("generate_series: step of type %s for a %s series", plan.TypeName(step.DataType()), plan.TypeName(out))
		}
	case arrow.TIMESTAMP:
		if step.DataType().ID() != arrow.INTERVAL_MONTH_DAY_NANO && step.DataType().ID() != arrow.NULL {
			return nil, fmt.Errorf("generate_series: a TIMESTAMP series needs an INTERVAL step, not %s", plan.TypeName(step.DataType()))
		}
	default:
		return nil, fmt.Errorf("generate_series: cannot generate a series of %s", plan.TypeName(out))
	}
	return &GenerateSeries{schema: schema, start: start, stop: stop, step: step}, nil
}

// Args returns the start, stop and step expressions.
func (g *GenerateSeries) Args() (start, stop, step expr.Expr) { return g.start, g.stop, g.step }

// Schema implements Operator.
func (g *GenerateSeries) Schema() *arrow.Schema { return g.schema }

// Children implements Operator.
func (g *GenerateSeries) Children() []Operator { return nil }

// OutputPartitioning implements Operator.
func (g *GenerateSeries) OutputPartitioning() Partitioning { return SinglePartition }

func (g *GenerateSeries) String() string {
	return fmt.Sprintf("GenerateSeries: %s, %s, %s", g.start, g.stop, g.step)
}

var errZeroStep = expr.NewDataError("step size cannot equal zero in generate_series")

// Execute implements Operator.
func (g *GenerateSeries) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition != 0 {
		return nil, fmt.Errorf("generate_series: partition %d out of range", partition)
	}
	s := &seriesStream{op: g, tc: tc, batch: max(1, tc.BatchSize)}
	vals, err := g.evalArgs(tc.Alloc)
	if err != nil {
		return nil, err
	}
	if vals == nil {
		s.done = true
		return s, nil
	}
	s.cur, s.stop = vals[0].(int64), vals[1].(int64)
	switch step := vals[2].(type) {
	case int64:
		if step == 0 {
			return nil, errZeroStep
		}
		s.step = step
		s.up = step > 0
	case arrow.MonthDayNanoInterval:
		// The direction is that of the interval's span, months counting
		// 30 days as PostgreSQL's interval comparison does.
		span := (int64(step.Months)*30+int64(step.Days))*plan.MicrosPerDay + step.Nanoseconds/1000
		if span == 0 {
			return nil, errZeroStep
		}
		s.interval, s.isInterval = step, true
		s.up = span > 0
	}
	return s, nil
}

// evalArgs evaluates start, stop and step on a one-row batch: int64 for
// integers and timestamps, the interval for an interval step; nil when any
// is NULL.
func (g *GenerateSeries) evalArgs(mem memory.Allocator) ([]any, error) {
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	out := make([]any, 3)
	for i, e := range []expr.Expr{g.start, g.stop, g.step} {
		a, err := e.Eval(one, mem)
		if err != nil {
			return nil, fmt.Errorf("generate_series: %w", err)
		}
		if a.IsNull(0) {
			a.Release()
			return nil, nil
		}
		switch x := a.(type) {
		case *array.Int32:
			out[i] = int64(x.Value(0))
		case *array.Int64:
			out[i] = x.Value(0)
		case *array.Timestamp:
			out[i] = int64(x.Value(0))
		case *array.MonthDayNanoInterval:
			out[i] = x.Value(0)
		default:
			a.Release()
			return nil, fmt.Errorf("generate_series: unexpected argument of type %s", plan.TypeName(a.DataType()))
		}
		a.Release()
	}
	return out, nil
}

type seriesStream struct {
	op         *GenerateSeries
	tc         *TaskContext
	batch      int
	cur, stop  int64
	step       int64
	interval   arrow.MonthDayNanoInterval
	isInterval bool
	up         bool
	done       bool
}

// Next implements Stream.
func (s *seriesStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.done {
		return nil, io.EOF
	}
	vals := make([]int64, 0, s.batch)
	for len(vals) < s.batch {
		if (s.up && s.cur > s.stop) || (!s.up && s.cur < s.stop) {
			s.done = true
			break
		}
		vals = append(vals, s.cur)
		if err := s.advance(); err != nil {
			return nil, err
		}
		if s.done {
			break
		}
	}
	if len(vals) == 0 {
		return nil, io.EOF
	}
	return s.build(vals), nil
}

// advance moves to the next value; the series ends where that would
// overflow.
func (s *seriesStream) advance() error {
	if !s.isInterval {
		next := s.cur + s.step
		if (s.step > 0) != (next > s.cur) {
			s.done = true
			return nil
		}
		s.cur = next
		return nil
	}
	next, ok := expr.AddInterval(s.cur, s.interval)
	if !ok {
		return expr.NewDataError(fmt.Sprintf("timestamp out of range in generate_series after %s",
			arrow.Timestamp(s.cur).ToTime(arrow.Microsecond).Format("2006-01-02 15:04:05")))
	}
	if (s.up && next <= s.cur) || (!s.up && next >= s.cur) {
		return expr.NewDataError(fmt.Sprintf("generate_series: step %s does not move from %s", plan.AppendIntervalText(nil, s.interval),
			arrow.Timestamp(s.cur).ToTime(arrow.Microsecond).Format("2006-01-02 15:04:05")))
	}
	s.cur = next
	return nil
}

func (s *seriesStream) build(vals []int64) arrow.RecordBatch {
	dt := s.op.schema.Field(0).Type
	b := array.NewBuilder(s.tc.Alloc, dt)
	defer b.Release()
	b.Reserve(len(vals))
	switch bb := b.(type) {
	case *array.Int32Builder:
		for _, v := range vals {
			bb.UnsafeAppend(int32(v))
		}
	case *array.Int64Builder:
		for _, v := range vals {
			bb.UnsafeAppend(v)
		}
	case *array.TimestampBuilder:
		for _, v := range vals {
			bb.UnsafeAppend(arrow.Timestamp(v))
		}
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(s.op.schema, []arrow.Array{col}, int64(len(vals)))
}

// Close implements Stream.
func (s *seriesStream) Close() { s.done = true }
