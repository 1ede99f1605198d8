// Package exchange holds the operators that cross stage boundaries and the
// executor-side services they use:
//
//   - blocking mode: ShuffleWriter (a stage root writing each output
//     partition to Arrow IPC files under the executor's work dir) and
//     ShuffleReader (reads a finished stage's files, locally or over Arrow
//     Flight);
//   - pipelined mode: PipelinedWriter (a stage root routing batches into
//     bounded per-partition queues in the executor's Registry) and
//     PipelinedReader (drains every producer's queue: over Flight, or
//     from the Registry when the producer runs on the same executor);
//   - the Flight service serving FetchPartition and FetchPipelinedPartition
//     tickets and multiplexed pipelined reads (DoExchange, one stream per
//     consumer and producer task, exchange.multiplex), and a pool of
//     Flight clients;
//   - Codec, which converts the four operators to and from rpc messages.
//
// A consumer stage holds a physical.UnresolvedExchange until the execution
// graph knows its producers and swaps in a reader.
package exchange

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"sluice/physical"
	"sluice/rpc"
)

// Env is what an executor offers exchange operators. One Env per executor
// process (or per client, with no WorkDir and no Registry).
type Env struct {
	// ExecutorID identifies this executor ("" for a client).
	ExecutorID string
	// FlightAddress is where this executor's Flight service listens.
	FlightAddress string
	// WorkDir holds shuffle files: <WorkDir>/<job>/<stage>/data-...
	WorkDir string
	// RemoveLater deletes a removed job's directory, which
	// FlightService.RemoveJob has already renamed out of the job's way, in
	// the background; nil: at once, before RemoveJob returns.
	RemoveLater func(dir string)
	// Registry holds pipelined queues (nil on clients).
	Registry *Registry
	// Clients dials and caches Flight clients by address.
	Clients *ClientPool
	// Held keeps the outputs of the executor's blocking tasks in memory
	// up to its budget (held.go; nil: every output is a file).
	Held *HeldOutputs
	// MaxFetchBytes caps the bytes a ShuffleReader stream has in flight at
	// once (0: DefaultMaxFetchBytes).
	MaxFetchBytes int64
	// ProducerWait bounds how long a pipelined fetch waits for its producer
	// task to register its queues (0: DefaultProducerWait).
	ProducerWait time.Duration
	// Compression is how the executor encodes the buffers of the shuffle
	// files it writes and of the Flight streams it serves ("": LZ4).
	// Readers accept either: Arrow IPC marks compression per message.
	Compression Compression
	// Peers are the other executors of this process, whose blocking
	// outputs readers take directly (nil: every other executor's output is
	// fetched over Flight).
	Peers *Peers
	// Secrets holds the secrets of the jobs this executor runs tasks of;
	// the Flight service refuses tickets without the job's (nil on
	// clients; nil on an executor serves every ticket, for tests of the
	// exchange alone).
	Secrets *JobSecrets
}

// Compression is the codec of shuffle files and Flight streams.
type Compression string

const (
	// CompressLZ4 compresses every buffer with LZ4 frames: less disk and
	// network for CPU on both ends; the choice between machines.
	CompressLZ4 Compression = "lz4"
	// CompressNone writes buffers as they are: on one machine (the
	// embedded cluster) the bytes never cross a network and the shuffle
	// files stay in the page cache, so compressing only costs CPU.
	CompressNone Compression = "none"
)

// ParseCompression reads a --exchange-compression value.
func ParseCompression(s string) (Compression, error) {
	switch c := Compression(strings.ToLower(strings.TrimSpace(s))); c {
	case CompressLZ4, CompressNone:
		return c, nil
	}
	return "", fmt.Errorf("unknown exchange compression %q (want lz4 or none)", s)
}

// ipcOptions are the IPC writer options for Compression c.
func (c Compression) ipcOptions() []ipc.Option {
	if c == CompressNone {
		return nil
	}
	return []ipc.Option{ipc.WithLZ4()}
}

// DefaultMaxFetchBytes is the fetch cap used when Env.MaxFetchBytes is 0.
const DefaultMaxFetchBytes = 64 << 20

