package physical

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// Projection computes one output column per expression.
type Projection struct {
	input  Operator
	exprs  []expr.Expr
	names  []string
	schema *arrow.Schema
}

// NewProjection returns a Projection of input computing exprs, named names
// (every output field is nullable).
func NewProjection(input Operator, exprs []expr.Expr, names []string) *Projection {
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		fields[i] = arrow.Field{Name: names[i], Type: e.DataType(), Nullable: true}
	}
	return &Projection{input: input, exprs: exprs, names: names, schema: arrow.NewSchema(fields, nil)}
}

// Exprs are the projected expressions.
func (p *Projection) Exprs() []expr.Expr { return p.exprs }

// Schema implements Operator.
func (p *Projection) Schema() *arrow.Schema { return p.schema }

// Children implements Operator.
func (p *Projection) Children() []Operator { return []Operator{p.input} }

// OutputPartitioning implements Operator. Hash keys refer to input columns,
// which need not survive the projection, so hash partitioning is reported
// as unknown (with the same count) unless every key is a projected column.
func (p *Projection) OutputPartitioning() Partitioning {
	in := p.input.OutputPartitioning()
	if in.Kind != PartHash {
		if out, ok := coalescedFullJoinKeys(p.input, p.exprs, p.names); ok {
			return out
		}
		return in
	}
	return hashThroughEqual(in, p.exprs, p.names, equalColumns(p.input))
}

// coalescedFullJoinKeys is the hash partitioning of a projection over a
// partitioned full join whose output merges each pair of key columns the
// two sides are hashed on into one (coalesce(l, r), or CASE WHEN l IS NOT
// NULL THEN l ELSE r END, either way round): TPC-DS q51 full-joins two
// windows' outputs on item and day and windows the merged item. Partition p of the
// join holds the rows of both sides whose keys hash to p; a matched row
// has equal keys on both sides, an unmatched one NULLs on the other side,
// so the merged key is the key the row was hashed on (NULL for a NULL
// key, which matches nothing). The join's own output claims no hash (a
// key column of either side alone holds NULLs the row was not hashed
// on). ok is false when the projection keeps no such merge of every key.
func coalescedFullJoinKeys(input Operator, exprs []expr.Expr, names []string) (Partitioning, bool) {
	h, ok := input.(*HashJoin)
	if !ok || h.joinType != JoinFull || h.mode != JoinPartitioned {
		return Partitioning{}, false
	}
	lp, rp := h.left.OutputPartitioning(), h.right.OutputPartitioning()
	if lp.Kind != PartHash || rp.Kind != PartHash || len(lp.Keys) != len(rp.Keys) || len(lp.Keys) == 0 || lp.Count != rp.Count {
		return Partitioning{}, false
	}
	nl := len(h.left.Schema().Fields())
	pairs := h.keyColumnPairs() // rows hashed alike on a pair meet
	keys := make([]expr.Expr, len(lp.Keys))
	for i := range lp.Keys {
		l, ok1 := lp.Keys[i].(*expr.Column)
		r, ok2 := rp.Keys[i].(*expr.Column)
		if !ok1 || !ok2 || !arrow.TypeEqual(l.Type, r.Type) || !slices.Contains(pairs, [2]int{l.Index, nl + r.Index}) {
			return Partitioning{}, false
		}
		j := slices.IndexFunc(exprs, func(e expr.Expr) bool { return mergesColumns(e, l.Index, nl+r.Index, l.Type) })
		if j < 0 {
			return Partitioning{}, false
		}
		keys[i] = &expr.Column{Index: j, Name: names[j], Type: l.Type}
	}
	return Partitioning{Kind: PartHash, Count: lp.Count, Keys: keys}, true
}

