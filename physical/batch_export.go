package physical

import (
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// The batch helpers other packages (the exchange writers) share with the
// operators here, so that a hash exchange splits rows exactly as
// Repartition does.

// BatchBytes is the memory a batch's columns reference, a slice counting
// its own rows' share of the buffers it shares (see kernels.BatchBytes).
func BatchBytes(b arrow.RecordBatch) int64 { return kernels.BatchBytes(b) }

// SelectRows returns b's rows at idx, ascending and distinct: b itself,
// retained, when idx selects every row, else a new batch.
func SelectRows(mem memory.Allocator, b arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	return kernels.SelectRows(mem, b, idx)
}

// ConcatBatches joins batches of schema into one; a single batch is
// returned retained rather than copied. The inputs stay the caller's.
func ConcatBatches(mem memory.Allocator, schema *arrow.Schema, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	return kernels.ConcatBatches(mem, schema, batches)
}

// HashPartition evaluates keys on b, hashes each row with HashRows and
// appends row indices to idx[PartitionOf(hash, len(idx))] (idx slices are
// reset first). hashes is scratch space, returned grown for reuse.
func HashPartition(keys []expr.Expr, b arrow.RecordBatch, mem memory.Allocator, hashes []uint64, idx [][]int32) ([]uint64, error) {
	cols, err := kernels.EvalAll(keys, b, mem)
	if err != nil {
		return hashes, fmt.Errorf("evaluating partition keys: %w", err)
	}
	rows := int(b.NumRows())
	if cap(hashes) < rows {
		hashes = make([]uint64, rows)
	}
	hashes = hashes[:rows]
	err = HashRows(cols, hashes)
	kernels.ReleaseAll(cols)
	if err != nil {
		return hashes, fmt.Errorf("hashing partition keys: %w", err)
	}
	for i := range idx {
		idx[i] = idx[i][:0]
	}
	for r, h := range hashes {
		d := PartitionOf(h, len(idx))
		idx[d] = append(idx[d], int32(r))
	}
	return hashes, nil
}

// PartitionOf is the partition of n a row hashing to h goes to: the high
// word of h×n, an even split over [0, n) from the hash's high bits. A
// modulo would cost a division per row and, for an even n, fix the low
// bits that the hash tables inside each partition index by (a join table
// taking h & mask would use half its buckets).
func PartitionOf(h uint64, n int) int {
	d, _ := bits.Mul64(h, uint64(n))
	return int(d)
}