// DefaultProducerWait is the wait used when Env.ProducerWait is 0. Tasks of
// a pipelined job launch together, so a consumer's fetch can arrive before
// its producer has started; ten seconds covers a slow launch without
// hanging forever on a producer that will never come.
const DefaultProducerWait = 10 * time.Second

func (e *Env) maxFetchBytes() int64 {
	if e.MaxFetchBytes > 0 {
		return e.MaxFetchBytes
	}
	return DefaultMaxFetchBytes
}

func (e *Env) producerWait() time.Duration {
	if e.ProducerWait > 0 {
		return e.ProducerWait
	}
	return DefaultProducerWait
}

// TaskEnv is the value of physical.TaskContext.Exchange on executors: the
// executor's Env and the identity of the task being run. A client reading
// a job's results passes one too, with JobID and JobSecret set.
type TaskEnv struct {
	*Env
	JobID   string
	StageID int
	TaskID  int
	Attempt int
	// JobSecret goes into every Flight ticket the task's readers send.
	JobSecret string
	// OutputKey is the key of the task's pipelined queues
	// (TaskDefinition.output_key): the Flight service hands a queue only
	// to a ticket carrying the capability it gives the queue's partition.
	OutputKey []byte
	// Capabilities are those of the pipelined queues the task's readers
	// (or the client's) are wired to; their tickets carry them.
	Capabilities Capabilities
	// LazyStart makes a pipelined writer start its input only once a
	// consumer has taken one of its queues (execution.lazy_producers),
	// instead of as soon as the task is launched.
	LazyStart bool
	// ClientIdleTimeout, when positive, is how long a pipelined writer
	// whose output the client reads waits on a full queue the client does
	// not read before it fails with ErrClientIdle.
	ClientIdleTimeout time.Duration
	// Multiplex makes the task's pipelined readers read every partition
	// they take from one producer task on another executor over one
	// Flight stream (exchange.multiplex; mux_client.go), instead of a
	// stream per partition.
	Multiplex bool
	// MuxCredit is the batches a multiplexed stream's server may send
	// of one partition ahead of its reader (exchange.queue_batches; 0:
	// DefaultMuxCredit).
	MuxCredit int

	// mux holds the task's multiplexed streams.
	mux muxStreams
}

// DefaultMuxCredit is the credit used when TaskEnv.MuxCredit is 0: the
// default of exchange.queue_batches.
const DefaultMuxCredit = 8

func (te *TaskEnv) muxCredit() int {
	if te.MuxCredit > 0 {
		return te.MuxCredit
	}
	return DefaultMuxCredit
}

// StageWriter is the root operator of a stage. The executor runs a task by
// calling RunTask once with the stage partitions the task owns.
type StageWriter interface {
	physical.Operator
	// RunTask drives the given input partitions to completion (concurrently)
	// and reports where their output went: shuffle files for blocking mode;
	// nothing for pipelined mode, whose queues are found in the registry.
	RunTask(ctx context.Context, partitions []int, tc *physical.TaskContext) ([]*rpc.PartitionLocation, error)
}

// errNoEnv is returned by exchange operators run without an executor or
// client environment in their TaskContext.
var errNoEnv = errors.New("exchange operator run without an exchange environment (TaskContext.Exchange is nil)")

// envOf returns the Env in tc.Exchange: an *Env (clients) or a *TaskEnv
// (executors).
func envOf(tc *physical.TaskContext) (*Env, error) {
	switch e := tc.Exchange.(type) {
	case *TaskEnv:
		if e != nil && e.Env != nil {
			return e.Env, nil
		}
	case *Env:
		if e != nil {
			return e, nil
		}
	case nil:
	default:
		return nil, fmt.Errorf("internal: TaskContext.Exchange holds %T, want *exchange.TaskEnv or *exchange.Env", tc.Exchange)
	}
	return nil, errNoEnv
}

// taskEnvOf returns the *TaskEnv stage writers need.
func taskEnvOf(tc *physical.TaskContext) (*TaskEnv, error) {
	te, ok := tc.Exchange.(*TaskEnv)
	if !ok || te == nil || te.Env == nil {
		return nil, fmt.Errorf("internal: a stage writer needs an *exchange.TaskEnv in TaskContext.Exchange, got %T", tc.Exchange)
	}
	return te, nil
}
