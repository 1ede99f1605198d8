// Package physical is sluice's per-task query engine: partitioned, pull-based
// operators over Arrow record batches, the task context they run in, and
// the codec that ships them to executors. Package physical/planner builds
// them from a logical plan; the subpackages hold what the operators build
// on (expressions, kernels, memory, spill files, Parquet decoding) and the
// operators that write files.
//
// # Operator contract
//
// An Operator is a plan node: plain data describing work (schema, children,
// partitioning) that can be serialized and shipped to an executor. Calling
// Execute(ctx, p, tc) creates the Stream that produces output partition p.
// Execute may be called once per partition, concurrently from different
// goroutines, and must not mutate the operator.
//
// A Stream is pulled with Next. Next returns the next non-empty batch, or
// (nil, io.EOF) at the end. The caller owns each returned batch and must
// Release it. Next honours ctx: an operator that blocks (waiting on a
// child, a channel, I/O) returns ctx.Err() promptly once ctx is done, and loops
// that do not call a child check ctx once per batch. A blocked operator is a
// parked goroutine, never a spinning one.
//
// Close releases everything the stream holds (buffered batches, memory
// reservations, goroutines it started — it waits for them) and closes its
// children's streams. Close is safe to call more than once and at any time,
// including before EOF (LIMIT stops pulling early) and after an error.
//
// Errors are wrapped with context (fmt.Errorf("...: %w", err)). Memory is
// accounted through the TaskContext's pool: stateful operators grow a
// mempool.Reservation and fail with mempool.ErrResourcesExhausted when it is refused.
package physical

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
)

// Operator is a physical plan node. See the package documentation.
type Operator interface {
	// Schema is the schema of every batch the operator produces.
	Schema() *arrow.Schema
	// Children are the operator's inputs.
	Children() []Operator
	// OutputPartitioning says how many partitions Execute serves and how rows
	// are spread across them.
	OutputPartitioning() Partitioning
	// Execute starts producing output partition `partition`.
	Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error)
	// String is a one-line description for EXPLAIN (children not included).
	String() string
}

// Stream produces one partition's batches. See the package documentation.
type Stream interface {
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close()
}

// PartitioningKind says how rows are spread across partitions.
type PartitioningKind int

// Partitioning kinds.
const (
	// PartUnknown: rows are spread in no particular way (e.g. file splits).
	PartUnknown PartitioningKind = iota
	// PartRoundRobin: rows were dealt out evenly.
	PartRoundRobin
	// PartHash: equal Keys always land in the same partition, by HashRows
	// scaled to Count (PartitionOf).
	PartHash
	// PartSingle: exactly one partition.
	PartSingle
)

// Partitioning describes an operator's output partitions.
type Partitioning struct {
	Kind  PartitioningKind
	Count int
	Keys  []expr.Expr // PartHash only
}

func (p Partitioning) String() string {
	switch p.Kind {
	case PartRoundRobin:
		return fmt.Sprintf("RoundRobin(%d)", p.Count)
	case PartHash:
		ks := make([]string, len(p.Keys))
		for i, k := range p.Keys {
			ks[i] = k.String()
		}
		return fmt.Sprintf("Hash([%s], %d)", strings.Join(ks, ", "), p.Count)
	case PartSingle:
		return "Single"
	}
	return fmt.Sprintf("Unknown(%d)", p.Count)
}

// SinglePartition is the partitioning of a one-partition operator.
var SinglePartition = Partitioning{Kind: PartSingle, Count: 1}

// DefaultBatchSize is the target number of rows per batch.
const DefaultBatchSize = 8192

// TaskContext carries what a task's operators share: the allocator, the
// task's memory pool and execution settings. It is not a place for
// per-operator state.
type TaskContext struct {
	// Alloc allocates every Arrow buffer the task creates.
	Alloc memory.Allocator
	// Memory is the task's memory pool; operators take reservations from it.
	Memory *mempool.Pool
	// BatchSize is the target rows per output batch.
	BatchSize int
	// Exchange gives exchange operators (stage readers and writers, package
	// exchange) the executor's services and the task's identity; it holds
	// an *exchange.TaskEnv on executors and is nil in a purely local run.
	Exchange any
	// SpillDir is where operators write what they hold when the pool
	// refuses them memory (spill.go); empty: they fail with the memory
	// error instead (pipelined tasks).
	SpillDir string
	// Analyzer, when set, measures the task's operators for EXPLAIN
	// ANALYZE (analyze.go); nil in every other run.
	Analyzer *Analyzer
	// Commit receives the files a write's WriteCommit decided on
	// (package datasource/write): the task's runner reports them, and they are
	// renamed once the job has succeeded. Nil where no write runs.
	Commit *CommitList
	// filters holds the runtime join filters of the task's operators
	// (runtime_filter.go); nil until one registers.
	filters atomic.Pointer[runtimeFilters]
	// dynamic holds the keys the task's DynamicFilterBuild collects
	// (dynamic_filter.go); nil until one runs.
	dynamic atomic.Pointer[dynamicFilterState]
	// sharedScans are the scans whose partitions the task runs together,
	// with those partitions (ShareScans, scan_share.go); set before the
	// task executes anything, read only after.
	sharedScans map[*ParquetScan][]int
}

// NewTaskContext returns a context with the Go allocator, an unlimited pool
// and the default batch size.
func NewTaskContext() *TaskContext {
	return &TaskContext{Alloc: memory.DefaultAllocator, Memory: mempool.NewPool("task", 0, nil), BatchSize: DefaultBatchSize}
}

// DefaultTargetPartitions is the partition count used when none is set.
func DefaultTargetPartitions() int { return runtime.NumCPU() }

// allPartitions returns 0, 1, ..., up to op's output partitions.
func allPartitions(op Operator) []int {
	parts := make([]int, op.OutputPartitioning().Count)
	for i := range parts {
		parts[i] = i
	}
	return parts
}
