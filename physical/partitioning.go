package physical

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/expr"
)

// What a hash partitioning guarantees, which the planners ask before they
// add a Repartition.

// HashedWithin reports whether a hash partitioning puts all rows equal on
// keys in one partition: it hashes on input columns that are all among
// keys (rows equal on keys are equal on those columns too).
func HashedWithin(in Partitioning, keys []expr.Expr) bool {
	if in.Kind != PartHash || len(in.Keys) == 0 {
		return false
	}
	for _, k := range in.Keys {
		kc, ok := k.(*expr.Column)
		if !ok || !slices.ContainsFunc(keys, func(e expr.Expr) bool {
			c, ok := e.(*expr.Column)
			return ok && c.Index == kc.Index
		}) {
			return false
		}
	}
	return true
}

// CoPartitioned reports whether a hash join's two sides already put rows
// with equal keys in the same partition: both are hash partitioned into
// count partitions on columns of the same types that are join keys at the
// same positions, in the same order (a subset of the keys will do: rows
// equal on all keys are equal on those).
func CoPartitioned(bl, pr Operator, buildKeys, probeKeys []expr.Expr, count int) bool {
	bo, po := bl.OutputPartitioning(), pr.OutputPartitioning()
	if bo.Kind != PartHash || po.Kind != PartHash || bo.Count != count || po.Count != count ||
		len(bo.Keys) == 0 || len(bo.Keys) != len(po.Keys) {
		return false
	}
	for i := range bo.Keys {
		b, ok1 := bo.Keys[i].(*expr.Column)
		q, ok2 := po.Keys[i].(*expr.Column)
		if !ok1 || !ok2 || !arrow.TypeEqual(b.Type, q.Type) {
			return false
		}
		paired := false
		for j := range buildKeys {
			bk, ok1 := buildKeys[j].(*expr.Column)
			pk, ok2 := probeKeys[j].(*expr.Column)
			if ok1 && ok2 && bk.Index == b.Index && pk.Index == q.Index {
				paired = true
				break
			}
		}
		if !paired {
			return false
		}
	}
	return true
}

// HashPartitioned returns op hash partitioned on keys into count
// partitions: op itself when it already is (an aggregate grouped by the
// same keys, TPC-DS q97's two sides of a full join), else a Repartition.
// Equal keys then meet in the same partition on both sides of a join,
// because every hash partitioning hashes the same way.
func HashPartitioned(op Operator, keys []expr.Expr, count int) Operator {
	if out := op.OutputPartitioning(); out.Kind == PartHash && out.Count == count && len(out.Keys) == len(keys) {
		same := true
		for i, k := range keys {
			a, ok1 := k.(*expr.Column)
			b, ok2 := out.Keys[i].(*expr.Column)
			if !ok1 || !ok2 || a.Index != b.Index || !arrow.TypeEqual(a.Type, b.Type) {
				same = false
				break
			}
		}
		if same {
			return op
		}
	}
	return NewRepartition(op, Partitioning{Kind: PartHash, Count: count, Keys: keys})
}
