// Package dplan is the distributed planner: it cuts a physical plan into
// stages at exchange points, as Apache Ballista's DefaultDistributedPlanner
// does. The result is mode-neutral: each execution graph (blocking,
// pipelined) wraps stage bodies in its own writer and resolves the
// consumers' placeholders with its own reader.
package dplan

import "sluice/physical"

// Stage is one stage of a job.
type Stage struct {
	// ID is unique within the job; producers have smaller IDs than their
	// consumers.
	ID int
	// Body is the stage's plan below its writer. Its leaves are scans or
	// *physical.UnresolvedExchange placeholders for input stages.
	Body physical.Operator
	// Output says how the writer splits the body's output: PartHash (keys
	// evaluated on the body's schema, Count output partitions), or
	// PartUnknown for pass-through (output partition i = body partition i,
	// Count = the body's partition count).
	Output physical.Partitioning
	// Inputs are the IDs of the stages this stage reads.
	Inputs []int
	// Broadcast: the output is a collect-left join's build side; every
	// consumer task reads all of it.
	Broadcast bool
	// Shared: the plan had this stage's computation more than once and
	// the copies were merged into this stage, so more than one exchange
	// reads its output (each reading every partition it needs once). A
	// pipelined writer keeps the output for every reader to replay.
	Shared bool
	// Estimated says the physical planner guessed the size of the stage's
	// output: about EstRows rows of EstBytes bytes (see
	// physplanner.Estimates). Blocking mode shows the guess beside the exact
	// figures its shuffle files report.
	Estimated bool
	EstRows   float64
	EstBytes  float64
	// RunPartitions, when not zero, is how many partitions the stage
	// runs instead of its body's: a blocking job's adaptive execution
	// coalesced its input partitions.
	RunPartitions int
}

// Retained reports whether a pipelined writer must keep the stage's output
// for more than one reader of each partition.
func (s *Stage) Retained() bool { return s.Broadcast || s.Shared }

// Partitions is the number of partitions the stage runs: the body's,
// unless adaptive execution chose another (RunPartitions).
func (s *Stage) Partitions() int {
	if s.RunPartitions > 0 {
		return s.RunPartitions
	}
	return s.Body.OutputPartitioning().Count
}

// Graph is a job's stages in dependency order (producers first); the last
// stage is the final stage, whose output the client reads.
type Graph struct {
	Stages []*Stage
	// Filters are the job's cross-stage dynamic filters
	// (AddDynamicFilters); none unless they were added.
	Filters []*DynamicFilter
}

// Final returns the final stage.
func (g *Graph) Final() *Stage { return g.Stages[len(g.Stages)-1] }