// mergesColumns reports whether e is coalesce(a, b) or CASE WHEN a IS
// NOT NULL THEN a ELSE b END (or either with a and b swapped), over
// columns of type t.
func mergesColumns(e expr.Expr, a, b int, t arrow.DataType) bool {
	is := func(e expr.Expr, i int) bool {
		c, ok := e.(*expr.Column)
		return ok && c.Index == i && arrow.TypeEqual(c.Type, t)
	}
	pair := func(x, y expr.Expr) bool { return (is(x, a) && is(y, b)) || (is(x, b) && is(y, a)) }
	switch e := e.(type) {
	case *expr.Coalesce:
		return len(e.Args) == 2 && pair(e.Args[0], e.Args[1]) && arrow.TypeEqual(e.Type, t)
	case *expr.Case:
		if len(e.Whens) != 1 || e.Else == nil || !arrow.TypeEqual(e.Type, t) {
			return false
		}
		cond, ok := e.Whens[0].Cond.(*expr.IsNull)
		return ok && cond.Negated && pair(e.Whens[0].Then, e.Else) && sameColumn(cond.X, e.Whens[0].Then)
	}
	return false
}

// sameColumn reports whether x and y are the same input column.
func sameColumn(x, y expr.Expr) bool {
	a, ok1 := x.(*expr.Column)
	b, ok2 := y.(*expr.Column)
	return ok1 && ok2 && a.Index == b.Index
}

// hashThrough maps hash partitioning in, over an operator's input, to its
// output whose column j is exprs[j] named names[j]: each hash key must be
// an input column some exprs[j] passes through unchanged, else the output
// is partitioned in an unknown way (with the same count).
func hashThrough(in Partitioning, exprs []expr.Expr, names []string) Partitioning {
	return hashThroughEqual(in, exprs, names, nil)
}

// hashThroughEqual is hashThrough where a hash key the output does not
// pass through may be replaced by an input column that equals it in
// every row (pairs in equal, see equalColumns): rows hash the same
// either way.
func hashThroughEqual(in Partitioning, exprs []expr.Expr, names []string, equal [][2]int) Partitioning {
	keys := make([]expr.Expr, len(in.Keys))
	for i, k := range in.Keys {
		kc, ok := k.(*expr.Column)
		if !ok {
			return Partitioning{Kind: PartUnknown, Count: in.Count}
		}
		candidates := []int{kc.Index}
		for _, e := range equal {
			switch kc.Index {
			case e[0]:
				candidates = append(candidates, e[1])
			case e[1]:
				candidates = append(candidates, e[0])
			}
		}
		found := false
		for _, want := range candidates {
			for j, e := range exprs {
				if c, ok := e.(*expr.Column); ok && c.Index == want && arrow.TypeEqual(c.Type, kc.Type) {
					keys[i] = &expr.Column{Index: j, Name: names[j], Type: c.Type}
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return Partitioning{Kind: PartUnknown, Count: in.Count}
		}
	}
	return Partitioning{Kind: PartHash, Count: in.Count, Keys: keys}
}

func (p *Projection) String() string {
	parts := make([]string, len(p.exprs))
	for i, e := range p.exprs {
		if c, ok := e.(*expr.Column); ok && c.Name == p.names[i] {
			parts[i] = e.String()
		} else {
			parts[i] = fmt.Sprintf("%s AS %s", e, p.names[i])
		}
	}
	return "Projection: " + strings.Join(parts, ", ")
}

// Execute implements Operator.
func (p *Projection) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	in, err := ExecuteOp(ctx, p.input, partition, tc)
	if err != nil {
		return nil, err
	}
	return &projectionStream{op: p, in: in, tc: tc}, nil
}

type projectionStream struct {
	op *Projection
	in Stream
	tc *TaskContext
}

func (s *projectionStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := s.in.Next(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Release()
	checkFailpoint(FailpointProjection)
	cols, err := kernels.EvalAll(s.op.exprs, b, s.tc.Alloc)
	if err != nil {
		return nil, fmt.Errorf("projection: %w", err)
	}
	defer kernels.ReleaseAll(cols)
	for i, c := range cols {
		if want := s.op.schema.Field(i).Type; !arrow.TypeEqual(c.DataType(), want) {
			if c.DataType().ID() != arrow.NULL {
				return nil, fmt.Errorf("projection: %s evaluated to %s, expected %s", s.op.exprs[i], c.DataType(), want)
			}
			// An untyped NULL result for a typed column: all values NULL.
			c.Release()
			cols[i] = array.MakeArrayOfNull(s.tc.Alloc, want, int(b.NumRows()))
		}
	}
	return array.NewRecordBatch(s.op.schema, cols, b.NumRows()), nil
}

func (s *projectionStream) Close() {
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
}
