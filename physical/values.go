package physical

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// Values produces literal rows in a single partition. Each row's
// expressions are evaluated against a one-row batch with no columns.
type Values struct {
	schema *arrow.Schema
	rows   [][]expr.Expr
}

// NewValues returns a Values producing rows (each with one expression per
// schema field).
func NewValues(schema *arrow.Schema, rows [][]expr.Expr) *Values {
	return &Values{schema: schema, rows: rows}
}

// Schema implements Operator.
func (v *Values) Schema() *arrow.Schema { return v.schema }

// Children implements Operator.
func (v *Values) Children() []Operator { return nil }

// OutputPartitioning implements Operator.
func (v *Values) OutputPartitioning() Partitioning { return SinglePartition }

func (v *Values) String() string { return fmt.Sprintf("Values: %d rows", len(v.rows)) }

// Execute implements Operator.
func (v *Values) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition != 0 {
		return nil, fmt.Errorf("values: partition %d out of range", partition)
	}
	return &valuesStream{op: v, tc: tc}, nil
}

type valuesStream struct {
	op   *Values
	tc   *TaskContext
	done bool
}

func (s *valuesStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.done || len(s.op.rows) == 0 {
		return nil, io.EOF
	}
	s.done = true
	return s.build()
}

// build evaluates every row and concatenates the one-row results per column.
func (s *valuesStream) build() (arrow.RecordBatch, error) {
	mem := s.tc.Alloc
	fields := s.op.schema.Fields()
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	cells := make([][]arrow.Array, len(fields))
	defer func() {
		for _, c := range cells {
			kernels.ReleaseAll(c)
		}
	}()
	for r, row := range s.op.rows {
		if len(row) != len(fields) {
			return nil, fmt.Errorf("values: row %d has %d values, expected %d", r, len(row), len(fields))
		}
		for i, e := range row {
			a, err := e.Eval(one, mem)
			if err != nil {
				return nil, fmt.Errorf("values: row %d column %d: %w", r, i, err)
			}
			if !arrow.TypeEqual(a.DataType(), fields[i].Type) {
				if a.DataType().ID() != arrow.NULL {
					a.Release()
					return nil, fmt.Errorf("values: row %d column %d is %s, expected %s", r, i, a.DataType(), fields[i].Type)
				}
				a.Release()
				a = array.MakeArrayOfNull(mem, fields[i].Type, 1)
			}
			cells[i] = append(cells[i], a)
		}
	}
	cols := make([]arrow.Array, len(fields))
	defer kernels.ReleaseAll(cols)
	for i := range fields {
		c, err := array.Concatenate(cells[i], mem)
		if err != nil {
			return nil, fmt.Errorf("values: column %d: %w", i, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(s.op.schema, cols, int64(len(s.op.rows))), nil
}

func (s *valuesStream) Close() { s.done = true }
