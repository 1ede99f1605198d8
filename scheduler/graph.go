package scheduler

import (
	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical"
	"sluice/rpc"
)

// Exchanges builds the operators that cross stage boundaries. The real
// implementation wraps package exchange's constructors; the scheduler only
// needs to build them and hand them to Encode, so it does not depend on
// exchange (and tests can substitute recording fakes).
type Exchanges interface {
	// ShuffleWriter is a blocking stage's root: it writes input's
	// partitions to files split by p (PartUnknown: pass-through).
	ShuffleWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning) (physical.Operator, error)
	// ShuffleReader reads a finished stage: partitions[i] lists every file
	// making up output partition i.
	ShuffleReader(stageID int, schema *arrow.Schema, partitions [][]*rpc.PartitionLocation) (physical.Operator, error)
	// PipelinedWriter is a pipelined stage's root, streaming its output
	// through bounded queues (broadcast: retained for every consumer task).
	PipelinedWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning, broadcast bool, queueBatches int) (physical.Operator, error)
	// PipelinedReader streams a running stage: partitions[i] lists the
	// producer tasks holding a part of partition i.
	PipelinedReader(jobID string, stageID int, schema *arrow.Schema, partitions [][]*rpc.PipelinedProducer) (physical.Operator, error)
}

// Offer is free capacity on one executor, offered to graphs in turn. A
// graph that binds tasks there lowers Free.
type Offer struct {
	ExecutorID    string
	FlightAddress string
	Free          int
}

// Assignment is a task bound to an executor, ready to launch.
type Assignment struct {
	ExecutorID string
	Task       *rpc.TaskDefinition
}

// GraphState is where a job's execution stands.
type GraphState int

// Graph states.
const (
	// GraphRunning: work remains (including jobs with nothing placed yet).
	GraphRunning GraphState = iota
	// GraphSuccessful: the final stage's output is complete.
	GraphSuccessful
	// GraphFailed: the job cannot finish; Err says why.
	GraphFailed
	// GraphCancelled: Cancel was called.
	GraphCancelled
)

// ExecutionGraph is one job's scheduling state, one implementation per
// execution mode (blocking: stage by stage; pipelined: all tasks at once).
// The Scheduler owns placement policy (push or pull) and executor
// bookkeeping; a graph decides which tasks exist, where they may run and
// what their results mean.
//
// Implementations are not safe for concurrent use: the Scheduler calls them
// under its lock. None of the methods block or do I/O.
type ExecutionGraph interface {
	// JobID names the job.
	JobID() string
	// Offer binds runnable tasks to the offered capacity, lowering each
	// offer's Free by what it takes, and returns the tasks to launch. A
	// graph that cannot use an offer leaves it alone.
	Offer(offers []*Offer) []*Assignment
	// Reserved is how many vcores the job holds on an executor now.
	Reserved(executorID string) int
	// UpdateTask applies a task status reported by an executor. Reports
	// for tasks the graph no longer tracks (already re-run elsewhere,
	// cancelled) are ignored.
	UpdateTask(st *rpc.TaskStatus)
	// ExecutorLost tells the graph that an executor and everything on it
	// is gone.
	ExecutorLost(executorID string)
	// Cancel stops the job and returns the tasks still running, which the
	// caller cancels on their executors.
	Cancel() []*Assignment
	// State is the job's state and, when GraphFailed, why.
	State() (GraphState, error)
	// Progress counts stages and tasks.
	Progress() *rpc.JobProgress
	// FinalStageID is the stage whose output the client reads.
	FinalStageID() int
	// FinalLocations are the final stage's output files (blocking mode,
	// once successful), ordered by partition.
	FinalLocations() []*rpc.PartitionLocation
	// Executors lists every executor that ran a task of the job: where
	// its data has to be removed.
	Executors() []string
	// Describe renders the stages with their state and tasks, for
	// JobStatus.stages.
	Describe() string
}

// QueryError fails a job because of the query itself on its data (a
// division by zero, a value that does not cast), reported by the task that
// hit it. It is never retried. The client is shown Msg; Detail, where it
// happened, goes to the log.
type QueryError struct {
	Msg    string
	Detail string
}

// Error is the whole story, for logs.
func (e *QueryError) Error() string { return e.Detail }
